import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msToTs } from '@temporalio/common/lib/time.js';
import { connectTemporalClient } from '../../src/temporal/connection.js';
import { connectTemporalNative } from '../../src/temporal/native-connection.js';
import type { TemporalTls } from '../../src/config/tls.js';
import { startIdentityProvider, type IdentityProvider } from '../../src/dev/identity-provider.js';
import { startTemporalServer, type TemporalServer } from '../../src/dev/temporal-server.js';
import { createTestPki, type TestPki } from '../support/certs.js';
import { basic, http } from '../support/http.js';
import {
  endpointSpec,
  readyz,
  SOURCE,
  startCli,
  startProcessWorld,
  stopCli,
  waitReady,
  type ProcessWorld,
  type RunningCli,
} from '../support/process-stack.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('temporal');

/**
 * Temporal Cloud's way in, against the real server (go.temporal.io/server v1.32.1,
 * scripts/tools/go-builds.sh): TLS on the frontend, and authorization with the server's own JWT
 * claim mapper and authorizer, its signing keys read from a JWKS this test serves on loopback. The
 * API key is a JWT the test signs, sent by the SDKs as `Authorization: Bearer <key>`; the consumer
 * and the worker connect with the project's connection builders, configured by
 * TEMPORAL_API_KEY(_FILE) as in production.
 */

/** An RSA signing key with its kid, and a signer of API keys (JWTs) for the given permissions. */
function signingKey() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomUUID();
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return {
    jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' },
    /** `issuedAgoMs`: signed as if then (an expired key: issued 2 h ago, valid for 1 h) */
    sign(permissions: string[], opts: { validForMs?: number; issuedAgoMs?: number } = {}): string {
      return createSigner({
        key: pem,
        algorithm: 'RS256',
        kid,
        sub: 'webhook-fanout',
        expiresIn: opts.validForMs ?? 3_600_000,
        clockTimestamp: Date.now() - (opts.issuedAgoMs ?? 0),
      })({ permissions });
    },
  };
}

const AUDIENCE = 'https://webhook-fanout.test/api';
const OPERATOR = { clientId: 'operator', clientSecret: 'operator-secret', permissions: ['read:webhooks', 'replay:webhooks'] };
const trusted = signingKey();
const stranger = signingKey();
let jwks: Server;
let pki: TestPki;
let server: TemporalServer;
/** TLS as Temporal Cloud has it: the server's CA (here the test's) and no client certificate */
let base: TemporalTls;

