import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { DEFAULT_NAMESPACES_CLAIM } from '../../../src/config/settings.js';
import type { AdminApiConfig } from '../../../src/config/config.js';
import { startIdentityProvider, type IdentityProvider } from '../../../src/dev/identity-provider.js';
import { createLogger, type Logger } from '../../../src/observability/logger.js';
import { startFanoutHarness, type FanoutHarness } from '../../fanout/support/harness.js';
import { http, type HttpResult } from '../../support/http.js';
import { startIngestHarness } from '../../support/ingest-harness.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { createDb, type Db } from '../../../src/db/knex.js';
import { ecKey, rsaKey, type SigningKey } from './tokens.js';

export const AUDIENCE = 'https://webhook-fanout.test/api';

export const CLIENTS = {
  admin: { clientId: 'admin-client', clientSecret: 'admin-secret', permissions: ['read:webhooks', 'replay:webhooks'] },
  reader: { clientId: 'reader-client', clientSecret: 'reader-secret', permissions: ['read:webhooks'] },
  nobody: { clientId: 'nobody-client', clientSecret: 'nobody-secret', permissions: [] },
  // tenants (docs/tenancy.md): their tokens carry the namespaces claim
  tenantA: {
    clientId: 'tenant-a-client',
    clientSecret: 'tenant-a-secret',
    permissions: ['read:webhooks', 'replay:webhooks'],
    namespaces: ['team-a'],
  },
  tenantB: {
    clientId: 'tenant-b-client',
    clientSecret: 'tenant-b-secret',
    permissions: ['read:webhooks', 'replay:webhooks'],
    namespaces: ['team-b'],
  },
  tenantOfNothing: {
    clientId: 'tenant-none-client',
    clientSecret: 'tenant-none-secret',
    permissions: ['read:webhooks', 'replay:webhooks'],
    namespaces: [],
  },
} as const;

export type ClientName = keyof typeof CLIENTS;

/** the browser login's users (the console) and the console's public client */
export const USERS = {
  operator: { username: 'operator', password: 'operator-password', permissions: ['read:webhooks', 'replay:webhooks'] },
  viewer: { username: 'viewer', password: 'viewer-password', permissions: ['read:webhooks'] },
} as const;
export const CONSOLE_CLIENT_ID = 'console-spa';

/**
 * The admin API as production runs it (the ingest process, built and started as cmd/ingest.ts
 * does, real socket), against a real identity provider over HTTP, a fresh Postgres database, and
 * a Temporal worker on a task queue of this file's own (replays run for real).
 */
export interface AdminHarness {
  url: string;
  idp: IdentityProvider;
  /** the key the identity provider signs with at start (the test holds it too, to forge claims) */
  idpKey: SigningKey;
  /** an EC key the identity provider publishes (it signs with the RSA one) */
  idpEcKey: SigningKey;
  fanout: FanoutHarness;
  auth: AdminApiConfig;
  app: FastifyInstance;
  /** the specification's client-credentials request: POST JSON to {AUTH_URL}/oauth/token */
  token(client?: ClientName): Promise<string>;
  get(pathAndQuery: string, token?: string): Promise<HttpResult>;
  post(pathAndQuery: string, token?: string, body?: unknown): Promise<HttpResult>;
  /** with `databaseProxy`: the admin API's way to Postgres, to cut as an outage does */
  databaseProxy: TcpProxy | undefined;
  /** a real receiver answering as scripted, closed by close() */
  receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver>;
  close(): Promise<void>;
}

export async function requestToken(authUrl: string, client: { clientId: string; clientSecret: string }, audience = AUDIENCE) {
  return http(`${authUrl}/oauth/token`, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: client.clientId, client_secret: client.clientSecret, audience, grant_type: 'client_credentials' }),
  });
}

export async function startAdminHarness(
  opts: {
    authOverrides?: Partial<AdminApiConfig>;
    logger?: Logger;
    /** the ingest process reaches Postgres through a TCP proxy the test can cut */
    databaseProxy?: boolean;
  } = {},
): Promise<AdminHarness> {
  const dir = await mkdtemp(path.join(tmpdir(), 'admin-api-'));
  const idpKey = rsaKey();
  const idpEcKey = ecKey();
  // the provider reads its keys from this file, so the test knows the private keys
  await writeFile(path.join(dir, 'keys.json'), JSON.stringify({ keys: [idpKey.jwk, idpEcKey.jwk] }));
  const idp = await startIdentityProvider({
    audience: AUDIENCE,
    clients: Object.values(CLIENTS),
    keysFile: path.join(dir, 'keys.json'),
    users: Object.values(USERS),
    browserClients: [{ clientId: CONSOLE_CLIENT_ID, redirectUris: [] }],
  });
  const fanout = await startFanoutHarness();
  const auth: AdminApiConfig = {
    authUrl: idp.url,
    audience: AUDIENCE,
    issuer: idp.issuer,
    clockToleranceSeconds: 30,
    jwksCacheTtlSeconds: 600,
    namespacesClaim: DEFAULT_NAMESPACES_CLAIM,
    ...opts.authOverrides,
  };
  let databaseProxy: TcpProxy | undefined;
  let proxiedDb: Db | undefined;
  if (opts.databaseProxy) {
    const u = new URL(fanout.database.url);
    databaseProxy = await startTcpProxy({ host: u.hostname, port: Number(u.port) });
    u.port = String(databaseProxy.port);
    proxiedDb = createDb({ url: u.toString(), poolMax: 4, logger: createLogger({ level: 'silent' }) });
  }
  const ingest = await startIngestHarness({
    db: proxiedDb ?? fanout.database.db,
    adminApi: { auth, temporal: { client: () => Promise.resolve(fanout.client), taskQueue: fanout.taskQueue } },
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
  const { url, app } = ingest;
  idp.allowRedirectUri(CONSOLE_CLIENT_ID, `${url}/console/callback`);
  const receivers: Receiver[] = [];
  const bearer = (token?: string): Record<string, string> => (token === undefined ? {} : { authorization: `Bearer ${token}` });

  return {
    url,
    idp,
    idpKey,
    idpEcKey,
    fanout,
    auth,
    app,
    databaseProxy,
    async token(client = 'admin') {
      const res = await requestToken(idp.url, CLIENTS[client]);
      if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${res.text}`);
      return (res.json() as { access_token: string }).access_token;
    },
    get: (p, token) => http(`${url}${p}`, { method: 'GET', headers: bearer(token) }),
    post: (p, token, body) =>
      http(`${url}${p}`, {
        method: 'POST',
        headers: { ...bearer(token), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    async receiver(...args) {
      const r = await startReceiver(...args);
      receivers.push(r);
      return r;
    },
    async close() {
      await Promise.all(receivers.map((r) => r.close()));
      await ingest.close();
      await proxiedDb?.destroy();
      await databaseProxy?.close();
      await idp.close();
      await fanout.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
