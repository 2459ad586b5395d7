import path from 'node:path';
import type { AdminApiConfig } from '../config/config.js';
import { DEFAULT_NAMESPACES_CLAIM } from '../config/settings.js';
import { CONSOLE_CALLBACK_PATH, CONSOLE_PREFIX } from '../console-server/paths.js';

// Dev mode's stand-in for Auth0: fixed, documented clients on 127.0.0.1 only (never a production
// setting: production processes refuse to start the admin API without AUTH_URL and AUTH_AUDIENCE).

export const DEV_AUDIENCE = 'https://webhook-fanout.local/api';
export const DEFAULT_PORT = 8081;
/** the console's client (a public one: a single-page app keeps no secret) */
export const DEV_CONSOLE_CLIENT_ID = 'webhook-fanout-console';

export const DEV_CLIENTS = [
  { clientId: 'webhook-fanout-dev', clientSecret: 'webhook-fanout-dev-secret', permissions: ['read:webhooks', 'replay:webhooks'] },
  { clientId: 'webhook-fanout-dev-readonly', clientSecret: 'webhook-fanout-dev-readonly-secret', permissions: ['read:webhooks'] },
];

/** The browser login's users (the console): printed at start, for this machine only. */
export const DEV_USER = { username: 'dev', password: 'dev-password', permissions: ['read:webhooks', 'replay:webhooks'] } as const;
export const DEV_READONLY_USER = { username: 'dev-readonly', password: 'dev-readonly-password', permissions: ['read:webhooks'] } as const;
/** The namespace of the manifests in examples/dev (the resources there all say `namespace: default`). */
export const EXAMPLES_NAMESPACE = 'default';
/** A tenant (docs/tenancy.md): its tokens carry the namespaces claim, so it sees and replays only the examples' namespace. */
export const DEV_TENANT_USER = {
  username: 'dev-tenant',
  password: 'dev-tenant-password',
  permissions: ['read:webhooks', 'replay:webhooks'],
  namespaces: [EXAMPLES_NAMESPACE],
} as const;

export interface DevIdentityProvider {
  /** what the admin API verifies against */
  config: AdminApiConfig;
  /** lines for the start banner: how to get a token and call the API, and how to log in to the console */
  recipe(apiUrl: string, opts?: { console: boolean }): string[];
  /** lets the console served at apiUrl (/console/callback) ask for the browser login */
  allowConsoleAt(apiUrl: string): void;
  close(): Promise<void>;
}

/**
 * Starts the local identity provider (oidc-provider is a devDependency: loaded only here, only
 * when dev mode has no AUTH_URL). Its signing key lives in dataDir, so tokens survive a restart.
 */
export async function startDevIdentityProvider(opts: {
  dataDir: string;
  /** DEV_AUTH_PORT; without it DEFAULT_PORT, or any free port when that one is taken */
  port?: number;
  audience?: string;
  /** WEBHOOK_FANOUT_DEV_USER / WEBHOOK_FANOUT_DEV_PASSWORD: the console user with both permissions */
  user?: { username?: string | undefined; password?: string | undefined };
  /** AUTH_NAMESPACES_CLAIM: the claim dev-tenant's namespaces go in, the one the admin API reads */
  namespacesClaim?: string;
}): Promise<DevIdentityProvider> {
  const { startIdentityProvider } = await import('./identity-provider.js');
  const audience = opts.audience ?? DEV_AUDIENCE;
  const admin = { ...DEV_USER, username: opts.user?.username ?? DEV_USER.username, password: opts.user?.password ?? DEV_USER.password };
  const users = [admin, DEV_READONLY_USER, DEV_TENANT_USER];
  const namespacesClaim = opts.namespacesClaim ?? DEFAULT_NAMESPACES_CLAIM;
  const start = (port: number) =>
    startIdentityProvider({
      audience,
      clients: DEV_CLIENTS,
      port,
      host: '127.0.0.1',
      keysFile: path.join(opts.dataDir, 'idp-keys.json'),
      users,
      namespacesClaim,
      // its callback is registered once ingest listens (allowConsoleAt)
      browserClients: [{ clientId: DEV_CONSOLE_CLIENT_ID, redirectUris: [] }],
    });
  const idp =
    opts.port !== undefined
      ? await start(opts.port)
      : await start(DEFAULT_PORT).catch((err: unknown) => {
          // a stable port keeps the issuer, and so tokens, valid across restarts; any port beats none
          if ((err as { code?: unknown }).code === 'EADDRINUSE') return start(0);
          throw err;
        });
  const [client] = DEV_CLIENTS;
  return {
    config: { authUrl: idp.url, audience, issuer: idp.issuer, clockToleranceSeconds: 30, jwksCacheTtlSeconds: 600, namespacesClaim },
    recipe: (apiUrl, shown = { console: false }) => [
      ...(shown.console
        ? [
            `  console           ${apiUrl}${CONSOLE_PREFIX}/  (browser login at the identity provider below)`,
            `    sign in as        ${admin.username} / ${admin.password}  (read:webhooks replay:webhooks; WEBHOOK_FANOUT_DEV_USER, WEBHOOK_FANOUT_DEV_PASSWORD)`,
            `    or, read-only     ${DEV_READONLY_USER.username} / ${DEV_READONLY_USER.password}  (read:webhooks)`,
            `    or, a tenant      ${DEV_TENANT_USER.username} / ${DEV_TENANT_USER.password}  (read:webhooks replay:webhooks, namespace ${DEV_TENANT_USER.namespaces.join(', ')} only)`,
          ]
        : []),
      `  admin API         ${apiUrl}/api/events  (JWT bearer; docs ${apiUrl}/api/docs, OpenAPI ${apiUrl}/api/openapi.json)`,
      `  identity provider ${idp.url}  (local oidc-provider; set AUTH_URL and AUTH_AUDIENCE to use a real one)`,
      '',
      '  get a token (client credentials; read-only client: webhook-fanout-dev-readonly / webhook-fanout-dev-readonly-secret):',
      `    TOKEN=$(curl -s ${idp.url}/oauth/token -H 'content-type: application/json' \\`,
      `      -d '{"client_id":"${client?.clientId}","client_secret":"${client?.clientSecret}","audience":"${audience}","grant_type":"client_credentials"}' \\`,
      `      | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')`,
      `    curl -H "Authorization: Bearer $TOKEN" ${apiUrl}/api/events`,
    ],
    allowConsoleAt(apiUrl) {
      // the same server under both names a browser on this machine may use
      const url = new URL(apiUrl);
      for (const host of new Set([url.hostname, 'localhost', '127.0.0.1'])) {
        idp.allowRedirectUri(DEV_CONSOLE_CLIENT_ID, `${url.protocol}//${host}:${url.port}${CONSOLE_CALLBACK_PATH}`);
      }
    },
    close: () => idp.close(),
  };
}