beforeAll(async () => {
  // the frontend's keys: only the trusted one
  jwks = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [trusted.jwk] })),
  );
  await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
  pki = createTestPki('temporal-api-key');
  const frontend = pki.issue('frontend', { dnsNames: ['temporal.test'], usage: 'server' });
  server = await startTemporalServer({
    tls: { certFile: frontend.cert, keyFile: frontend.key, clientCaFile: pki.caCert, requireClientAuth: false },
    authorization: { jwksUrl: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json` },
  });
  base = { caFile: pki.caCert, certFile: undefined, keyFile: undefined, serverName: 'temporal.test', apiKey: undefined };
  // registering a namespace takes the system's admin role
  const admin = await connectTemporalClient({
    address: server.address,
    tls: { ...base, apiKey: { value: trusted.sign(['temporal-system:admin']) } },
  });
  await admin.workflowService.registerNamespace({ namespace: 'default', workflowExecutionRetentionPeriod: msToTs('1 day') });
  await admin.close();
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await new Promise((r) => jwks?.close(r));
});

describe('connections to a Temporal with TLS and API key authorization', () => {
  it.each([
    {
      name: 'no API key',
      apiKey: () => undefined,
      named: /refuses calls without an API key: set TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE/,
    },
    {
      name: 'an expired API key',
      apiKey: () => ({ value: trusted.sign(['default:write'], { issuedAgoMs: 2 * 3_600_000 }) }),
      named: /the API key \(TEMPORAL_API_KEY\) expired at \d{4}-\d\d-\d\dT.*: set a current one/,
    },
    {
      name: 'an API key signed by a key the server does not trust',
      apiKey: () => ({ value: stranger.sign(['default:write']) }),
      named: /refuses the API key \(TEMPORAL_API_KEY\): it is not signed by a key the server trusts/,
    },
    {
      name: 'an API key without access to the namespace',
      apiKey: () => ({ value: trusted.sign(['elsewhere:write']) }),
      named: /refuses the API key \(TEMPORAL_API_KEY\).*does not grant access to namespace "default"/,
    },
  ])('are refused with $name, naming the setting (client and worker connections)', async ({ apiKey, named }) => {
    const t = { address: server.address, namespace: 'default', tls: { ...base, apiKey: apiKey() } };
    await expect(connectTemporalClient(t, { connectTimeout: 5_000 })).rejects.toThrow(named);
    await expect(connectTemporalNative(t)).rejects.toThrow(named);
  });

  it('succeed with a key the server trusts, sent as a Bearer token (both connections)', async () => {
    const t = { address: server.address, namespace: 'default', tls: { ...base, apiKey: { value: trusted.sign(['default:write']) } } };
    const c = await connectTemporalClient(t);
    expect((await c.workflowService.describeNamespace({ namespace: 'default' })).namespaceInfo?.name).toBe('default');
    await c.close();
    const n = await connectTemporalNative(t);
    await n.close();
  });
});

describe('ingest, consumer and worker processes with an API key', () => {
  let world: ProcessWorld;
  let receiver: Receiver;
  const running: RunningCli[] = [];
  let env: Record<string, string>;
  let keyFile: string;
  let idp: IdentityProvider | undefined;

  beforeAll(async () => {
    world = await startProcessWorld();
    // the first delivery is refused for good (400: FAILED), so that ingest's admin API replays it
    receiver = await startReceiver([{ status: 400 }, { status: 200 }]);
    await world.repos.endpoints.upsertByResourceUid('api-key-e1', endpointSpec('api-key-receiver', `${receiver.url}/hook`));
    keyFile = path.join(pki.dir, 'api-key');
    // a Secret's file, with the newline kubectl create secret --from-file keeps
    await writeFile(keyFile, `${trusted.sign(['default:write'])}\n`);
    // no TEMPORAL_TLS: the API key alone turns TLS on (an API key never travels in plaintext)
    env = {
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TLS_CA: pki.caCert,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
      TEMPORAL_TASK_QUEUE: 'api-key-test',
    };
  }, 120_000);

  afterAll(async () => {
    await Promise.all(running.map((p) => stopCli(p)));
    await receiver?.close();
    await idp?.close();
    await world?.close();
  });

  it('deliver an event end to end and replay it through the admin API: the worker with TEMPORAL_API_KEY, the consumer and ingest with TEMPORAL_API_KEY_FILE', async () => {
    idp = await startIdentityProvider({ audience: AUDIENCE, clients: [OPERATOR] });
    const procs = await Promise.all([
      startCli('worker', { ...world.env, ...env, TEMPORAL_API_KEY: trusted.sign(['default:write']) }),
      startCli('consumer', { ...world.env, ...env, TEMPORAL_API_KEY_FILE: keyFile }),
      // ingest starts workflows too: the admin API's replays
      startCli('ingest', {
        ...world.env,
        ...env,
        TEMPORAL_API_KEY_FILE: keyFile,
        ADMIN_API_ENABLED: 'true',
        CONSOLE_ENABLED: 'false',
        AUTH_URL: idp.url,
        AUTH_AUDIENCE: AUDIENCE,
      }),
    ]);
    running.push(...procs);
    await Promise.all(procs.map((p) => waitReady(p)));
    const res = await http(`http://127.0.0.1:${procs[2]!.port}/api/webhooks/${SOURCE.source}`, {
      method: 'POST',
      headers: { authorization: basic(SOURCE.username, SOURCE.password), 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'api-key-1', type: 'order.created' }),
    });
    expect(res.status).toBe(200);
    const { eventId } = res.json() as { eventId: string };
    await eventually(async () => (await world.repos.events.get(eventId))?.status === 'FAILED', 120_000);
    const token = await http(`${idp.url}/oauth/token`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_id: OPERATOR.clientId,
        client_secret: OPERATOR.clientSecret,
        audience: AUDIENCE,
        grant_type: 'client_credentials',
      }),
    });
    const replay = await http(`http://127.0.0.1:${procs[2]!.port}/api/events/${eventId}/replay`, {
      headers: { authorization: `Bearer ${(token.json() as { access_token: string }).access_token}` },
    });
    expect(replay.status, replay.text).toBe(202);
    await eventually(async () => (await world.repos.events.get(eventId))?.status === 'COMPLETED', 120_000);
    expect(receiver.requests.map((r) => [r.headers['x-webhook-event-id'], r.headers['x-webhook-attempt']])).toEqual([
      [eventId, '1'],
      [eventId, expect.any(String)],
    ]);
    // the key is a credential: never in a log line
    for (const p of procs) expect(p.output.join('')).not.toMatch(/eyJ[\w-]+\.eyJ/);
  }, 240_000);

  it.each([
    {
      name: 'an expired key',
      key: () => ({ TEMPORAL_API_KEY: trusted.sign(['default:write'], { issuedAgoMs: 2 * 3_600_000 }) }),
      says: 'expired at',
    },
    { name: 'no key', key: () => ({}), says: 'set TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE' },
  ])(
    'a worker and a consumer with $name wait, not ready, and log what is wrong',
    async ({ key, says }) => {
      // TEMPORAL_TLS=true: TLS with no key (the CA alone would turn it on too)
      const procs = await Promise.all(
        (['worker', 'consumer'] as const).map((c) =>
          startCli(c, { ...world.env, ...env, TEMPORAL_TLS: 'true', TEMPORAL_TASK_QUEUE: 'api-key-refused', ...key() }),
        ),
      );
      running.push(...procs);
      for (const p of procs) {
        const line = await eventually(
          async () =>
            p.output
              .join('')
              .split('\n')
              .find((l) => l.includes(says)),
          90_000,
        ).catch((err: unknown) => {
          throw new Error(`${p.name} did not log "${says}": ${p.output.join('').slice(-3000)}`, { cause: err });
        });
        expect(JSON.parse(line), p.name).toMatchObject({ level: 40, dependency: 'temporal', msg: 'temporal unreachable; retrying' });
        expect(await readyz(p)).toBe(503);
        expect(p.child.exitCode).toBeNull();
      }
      await Promise.all(procs.map((p) => stopCli(p)));
    },
    180_000,
  );
});
