import { createHash } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { Agent, request, type Dispatcher, type ProxyAgent } from 'undici';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import {
  checkLiteralHost,
  checkResolvedHost,
  createGuardedLookup,
  isBlockedAddressError,
  type Resolve,
} from '../../delivery/guarded-lookup.js';
import type { OAuth2Client } from '../../domain/records.js';
import { failed, inSpan, SpanKind } from '../../observability/spans.js';
import { errorCodes, isAbortTimeout, messageOf, oneLine } from './classify.js';
import { createProxyAgent, proxyFailureOf, proxyFailureOfResponse, type ForwardProxy } from './forward-proxy.js';
import { USER_AGENT } from './http-headers.js';
import { oauth2SigningKey } from './oauth2-key.js';
import { readBodyPrefix } from './response-body.js';

/**
 * OAuth2 access tokens of the client credentials grant (RFC 6749 4.4), for the endpoints whose
 * auth is OAUTH2_CLIENT_CREDENTIALS (docs/endpoints.md). The protocol is oauth4webapi's (the
 * request, the three client authentications, the response's checks); this module keeps the
 * tokens and bounds the calls:
 *
 * - one token per endpoint material (token URL, client, secret or key, scopes, audience), shared
 *   by every delivery of this worker process, reused until shortly before it expires; a rotated
 *   Secret is another material, so the next attempt asks for a token with it, without a restart.
 *   Workers do not share tokens: each asks for its own.
 * - concurrent deliveries that find no valid token wait for one request (single flight).
 * - the token request connects under the same outbound address policy as deliveries (no cloud
 *   metadata), within the attempt's time, and reads at most TOKEN_RESPONSE_LIMIT bytes.
 */

/** A token response is a few hundred bytes to a few KiB (a JWT): more is refused, not read. */
export const TOKEN_RESPONSE_LIMIT = 64 * 1024;
/** A token is renewed this long before it expires, or a quarter of its lifetime if that is shorter. */
export const REFRESH_MARGIN_MS = 60_000;
/** Without expires_in the server did not say: kept this long (a 401 from the receiver renews it sooner). */
export const DEFAULT_LIFETIME_MS = 5 * 60_000;
/** Even a token said to live longer is renewed after a day. */
const MAX_LIFETIME_MS = 24 * 3600_000;
/** Materials kept at once; past it the least recently used is dropped. */
const TOKENS_KEPT = 1024;
/**
 * A material whose credentials the server refused is not asked again for this long: the deliveries
 * waiting on it do not hammer the server (some lock a client out after failed logins). A fixed
 * Secret is another material, asked at once.
 */
export const REFUSAL_KEPT_MS = 30_000;

/** How a token request failed, as a code of the error registry (domain/error-codes.ts) and one line of what the server said. */
export interface TokenFailure {
  code: 'oauth2_token_refused' | 'oauth2_token_unavailable' | 'address_blocked';
  detail: string;
  timedOut?: boolean;
  /**
   * the server said our client credentials are wrong (invalid_client, unauthorized_client, HTTP
   * 401): a person fixes the Secret; the delivery waits and the endpoint is not Ready meanwhile
   */
  credentialsRefused?: boolean;
  /** the forward proxy, not the token endpoint, failed: the delivery waits as for a proxied delivery (forward-proxy.ts) */
  proxy?: ProxyFailure;
}

type ProxyFailure = NonNullable<ReturnType<typeof proxyFailureOf>>;

/** A 407, or a 502/503 the proxy made itself, to an http:// token request it forwarded. */
class ProxyAnswer extends Error {
  constructor(readonly failure: ProxyFailure) {
    super(failure.error);
    this.name = 'ProxyAnswer';
  }
}

export type TokenResult = { ok: true; token: string; /** false: from the cache */ fetched: boolean } | { ok: false; failure: TokenFailure };

interface Kept {
  token: string;
  /** epoch ms after which the next delivery asks for a new one */
  renewAt: number;
  /** epoch ms of its expiry: a failed renewal falls back on it until then */
  expiresAt: number;
}

