import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Provider, { errors, type JsonWebKey, type ProviderToken } from 'oidc-provider';
import { DEFAULT_NAMESPACES_CLAIM } from '../config/settings.js';
import { PERMISSIONS } from '../api/auth/permissions.js';
import { readLimited } from './read-body.js';
import { createBrowserLogin, type BrowserClient, type BrowserLogin, type DevUser } from './browser-login.js';

/**
 * A local OpenID provider standing in for Auth0 in dev mode and tests (oidc-provider, over real
 * HTTP): the client-credentials grant at /oauth/token taking the specification's JSON body, JWT
 * access tokens (RS256) for one audience, the key set at /.well-known/jwks.json; with users and
 * browser clients, the browser login at /authorize (browser-login.ts), signed with the same keys.
 */

export interface DevClient {
  clientId: string;
  clientSecret: string;
  /** API permissions granted to this client (a subset of read:webhooks replay:webhooks) */
  permissions: readonly string[];
  /** a tenant's client: its tokens carry these namespaces in the namespaces claim (docs/tenancy.md) */
  namespaces?: readonly string[];
  /**
   * how it authenticates at the token endpoint (default client_secret_post, as Auth0's JSON body
   * does); private_key_jwt verifies its assertions with `jwks` (the public keys)
   */
  tokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';
  jwks?: { keys: JsonWebKey[] };
}

export interface IdentityProviderOptions {
  /** the API audience identifier; oidc-provider wants an absolute URI (e.g. https://webhook-fanout.local/api) */
  audience: string;
  clients: readonly DevClient[];
  /** 0 (default) = any free port */
  port?: number;
  host?: string;
  /** keep the signing key here so tokens survive a restart (dev mode); without it a key per start */
  keysFile?: string;
  tokenTtlSeconds?: number;
  /** who may sign in at /authorize (the browser login); none: no login page */
  users?: readonly DevUser[];
  /** the single-page apps that may ask for the browser login, with their redirect URIs */
  browserClients?: readonly BrowserClient[];
  /** the claim tenants' namespaces go in (AUTH_NAMESPACES_CLAIM); default https://webhookfanout.io/namespaces */
  namespacesClaim?: string;
}

export interface IdentityProvider {
  /** base address, i.e. AUTH_URL (no trailing slash) */
  url: string;
  /** the `iss` of its tokens: `${url}/`, as Auth0 does */
  issuer: string;
  audience: string;
  /** kid of the key tokens are signed with now */
  currentKid(): string;
  /**
   * Signs with a new key from now on; the previous key stays published so tokens already issued
   * keep verifying. No restart: the HTTP server keeps its port, the provider behind it is replaced.
   */
  rotateKey(): string;
  /** token requests answered so far (tests count them: a kept token costs none) */
  tokenRequests(): number;
  /**
   * Tests: the token requests of this client fail from now on: `unavailable` answers 503
   * temporarily_unavailable, `timeout` never answers, `invalid_client` answers 401 as for a wrong
   * secret; undefined answers normally again.
   */
  failTokenRequests(clientId: string, how: TokenFailureMode | undefined): void;
  /** registers a redirect URI of a browser client once its address is known */
  allowRedirectUri(clientId: string, uri: string): void;
  close(): Promise<void>;
}

/** How the token requests of a client are made to fail (tests). */
export type TokenFailureMode = 'unavailable' | 'timeout' | 'invalid_client';

const TOKEN_PATH = '/oauth/token';
const JWKS_PATH = '/.well-known/jwks.json';
// form bodies oidc-provider reads itself; the JSON adapter below refuses more than this too
const MAX_JSON_BODY = 16 * 1024;

function newSigningKey(): JsonWebKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

async function loadOrCreateKeys(keysFile: string | undefined): Promise<JsonWebKey[]> {
  if (keysFile) {
    try {
      const stored = JSON.parse(await readFile(keysFile, 'utf8')) as { keys?: JsonWebKey[] };
      if (Array.isArray(stored.keys) && stored.keys.length > 0) return stored.keys;
    } catch {
      // absent or unreadable: a new key below
    }
  }
  const keys = [newSigningKey()];
  if (keysFile) {
    await mkdir(path.dirname(keysFile), { recursive: true });
    await writeFile(keysFile, JSON.stringify({ keys }), { mode: 0o600 });
  }
  return keys;
}

/**
 * oidc-provider's storage, in memory: this provider keeps nothing worth persisting (client
 * credentials tokens are self-contained JWTs). Its own memory adapter works the same but warns
 * on every start that it is not for production, which is noise in a dev tool's banner.
 */
