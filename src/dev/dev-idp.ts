import path from 'node:path';
import type { AdminApiConfig } from '../config/config.js';

// Dev mode's stand-in for Auth0: fixed, documented clients on 127.0.0.1 only (never a production
// setting: production processes refuse to start the admin API without AUTH_URL and AUTH_AUDIENCE).

export const DEV_AUDIENCE = 'https://webhook-fanout.local/api';
export const DEFAULT_PORT = 8081;
export const DEV_CLIENTS = [
  { clientId: 'webhook-fanout-dev', clientSecret: 'webhook-fanout-dev-secret', permissions: ['read:webhooks', 'replay:webhooks'] },
  { clientId: 'webhook-fanout-dev-readonly', clientSecret: 'webhook-fanout-dev-readonly-secret', permissions: ['read:webhooks'] },
];

export interface DevIdentityProvider {
  /** what the admin API verifies against */
  config: AdminApiConfig;
  /** lines for the start banner: how to get a token and call the API */
  recipe(apiUrl: string): string[];
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
}): Promise<DevIdentityProvider> {
  const { startIdentityProvider } = await import('./identity-provider.js');
  const audience = opts.audience ?? DEV_AUDIENCE;
  const start = (port: number) =>
    startIdentityProvider({ audience, clients: DEV_CLIENTS, port, host: '127.0.0.1', keysFile: path.join(opts.dataDir, 'idp-keys.json') });
  const idp =
    opts.port !== undefined
      ? await start(opts.port)
      : await start(DEFAULT_PORT).catch((err: unknown) => {
          // a stable port keeps the issuer, and so tokens, valid across restarts; any port beats none
          if ((err as { code?: unknown }).code === 'EADDRINUSE') return start(0);
          throw err;
        });
  const [admin] = DEV_CLIENTS;
  return {
    config: { authUrl: idp.url, audience, issuer: idp.issuer, clockToleranceSeconds: 30, jwksCacheTtlSeconds: 600 },
    recipe: (apiUrl) => [
      `  admin API         ${apiUrl}/api/events  (JWT bearer; docs ${apiUrl}/api/docs, OpenAPI ${apiUrl}/api/openapi.json)`,
      `  identity provider ${idp.url}  (local oidc-provider; set AUTH_URL and AUTH_AUDIENCE to use a real one)`,
      '',
      '  get a token (client credentials; read-only client: webhook-fanout-dev-readonly / webhook-fanout-dev-readonly-secret):',
      `    TOKEN=$(curl -s ${idp.url}/oauth/token -H 'content-type: application/json' \\`,
      `      -d '{"client_id":"${admin?.clientId}","client_secret":"${admin?.clientSecret}","audience":"${audience}","grant_type":"client_credentials"}' \\`,
      `      | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')`,
      `    curl -H "Authorization: Bearer $TOKEN" ${apiUrl}/api/events`,
    ],
    close: () => idp.close(),
  };
}