/** When a token obtained at `now` living `expiresInSeconds` is renewed, and when it expires. */
export function tokenTimes(now: number, expiresInSeconds: number | undefined): { renewAt: number; expiresAt: number } {
  const lifetime =
    expiresInSeconds === undefined || !Number.isFinite(expiresInSeconds) || expiresInSeconds <= 0
      ? DEFAULT_LIFETIME_MS
      : Math.min(expiresInSeconds * 1000, MAX_LIFETIME_MS);
  return { renewAt: now + lifetime - Math.min(REFRESH_MARGIN_MS, lifetime / 4), expiresAt: now + lifetime };
}

/**
 * A 4xx answer says the client or its request is wrong (invalid_client, unauthorized_client,
 * invalid_scope...): asking again can not help, as for a receiver's 4xx. 408 and 429 ask to come
 * back later, like a 5xx.
 */
export function isRefusal(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}

export interface OAuth2TokensOptions {
  addressPolicy: AddressPolicy;
  resolve?: Resolve;
  /** DELIVERY_PROXY_URL: token requests go through it as deliveries do, unless DELIVERY_NO_PROXY names the host */
  proxy?: ForwardProxy;
  now?: () => number;
}

export interface OAuth2Tokens {
  /** A token for the client, kept or asked for (within timeoutMs); never throws. */
  token(client: OAuth2Client, secret: string, timeoutMs: number): Promise<TokenResult>;
  /** The receiver refused this token (401): the next delivery asks for another. */
  invalidate(client: OAuth2Client, secret: string, token: string): void;
  close(): Promise<void>;
}