class MemoryStore {
  private static readonly rows = new Map<string, { payload: Record<string, unknown>; expiresAt: number }>();
  constructor(private readonly model: string) {}
  private key(id: string) {
    return `${this.model}:${id}`;
  }
  async upsert(id: string, payload: Record<string, unknown>, expiresIn: number): Promise<void> {
    MemoryStore.rows.set(this.key(id), { payload, expiresAt: Date.now() + expiresIn * 1000 });
    // expired rows are dropped as they are found stale, and a rough bound keeps the map small
    if (MemoryStore.rows.size > 10_000) MemoryStore.rows.delete(MemoryStore.rows.keys().next().value as string);
  }
  async find(id: string): Promise<Record<string, unknown> | undefined> {
    const row = MemoryStore.rows.get(this.key(id));
    if (row && row.expiresAt < Date.now()) MemoryStore.rows.delete(this.key(id));
    return row && row.expiresAt >= Date.now() ? row.payload : undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
  async findByUid(): Promise<undefined> {
    return undefined;
  }
  async consume(id: string): Promise<void> {
    const row = MemoryStore.rows.get(this.key(id));
    if (row) row.payload = { ...row.payload, consumed: Math.floor(Date.now() / 1000) };
  }
  async destroy(id: string): Promise<void> {
    MemoryStore.rows.delete(this.key(id));
  }
  async revokeByGrantId(): Promise<void> {}
}

function buildProvider(issuer: string, opts: IdentityProviderOptions, keys: JsonWebKey[]): Provider {
  const ttl = opts.tokenTtlSeconds ?? 86_400;
  const permissionsOf = new Map(opts.clients.map((c) => [c.clientId, c.permissions]));
  const namespacesOf = new Map(opts.clients.map((c) => [c.clientId, c.namespaces]));
  const namespacesClaim = opts.namespacesClaim ?? DEFAULT_NAMESPACES_CLAIM;
  const provider = new Provider(issuer, {
    adapter: MemoryStore,
    clients: opts.clients.map((c) => ({
      client_id: c.clientId,
      client_secret: c.clientSecret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: c.tokenEndpointAuthMethod ?? 'client_secret_post',
      ...(c.jwks ? { jwks: c.jwks } : {}),
    })),
    // the first key signs; the others are published for tokens signed before a rotation
    jwks: { keys },
    routes: { jwks: JWKS_PATH, token: TOKEN_PATH },
    scopes: [...PERMISSIONS],
    ttl: { ClientCredentials: ttl },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: false },
      revocation: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => opts.audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string, client: { clientId: string }) => {
          if (resource !== opts.audience) throw new errors.InvalidTarget(`unknown audience ${resource}`);
          return {
            // what this client may be granted for the API; the grant narrows the request to it
            scope: (permissionsOf.get(client.clientId) ?? []).join(' '),
            audience: opts.audience,
            accessTokenTTL: ttl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    // Auth0 style: the granted permissions as an array claim next to `scope`, and a tenant's
    // namespaces as the custom claim an Auth0 Action would add (docs/tenancy.md)
    extraTokenClaims: async (_ctx: unknown, token: ProviderToken) => {
      const namespaces = token.clientId === undefined ? undefined : namespacesOf.get(token.clientId);
      return {
        permissions: (token.scope ?? '').split(' ').filter((s) => s !== ''),
        ...(namespaces === undefined ? {} : { [namespacesClaim]: [...namespaces] }),
      };
    },
  });
  return provider;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * The token request as a form. The specification's is JSON ({client_id, client_secret, audience,
 * grant_type}); oidc-provider reads a form. Either becomes the equivalent form (audience ->
 * resource, and, without a scope, every API permission, which the grant narrows to the client's
 * own).
 */
async function readTokenRequest(
  req: IncomingMessage,
  res: ServerResponse,
  headers: Record<string, string>,
): Promise<URLSearchParams | undefined> {
  const raw = await readLimited(req, MAX_JSON_BODY);
  if (raw === undefined) {
    sendJson(res, 413, { error: 'invalid_request', error_description: 'the body is too large' }, headers);
    return undefined;
  }
  const form = new URLSearchParams();
  if (/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      body = undefined;
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      sendJson(res, 400, { error: 'invalid_request', error_description: 'the body must be a JSON object' }, headers);
      return undefined;
    }
    for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
      if (typeof value !== 'string') {
        sendJson(res, 400, { error: 'invalid_request', error_description: `${key} must be a string` }, headers);
        return undefined;
      }
      form.append(key, value);
    }
  } else {
    for (const [key, value] of new URLSearchParams(raw.toString('utf8'))) form.append(key, value);
  }
  return form;
}

/** The client a token request names: client_id in the form, the Basic user, or a client assertion's issuer. */
function clientIdOf(req: IncomingMessage, form: URLSearchParams): string | undefined {
  const inForm = form.get('client_id');
  if (inForm) return inForm;
  const basic = /^Basic\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (basic) return decodeURIComponent(Buffer.from(basic, 'base64').toString('utf8').split(':')[0] ?? '');
  const assertion = form.get('client_assertion')?.split('.')[1];
  if (!assertion) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(assertion, 'base64url').toString('utf8')) as { iss?: unknown };
    return typeof claims.iss === 'string' ? claims.iss : undefined;
  } catch {
    return undefined;
  }
}

