/** What the service tells the console at /console/config.json (ingest builds it from its configuration). */
export interface ConsoleConfig {
  /** the identity provider's base address (AUTH_URL): /authorize and /oauth/token */
  authUrl: string;
  /** the API audience (AUTH_AUDIENCE) the token is asked for */
  audience: string;
  /** the console's client id at the identity provider (CONSOLE_CLIENT_ID) */
  clientId: string;
  /** implicit: the specification's response_type=token; code: authorization code with PKCE */
  flow: 'implicit' | 'code';
  /** where the admin API is; empty or absent: this origin */
  apiBase?: string;
}

import { BASE } from './base.js';

export { BASE };

function isConfig(v: unknown): v is ConsoleConfig {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as Record<string, unknown>;
  return (
    typeof c.authUrl === 'string' &&
    typeof c.audience === 'string' &&
    typeof c.clientId === 'string' &&
    (c.flow === 'implicit' || c.flow === 'code') &&
    (c.apiBase === undefined || typeof c.apiBase === 'string')
  );
}

export async function loadConfig(): Promise<ConsoleConfig> {
  const res = await fetch(`${BASE}/config.json`, { cache: 'no-store' });
  if (!res.ok) throw new Error(`the console's configuration could not be read (HTTP ${res.status})`);
  const body: unknown = await res.json();
  if (!isConfig(body)) throw new Error("the console's configuration is incomplete");
  return { ...body, authUrl: body.authUrl.replace(/\/+$/, '') };
}