export function createOAuth2Tokens(opts: OAuth2TokensOptions): OAuth2Tokens {
  const now = opts.now ?? Date.now;
  const lookup = createGuardedLookup(opts.addressPolicy, opts.resolve);
  // its own pool: token endpoints are few, and their connections are not the receivers'
  const agent = new Agent({ keepAliveTimeout: 4_000, connect: { lookup } });
  const kept = new Map<string, Kept>();
  const asking = new Map<string, Promise<TokenResult>>();
  // materials whose credentials were refused: the failure, and until when it is answered without asking
  const refusedUntil = new Map<string, { failure: TokenFailure; until: number }>();
  // through the forward proxy: one ProxyAgent with the proxy's credentials as they are now
  let proxied: { agent: ProxyAgent; authorization: string | null } | undefined;
  const proxyDispatcher = (proxy: ForwardProxy): Dispatcher => {
    const authorization = proxy.authorization();
    if (proxied?.authorization !== authorization) {
      void proxied?.agent.close();
      proxied = {
        agent: createProxyAgent(proxy.url, { requestTls: undefined, authorization, connections: null, keepAliveTimeout: 4_000 }),
        authorization,
      };
    }
    return proxied.agent;
  };

  /** fetch() as oauth4webapi calls it, on undici with the guarded lookup, the deadline and the size bound. */
  const boundedFetch = async (url: string, init: oauth.CustomFetchOptions<'POST', URLSearchParams>): Promise<Response> => {
    const target = new URL(url);
    // an IP literal never goes through lookup
    const blocked = checkLiteralHost(opts.addressPolicy, target.hostname);
    if (blocked) throw blocked;
    const viaProxy = opts.proxy !== undefined && !opts.proxy.noProxy.bypasses(target.hostname);
    // the proxy resolves the name itself: the policy decides on its addresses before the proxy is asked
    const refused = viaProxy ? await checkResolvedHost(opts.addressPolicy, target.hostname, opts.resolve) : null;
    if (refused) throw refused;
    const res = await request(target, {
      dispatcher: viaProxy && opts.proxy ? proxyDispatcher(opts.proxy) : agent,
      method: init.method,
      headers: init.headers,
      body: init.body.toString(),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    const own = viaProxy && target.protocol === 'http:' ? proxyFailureOfResponse(res.statusCode, res.headers) : null;
    if (own) {
      res.body.destroy();
      throw new ProxyAnswer(own);
    }
    const read = await readBodyPrefix(res.body, TOKEN_RESPONSE_LIMIT);
    if (read.error !== undefined) throw read.error;
    if (read.truncated) throw new TokenResponseTooLarge();
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
    }
    const bodyless = res.statusCode === 204 || res.statusCode === 205 || res.statusCode === 304;
    return new Response(bodyless ? null : read.text, { status: res.statusCode, headers });
  };

  async function ask(client: OAuth2Client, secret: string, timeoutMs: number): Promise<Asked> {
    const target = new URL(client.tokenUrl);
    const attributes = {
      'server.address': target.hostname,
      'server.port': Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
      'url.scheme': target.protocol.replace(':', ''),
      'oauth2.client_id': client.clientId,
      'oauth2.client_authentication': client.clientAuthentication,
    };
    // a span of its own under the attempt's: the token request's time and failure, never the token
    return inSpan('OAuth2 token request', { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const result = await requestToken(client, secret, timeoutMs, boundedFetch);
      if (!result.ok) failed(span, `${result.failure.code}: ${result.failure.detail}`);
      return result;
    });
  }

  /** A token request for the material, shared by the deliveries that ask at once; refused credentials are answered from memory for a while. */
  function fetchOnce(key: string, client: OAuth2Client, secret: string, timeoutMs: number): Promise<TokenResult> {
    const refusal = refusedUntil.get(key);
    if (refusal && now() < refusal.until) return Promise.resolve({ ok: false, failure: refusal.failure });
    refusedUntil.delete(key);
    let pending = asking.get(key);
    if (!pending) {
      pending = ask(client, secret, timeoutMs)
        .then((result): TokenResult => {
          if (!result.ok) {
            if (result.failure.credentialsRefused) {
              refusedUntil.set(key, { failure: result.failure, until: now() + REFUSAL_KEPT_MS });
              if (refusedUntil.size > TOKENS_KEPT) refusedUntil.delete(refusedUntil.keys().next().value as string);
            }
            return result;
          }
          kept.delete(key);
          kept.set(key, { token: result.token, ...tokenTimes(now(), result.expiresIn) });
          if (kept.size > TOKENS_KEPT) kept.delete(kept.keys().next().value as string);
          return { ok: true, token: result.token, fetched: true };
        })
        .finally(() => asking.delete(key));
      asking.set(key, pending);
    }
    return pending;
  }

  return {
    async token(client, secret, timeoutMs) {
      const key = materialKey(client, secret);
      const have = kept.get(key);
      if (have && now() < have.renewAt) {
        // most recently used last: the first is the one dropped when over the bound
        kept.delete(key);
        kept.set(key, have);
        return { ok: true, token: have.token, fetched: false };
      }
      const result = await fetchOnce(key, client, secret, timeoutMs);
      // a renewal that failed while the kept token is still valid: it serves until it expires
      const still = kept.get(key);
      if (!result.ok && still && now() < still.expiresAt) return { ok: true, token: still.token, fetched: false };
      return result;
    },

    invalidate(client, secret, token) {
      const key = materialKey(client, secret);
      if (kept.get(key)?.token === token) kept.delete(key);
    },

    async close() {
      kept.clear();
      refusedUntil.clear();
      await Promise.all([agent.close(), proxied?.agent.close()]);
    },
  };
}

/** The cache key of a material: a digest, so that no secret is a map key. */
function materialKey(client: OAuth2Client, secret: string): string {
  return createHash('sha256')
    .update(
      JSON.stringify([client.tokenUrl, client.clientId, client.clientAuthentication, client.keyId, client.scopes, client.audience, secret]),
    )
    .digest('hex');
}

class TokenResponseTooLarge extends Error {
  constructor() {
    super(`the token response is over ${TOKEN_RESPONSE_LIMIT} bytes`);
    this.name = 'TokenResponseTooLarge';
  }
}

type Asked = { ok: true; token: string; expiresIn: number | undefined } | { ok: false; failure: TokenFailure };

/** One token request through oauth4webapi, its failure classified. */
async function requestToken(
  client: OAuth2Client,
  secret: string,
  timeoutMs: number,
  customFetch: (url: string, init: oauth.CustomFetchOptions<'POST', URLSearchParams>) => Promise<Response>,
): Promise<Asked> {
  // the issuer is the token URL: a PrivateKeyJwt assertion's audience is then the token endpoint,
  // which RFC 7523 names and the servers accept (oidc-provider, Okta, Entra ID, Keycloak)
  const as: oauth.AuthorizationServer = { issuer: client.tokenUrl, token_endpoint: client.tokenUrl };
  const c: oauth.Client = { client_id: client.clientId };
  const parameters = new URLSearchParams();
  if (client.scopes.length > 0) parameters.set('scope', client.scopes.join(' '));
  if (client.audience !== null) parameters.set('audience', client.audience);
  try {
    const clientAuth = await clientAuthOf(client, secret);
    const response = await oauth.clientCredentialsGrantRequest(as, c, clientAuth, parameters, {
      [oauth.customFetch]: customFetch,
      signal: AbortSignal.timeout(timeoutMs),
      headers: { 'user-agent': USER_AGENT },
      // http:// is the operator's choice, as for an endpoint's url (docs/endpoints.md says to prefer https)
      [oauth.allowInsecureRequests]: new URL(client.tokenUrl).protocol === 'http:',
    });
    const answer = await oauth.processClientCredentialsResponse(as, c, response);
    if (answer.token_type !== 'bearer') {
      return refused(`the token endpoint issued a ${JSON.stringify(answer.token_type.slice(0, 32))} token; only Bearer tokens are sent`);
    }
    return { ok: true, token: answer.access_token, expiresIn: answer.expires_in };
  } catch (err) {
    return { ok: false, failure: redacted(await classifyTokenError(err, timeoutMs), secret, client.clientId) };
  }
}

async function clientAuthOf(client: OAuth2Client, secret: string): Promise<oauth.ClientAuth> {
  switch (client.clientAuthentication) {
    case 'ClientSecretBasic':
      return oauth.ClientSecretBasic(secret);
    case 'ClientSecretPost':
      return oauth.ClientSecretPost(secret);
    case 'PrivateKeyJwt': {
      const key = await oauth2SigningKey(secret);
      return oauth.PrivateKeyJwt(client.keyId === null ? key : { key, kid: client.keyId });
    }
  }
}

const refused = (detail: string): Asked => ({ ok: false, failure: { code: 'oauth2_token_refused', detail } });

/** The errors that say our client credentials are wrong (RFC 6749 5.2), not the request. */
const CREDENTIAL_ERRORS = new Set(['invalid_client', 'unauthorized_client']);

/** Whether a token endpoint's answer says our client credentials are wrong (a person fixes the Secret). Pure. */
export function isCredentialsRefusal(status: number, error: unknown): boolean {
  return isRefusal(status) && (status === 401 || (typeof error === 'string' && CREDENTIAL_ERRORS.has(error)));
}

/** The server's error and its description, as it wrote them (RFC 6749 5.2), bounded. */
function oauthError(status: number, error: unknown, description: unknown): TokenFailure {
  const words = [typeof error === 'string' ? error : undefined, typeof description === 'string' ? `(${description})` : undefined]
    .filter((w) => w !== undefined)
    .join(' ');
  return {
    code: isRefusal(status) ? 'oauth2_token_refused' : 'oauth2_token_unavailable',
    ...(isCredentialsRefusal(status, error) ? { credentialsRefused: true } : {}),
    // the server's text, in one bounded line
    detail: `the token endpoint answered HTTP ${status}${words ? ` ${oneLine(words)}` : ''}`,
  };
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

export async function classifyTokenError(err: unknown, timeoutMs: number): Promise<TokenFailure> {
  // the forward proxy failed (down, credentials refused, its own 502/503): the installation's failure
  const proxy = causeOf(err, (e): e is ProxyAnswer => e instanceof ProxyAnswer)?.failure ?? proxyFailureOf(err);
  if (proxy) return { code: 'oauth2_token_unavailable', detail: `token request: ${proxy.error}`, proxy };
  const blocked = causeOf(err, isBlockedAddressError);
  if (blocked) return { code: 'address_blocked', detail: `token endpoint: ${blocked.message}` };
  if (err instanceof oauth.ResponseBodyError) return oauthError(err.status, err.error, err.error_description);
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    // the error is in the challenge's parameters, or in the body beside it
    const params = err.cause[0]?.parameters ?? {};
    const body = (await err.response.json().catch(() => ({}))) as Record<string, unknown>;
    return oauthError(err.status, params.error ?? body.error, params.error_description ?? body.error_description);
  }
  const codes = errorCodes(err);
  if (isAbortTimeout(err) || codes.some((c) => TIMEOUT_CODES.has(c))) {
    return { code: 'oauth2_token_unavailable', detail: `the token endpoint did not answer within ${timeoutMs} ms`, timedOut: true };
  }
  const tooLarge = causeOf(err, (e): e is TokenResponseTooLarge => e instanceof TokenResponseTooLarge);
  if (tooLarge) return { code: 'oauth2_token_unavailable', detail: tooLarge.message };
  if (err instanceof oauth.OperationProcessingError) {
    if (err.code === oauth.RESPONSE_IS_NOT_CONFORM && err.cause instanceof Response) {
      // oauth4webapi reads the error body of a 4xx only: a 5xx may say why too
      const body = (await err.cause.json().catch(() => ({}))) as Record<string, unknown>;
      return oauthError(err.cause.status, body.error, body.error_description);
    }
    // a 200 without a usable token: the server's fault, perhaps passing
    return { code: 'oauth2_token_unavailable', detail: `the token endpoint's answer is not a token response: ${oneLine(err.message)}` };
  }
  if (codes.includes('ECONNREFUSED')) return { code: 'oauth2_token_unavailable', detail: 'the token endpoint refused the connection' };
  if (err instanceof TypeError && codes.some((c) => c.startsWith('ERR_INVALID_ARG'))) {
    // oauth4webapi's checks of what it was given: the configuration, not the server
    return { code: 'oauth2_token_refused', detail: `the OAuth2 settings can not be used: ${oneLine(err.message)}` };
  }
  return { code: 'oauth2_token_unavailable', detail: `token request failed (${codes[0] ?? 'error'}): ${messageOf(err)}` };
}

/**
 * The secret never leaves in a message, whatever a server echoes back: in each form it was sent in
 * (ClientSecretPost's form-encoded body; ClientSecretBasic's base64 of the form-encoded
 * `id:secret`, RFC 6749 2.3.1) or a server may echo it in (percent-encoded, JSON-escaped, the
 * base64 of the unencoded pair). The longest forms first, so that one inside another goes whole.
 */
export function redacted(failure: TokenFailure, secret: string, clientId: string): TokenFailure {
  let detail = failure.detail;
  for (const form of secretForms(secret, clientId)) if (detail.includes(form)) detail = detail.split(form).join('***');
  return detail === failure.detail ? failure : { ...failure, detail };
}

function secretForms(secret: string, clientId: string): string[] {
  const formEncoded = (s: string): string => new URLSearchParams({ s }).toString().slice(2);
  const forms = new Set([secret, encodeURIComponent(secret), formEncoded(secret), JSON.stringify(secret).slice(1, -1)]);
  for (const pair of [`${formEncoded(clientId)}:${formEncoded(secret)}`, `${clientId}:${secret}`]) {
    const base64 = Buffer.from(pair, 'utf8').toString('base64');
    forms.add(base64);
    forms.add(base64.replace(/=+$/, ''));
    forms.add(Buffer.from(pair, 'utf8').toString('base64url'));
  }
  // a form shorter than 4 characters would redact ordinary words
  return [...forms].filter((f) => f.length >= 4).sort((a, b) => b.length - a.length);
}

/** The error or the first of its causes that is one of these (a fetch error may come wrapped). */
function causeOf<E extends Error>(err: unknown, is: (e: unknown) => e is E): E | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) if (is(e)) return e;
  return undefined;
}
