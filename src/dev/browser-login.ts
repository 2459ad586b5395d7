import { createHash, createPrivateKey, randomBytes, randomUUID, timingSafeEqual, type JsonWebKey as NodeJsonWebKey } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSigner } from 'fast-jwt';
import type { JsonWebKey } from 'oidc-provider';
import { readLimited } from './read-body.js';

/**
 * The browser login of the specification (`GET {AUTH_URL}/authorize`, response_type=token, the
 * access token in the redirect's fragment) and the authorization-code flow with PKCE, for dev
 * mode's identity provider: a login page, its form, and the code exchange at /oauth/token.
 *
 * Why not oidc-provider's own /authorization: it refuses a bare `response_type=token` outright
 * (oidc-provider 9.13, lib/helpers/configuration.js checkResponseTypes: "unsupported response
 * type: token"; only OpenID's `id_token token` is implicit there), its implicit access tokens are
 * opaque unless resource indicators are sent as `resource`, not Auth0's `audience`, and its login
 * is an interaction API with sessions and cookies of its own to drive. This module signs with the
 * provider's current key, so the tokens verify against the same /.well-known/jwks.json exactly
 * as the client-credentials tokens do, and carry the same claims (iss, aud, scope, permissions).
 */

export interface DevUser {
  username: string;
  password: string;
  /** API permissions the user's tokens carry */
  permissions: readonly string[];
  /** a tenant: its tokens carry these namespaces in the namespaces claim (docs/tenancy.md); absent: sees everything */
  namespaces?: readonly string[];
}

/** A public client (a single-page app): no secret, exact redirect URIs. */
export interface BrowserClient {
  clientId: string;
  redirectUris: readonly string[];
}

export interface BrowserLoginOptions {
  users: readonly DevUser[];
  clients: readonly BrowserClient[];
  audience: string;
  issuer: string;
  tokenTtlSeconds: number;
  /** the claim a tenant user's namespaces go in (AUTH_NAMESPACES_CLAIM) */
  namespacesClaim: string;
  /** the key tokens are signed with now (the provider's first key) */
  signingKey: () => JsonWebKey;
}

export interface BrowserLogin {
  /** answers the request when it is one of the browser login's; false: not ours */
  handle(req: IncomingMessage, res: ServerResponse, route: string): Promise<boolean>;
  /**
   * The code exchange, when `form` asks for grant_type=authorization_code; false: not ours (the
   * client-credentials grant stays oidc-provider's).
   */
  exchangeCode(req: IncomingMessage, res: ServerResponse, form: URLSearchParams): boolean;
  /** CORS headers for a call from the app's origin to /oauth/token (Auth0's "allowed web origins") */
  corsHeaders(req: IncomingMessage): Record<string, string>;
  /** registers a redirect URI of a client once its address is known (dev mode: after ingest listens) */
  allowRedirectUri(clientId: string, uri: string): void;
}

export const AUTHORIZE_PATH = '/authorize';
const LOGIN_TTL_MS = 10 * 60_000;
// RFC 6749 10.5: short-lived, used once
const CODE_TTL_MS = 60_000;
const MAX_PENDING = 1000;
const MAX_FORM_BODY = 8 * 1024;
const MAX_PASSWORD_TRIES = 5;
const CSRF_COOKIE = 'wf_login_csrf';
const OIDC_SCOPES = ['openid', 'profile', 'email'];
// RFC 7636 4.1
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

type Flow = 'token' | 'code';

interface AuthorizeRequest {
  flow: Flow;
  clientId: string;
  redirectUri: string;
  state: string | undefined;
  scope: string;
  codeChallenge: string | undefined;
}

interface PendingLogin {
  request: AuthorizeRequest;
  csrf: string;
  tries: number;
  expiresAt: number;
}

interface IssuedCode {
  request: AuthorizeRequest;
  user: DevUser;
  expiresAt: number;
}

const random = (bytes = 32): string => randomBytes(bytes).toString('base64url');

const sameText = (a: string, b: string): boolean => {
  // compared as digests: equal lengths for timingSafeEqual, and no early exit on a prefix
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
};