/** Answers a token request as `how` says (tests); true when it did (or holds it, for a timeout). */
function failTokenRequest(res: ServerResponse, how: TokenFailureMode | undefined, headers: Record<string, string>): boolean {
  if (how === undefined) return false;
  if (how === 'unavailable') {
    sendJson(res, 503, { error: 'temporarily_unavailable', error_description: 'the token service is down for a test' }, headers);
  } else if (how === 'invalid_client') {
    sendJson(res, 401, { error: 'invalid_client', error_description: 'client authentication failed' }, headers);
  }
  // timeout: no answer; close() ends the connection
  return true;
}

/** A fresh request on the same socket for oidc-provider, carrying the form body. */
function forwardForm(req: IncomingMessage, given: URLSearchParams): IncomingMessage {
  const form = new URLSearchParams();
  for (const [key, value] of given) form.append(key === 'audience' ? 'resource' : key, value);
  if (!form.has('scope')) form.set('scope', PERMISSIONS.join(' '));
  const encoded = Buffer.from(form.toString());
  const forwarded = new IncomingMessage(req.socket);
  forwarded.method = req.method ?? 'POST';
  forwarded.url = req.url ?? TOKEN_PATH;
  forwarded.httpVersion = req.httpVersion;
  forwarded.headers = {
    ...req.headers,
    'content-type': 'application/x-www-form-urlencoded',
    'content-length': String(encoded.length),
  };
  delete forwarded.headers['transfer-encoding'];
  forwarded.push(encoded);
  forwarded.push(null);
  // whole, so that destroying it after the body was read does not destroy the shared socket
  forwarded.complete = true;
  return forwarded;
}

export async function startIdentityProvider(opts: IdentityProviderOptions): Promise<IdentityProvider> {
  let keys = await loadOrCreateKeys(opts.keysFile);
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let issuer = '';
  let browserLogin: BrowserLogin | undefined;
  let tokenRequests = 0;
  const failing = new Map<string, TokenFailureMode>();

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const route = (req.url ?? '').split('?')[0] ?? '';
    if (browserLogin && (await browserLogin.handle(req, res, route))) return;
    if (route === TOKEN_PATH && req.method === 'OPTIONS') {
      // the console's code exchange is a cross-origin call from the browser (JSON: preflighted)
      const cors = browserLogin?.corsHeaders(req) ?? {};
      res.writeHead(cors['access-control-allow-origin'] ? 204 : 403, {
        ...cors,
        'access-control-allow-methods': 'POST',
        'access-control-allow-headers': 'content-type',
        'access-control-max-age': '600',
      });
      res.end();
      return;
    }
    if (req.method === 'POST' && route === TOKEN_PATH) {
      tokenRequests++;
      const cors = browserLogin?.corsHeaders(req) ?? {};
      const form = await readTokenRequest(req, res, cors);
      if (!form || browserLogin?.exchangeCode(req, res, form)) return;
      const clientId = clientIdOf(req, form);
      if (failTokenRequest(res, clientId === undefined ? undefined : failing.get(clientId), cors)) return;
      handler?.(forwardForm(req, form), res);
      return;
    }
    handler?.(req, res);
  };
  const server = createServer((req, res) => {
    serve(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: 'server_error' });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host === undefined || opts.host === '0.0.0.0' ? '127.0.0.1' : opts.host;
  const url = `http://${host}:${port}`;
  issuer = `${url}/`;

  const install = () => {
    handler = buildProvider(issuer, opts, keys).callback();
  };
  install();
  if (opts.users?.length && opts.browserClients?.length) {
    browserLogin = createBrowserLogin({
      users: opts.users,
      clients: opts.browserClients,
      audience: opts.audience,
      issuer,
      tokenTtlSeconds: opts.tokenTtlSeconds ?? 86_400,
      namespacesClaim: opts.namespacesClaim ?? DEFAULT_NAMESPACES_CLAIM,
      // the key that signs now: a rotation applies to the browser login's tokens too
      signingKey: () => keys[0] as JsonWebKey,
    });
  }

  return {
    url,
    issuer,
    audience: opts.audience,
    currentKid: () => String(keys[0]?.kid),
    tokenRequests: () => tokenRequests,
    failTokenRequests(clientId, how) {
      if (how === undefined) failing.delete(clientId);
      else failing.set(clientId, how);
    },
    rotateKey() {
      const fresh = newSigningKey();
      // the new key signs; the previous one stays published for tokens already out there
      keys = [fresh, ...keys.slice(0, 1)];
      install();
      return String(fresh.kid);
    },
    allowRedirectUri(clientId, uri) {
      browserLogin?.allowRedirectUri(clientId, uri);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