/** Text for HTML: every value the page shows came from a query string or a form. */
export function escapeHtml(v: string): string {
  return v.replace(/[&<>"'`=/]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A bounded map whose entries expire: a flood of abandoned logins can not grow it. */
class Expiring<T extends { expiresAt: number }> {
  private readonly rows = new Map<string, T>();
  set(key: string, value: T): void {
    const now = Date.now();
    for (const [k, v] of this.rows) if (v.expiresAt < now) this.rows.delete(k);
    while (this.rows.size >= MAX_PENDING) this.rows.delete(this.rows.keys().next().value as string);
    this.rows.set(key, value);
  }
  get(key: string): T | undefined {
    const row = this.rows.get(key);
    if (row && row.expiresAt < Date.now()) {
      this.rows.delete(key);
      return undefined;
    }
    return row;
  }
  take(key: string): T | undefined {
    const row = this.get(key);
    this.rows.delete(key);
    return row;
  }
}

function cookiesOf(req: IncomingMessage): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return out;
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  const body = await readLimited(req, MAX_FORM_BODY);
  return body && new URLSearchParams(body.toString('utf8'));
}

/** The query or form parameter, once: a repeated parameter is an error (RFC 6749 3.1). */
function single(params: URLSearchParams, name: string): string | undefined | null {
  const all = params.getAll(name);
  if (all.length > 1) return null;
  return all[0];
}

export function createBrowserLogin(opts: BrowserLoginOptions): BrowserLogin {
  const clients = new Map(opts.clients.map((c) => [c.clientId, new Set(c.redirectUris)]));
  const pending = new Expiring<PendingLogin>();
  const codes = new Expiring<IssuedCode>();

  function signToken(user: DevUser, request: AuthorizeRequest): { token: string; scope: string } {
    const key = opts.signingKey();
    const alg = key.kty === 'EC' ? 'ES256' : 'RS256';
    const pem = createPrivateKey({ key: key as NodeJsonWebKey, format: 'jwk' })
      .export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const asked = request.scope.split(' ');
    const scope = [...OIDC_SCOPES.filter((s) => asked.includes(s)), ...user.permissions].join(' ');
    const sign = createSigner({
      key: pem,
      algorithm: alg,
      kid: String(key.kid),
      header: { alg, typ: 'at+jwt' },
      iss: opts.issuer,
      aud: opts.audience,
      sub: user.username,
      jti: randomUUID(),
      expiresIn: opts.tokenTtlSeconds * 1000,
    });
    const tenant = user.namespaces === undefined ? {} : { [opts.namespacesClaim]: [...user.namespaces] };
    return { token: sign({ client_id: request.clientId, scope, permissions: [...user.permissions], ...tenant }), scope };
  }

  function originsOfClients(): Set<string> {
    const out = new Set<string>();
    for (const uris of clients.values()) for (const u of uris) out.add(new URL(u).origin);
    return out;
  }

  function securityHeaders(formTarget?: string): Record<string, string> {
    const formAction = formTarget ? `'self' ${new URL(formTarget).origin}` : "'self'";
    return {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // no script, no style, nothing framed; the form posts here and is redirected to the app
      'content-security-policy': `default-src 'none'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    };
  }

  function page(
    res: ServerResponse,
    status: number,
    title: string,
    body: string,
    formTarget?: string,
    extra: Record<string, string | string[]> = {},
  ): void {
    res.writeHead(status, { ...securityHeaders(formTarget), ...extra });
    res.end(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
        `<title>${escapeHtml(title)}</title></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`,
    );
  }

  function errorPage(res: ServerResponse, status: number, message: string): void {
    page(res, status, 'Sign-in error', `<p role="alert">${escapeHtml(message)}</p>`);
  }

  function loginPage(res: ServerResponse, txId: string, login: PendingLogin, error?: string, username = ''): void {
    const { request } = login;
    page(
      res,
      error ? 401 : 200,
      'Sign in to webhook-fanout',
      `<p>Local identity provider of dev mode. Application <code>${escapeHtml(request.clientId)}</code> asks to sign you in; ` +
        `you will be sent back to <code>${escapeHtml(request.redirectUri)}</code>.</p>` +
        (error ? `<p role="alert" id="login-error">${escapeHtml(error)}</p>` : '') +
        `<form method="post" action="${AUTHORIZE_PATH}">` +
        `<input type="hidden" name="tx" value="${escapeHtml(txId)}"><input type="hidden" name="csrf" value="${escapeHtml(login.csrf)}">` +
        `<p><label for="username">User name</label><br><input id="username" name="username" autocomplete="username" required value="${escapeHtml(username)}"></p>` +
        `<p><label for="password">Password</label><br><input id="password" name="password" type="password" autocomplete="current-password" required></p>` +
        `<p><button type="submit">Sign in</button></p></form>`,
      request.redirectUri,
      // SameSite=Strict: a form posted from another site carries no cookie, so it can not log a
      // browser in (login CSRF); the page's hidden field must match it as well
      { 'set-cookie': `${CSRF_COOKIE}=${login.csrf}; Path=${AUTHORIZE_PATH}; HttpOnly; SameSite=Strict; Max-Age=${LOGIN_TTL_MS / 1000}` },
    );
  }

  /** Back to the app with the result: in the fragment (implicit) or the query (code), as RFC 6749 4.1.2 / 4.2.2. */
  function redirectBack(
    res: ServerResponse,
    request: Pick<AuthorizeRequest, 'flow' | 'redirectUri' | 'state'>,
    params: Record<string, string>,
    status = 303,
  ): void {
    const out = new URLSearchParams(params);
    if (request.state !== undefined) out.set('state', request.state);
    const target = new URL(request.redirectUri);
    if (request.flow === 'token') target.hash = out.toString();
    else for (const [k, v] of out) target.searchParams.set(k, v);
    res.writeHead(status, { location: target.toString(), 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
    res.end();
  }

  function authorize(req: IncomingMessage, res: ServerResponse): void {
    const query = new URL(req.url ?? '/', 'http://idp').searchParams;
    const clientId = single(query, 'client_id');
    const redirectUri = single(query, 'redirect_uri');
    // until the client and its redirect URI are known good, errors are shown here, never sent
    // anywhere (RFC 6749 4.1.2.1: an open redirector otherwise)
    const allowed = clientId ? clients.get(clientId) : undefined;
    if (!clientId || !allowed) return errorPage(res, 400, 'Unknown application (client_id).');
    if (!redirectUri || !allowed.has(redirectUri)) return errorPage(res, 400, 'The redirect_uri is not registered for this application.');

    const responseType = single(query, 'response_type');
    const flow: Flow = responseType === 'code' ? 'code' : 'token';
    const state = single(query, 'state');
    const back = { flow, redirectUri, state: state ?? undefined };
    const fail = (error: string, description: string) => redirectBack(res, back, { error, error_description: description }, 302);
    if (state === null) return fail('invalid_request', 'state is given more than once');
    if (responseType !== 'token' && responseType !== 'code')
      return fail('unsupported_response_type', 'response_type must be token or code');
    const audience = single(query, 'audience');
    if (audience !== opts.audience) return fail('invalid_request', 'audience must be the API audience identifier');
    const scope = single(query, 'scope') ?? '';
    if (scope === null) return fail('invalid_request', 'scope is given more than once');
    let codeChallenge: string | undefined;
    if (flow === 'code') {
      const challenge = single(query, 'code_challenge');
      if (single(query, 'code_challenge_method') !== 'S256' || !challenge || !CHALLENGE.test(challenge)) {
        return fail('invalid_request', 'PKCE is required: code_challenge (S256 of the verifier) with code_challenge_method=S256');
      }
      codeChallenge = challenge;
    }
    const login: PendingLogin = {
      request: { flow, clientId, redirectUri, state: state ?? undefined, scope, codeChallenge },
      csrf: random(),
      tries: 0,
      expiresAt: Date.now() + LOGIN_TTL_MS,
    };
    const txId = random();
    pending.set(txId, login);
    loginPage(res, txId, login);
  }

  function findUser(username: string, password: string): DevUser | undefined {
    let found: DevUser | undefined;
    // every user compared, name and password, so the time says nothing of which part was wrong
    for (const u of opts.users) {
      const nameOk = sameText(u.username, username);
      const passOk = sameText(u.password, password);
      if (nameOk && passOk) found = u;
    }
    return found;
  }

  async function submitLogin(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? ''))
      return errorPage(res, 415, 'The login form must be posted as a form.');
    const form = await readForm(req);
    if (!form) return errorPage(res, 413, 'The login form is too large.');
    const txId = single(form, 'tx') ?? '';
    const login = txId ? pending.get(txId) : undefined;
    if (!login) return errorPage(res, 400, 'This sign-in has expired or was already used. Go back to the console and sign in again.');
    const cookie = cookiesOf(req).get(CSRF_COOKIE) ?? '';
    const field = single(form, 'csrf') ?? '';
    if (!sameText(cookie, login.csrf) || !sameText(field, login.csrf)) {
      pending.take(txId);
      return errorPage(res, 403, 'The sign-in form did not come from this page. Go back to the console and sign in again.');
    }
    const username = single(form, 'username') ?? '';
    const user = findUser(username.slice(0, 200), (single(form, 'password') ?? '').slice(0, 200));
    if (!user) {
      login.tries += 1;
      if (login.tries >= MAX_PASSWORD_TRIES) {
        pending.take(txId);
        return errorPage(res, 401, 'Too many wrong passwords. Go back to the console and sign in again.');
      }
      return loginPage(res, txId, login, 'Wrong user name or password.', username.slice(0, 200));
    }
    pending.take(txId);
    const { request } = login;
    if (request.flow === 'token') {
      const { token, scope } = signToken(user, request);
      return redirectBack(res, request, { access_token: token, token_type: 'Bearer', expires_in: String(opts.tokenTtlSeconds), scope });
    }
    const code = random();
    codes.set(code, { request, user, expiresAt: Date.now() + CODE_TTL_MS });
    return redirectBack(res, request, { code });
  }

  function tokenError(res: ServerResponse, req: IncomingMessage, status: number, error: string, description: string): void {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...corsHeaders(req) });
    res.end(JSON.stringify({ error, error_description: description }));
  }

  function corsHeaders(req: IncomingMessage): Record<string, string> {
    const origin = req.headers.origin;
    if (!origin || !originsOfClients().has(origin)) return {};
    return { 'access-control-allow-origin': origin, vary: 'Origin' };
  }

  return {
    async handle(req, res, route) {
      if (route === AUTHORIZE_PATH && (req.method === 'GET' || req.method === 'HEAD')) {
        authorize(req, res);
        return true;
      }
      if (route === AUTHORIZE_PATH && req.method === 'POST') {
        await submitLogin(req, res);
        return true;
      }
      if (route === AUTHORIZE_PATH) {
        res.writeHead(405, { allow: 'GET, HEAD, POST', 'content-type': 'text/plain' }).end('method not allowed');
        return true;
      }
      return false;
    },

    exchangeCode(req, res, form) {
      if (form.get('grant_type') !== 'authorization_code') return false;
      const code = single(form, 'code');
      const issued = code ? codes.take(code) : undefined;
      if (!issued) {
        tokenError(res, req, 400, 'invalid_grant', 'the code is unknown, expired or already used');
        return true;
      }
      const { request, user } = issued;
      if (single(form, 'client_id') !== request.clientId || single(form, 'redirect_uri') !== request.redirectUri) {
        tokenError(res, req, 400, 'invalid_grant', 'client_id and redirect_uri must be those of the authorization request');
        return true;
      }
      const verifier = single(form, 'code_verifier');
      const challenge = verifier && VERIFIER.test(verifier) ? createHash('sha256').update(verifier).digest('base64url') : '';
      if (!sameText(challenge, request.codeChallenge ?? '\0')) {
        tokenError(res, req, 400, 'invalid_grant', 'the code_verifier does not match the code_challenge');
        return true;
      }
      const { token, scope } = signToken(user, request);
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store', pragma: 'no-cache', ...corsHeaders(req) });
      res.end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: opts.tokenTtlSeconds, scope }));
      return true;
    },

    corsHeaders,

    allowRedirectUri(clientId, uri) {
      const set = clients.get(clientId) ?? new Set<string>();
      set.add(uri);
      clients.set(clientId, set);
    },
  };
}
