import type { ConsoleConfig } from '../config.js';
import { CALLBACK_PATH, safeReturnTo } from './return-to.js';
import { saveSession, type Session } from './session.js';

// The browser login of the specification: GET {authUrl}/authorize with response_type=token, the
// token coming back in the redirect's hash fragment; or, when configured, the authorization code
// flow with PKCE (S256), the code exchanged at {authUrl}/oauth/token. state is checked on return.

const PENDING_KEY = 'webhook-fanout.login';
export { CALLBACK_PATH };
const SCOPE = 'openid profile email';

interface PendingLogin {
  state: string;
  nonce: string;
  /** same-origin path (+ query) to open after login */
  returnTo: string;
  /** PKCE: kept in sessionStorage until the code is exchanged */
  codeVerifier?: string;
}

const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

const randomString = (bytes = 32): string => base64url(crypto.getRandomValues(new Uint8Array(bytes)));

async function s256(verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
}

export const callbackUrl = (): string => `${location.origin}${CALLBACK_PATH}`;

/** The URL of the identity provider's login for this console; remembers state, nonce and where to return. */
export async function authorizeUrl(config: ConsoleConfig, returnTo: string): Promise<string> {
  const pending: PendingLogin = { state: randomString(), nonce: randomString(), returnTo: safeReturnTo(returnTo) };
  const params = new URLSearchParams({
    response_type: config.flow === 'code' ? 'code' : 'token',
    client_id: config.clientId,
    redirect_uri: callbackUrl(),
    audience: config.audience,
    scope: SCOPE,
    state: pending.state,
    nonce: pending.nonce,
  });
  if (config.flow === 'code') {
    pending.codeVerifier = randomString(48);
    params.set('code_challenge', await s256(pending.codeVerifier));
    params.set('code_challenge_method', 'S256');
  }
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  return `${config.authUrl}/authorize?${params.toString()}`;
}

/**
 * The login this page started, if any. Several API calls refused together (each answers 401) all
 * ask for a login: a second authorizeUrl would replace the first's state after the browser had
 * left with the first, and the identity provider's answer would then not match (the callback page
 * stopped at "does not match the login this tab started"). So one login per page.
 */
let started: Promise<void> | undefined;

export function startLogin(config: ConsoleConfig, returnTo: string): Promise<void> {
  started ??= authorizeUrl(config, returnTo).then(
    (url) => location.assign(url),
    (err: unknown) => {
      started = undefined;
      throw err;
    },
  );
  return started;
}

// a page the back button restores from the back-forward cache keeps its modules: it may log in again
globalThis.addEventListener?.('pageshow', (e) => {
  if ((e as PageTransitionEvent).persisted) started = undefined;
});

export type CallbackResult = { ok: true; returnTo: string } | { ok: false; error: string };

function takePending(): PendingLogin | null {
  const raw = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  if (!raw) return null;
  try {
    return JSON.parse(raw) as PendingLogin;
  } catch {
    return null;
  }
}

/**
 * Reads what the identity provider sent back (fragment or query) and removes it from the address
 * bar and the history at once, before anything else runs: the token must not stay in a URL.
 */
export function takeCallbackParams(): URLSearchParams {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ''));
  const query = new URLSearchParams(location.search);
  history.replaceState(null, '', CALLBACK_PATH);
  // the implicit flow answers in the fragment, the code flow in the query; errors may be in either
  return fragment.has('access_token') || fragment.has('error') || fragment.has('state') ? fragment : query;
}

function sessionFrom(body: { access_token?: unknown; expires_in?: unknown }): Session | null {
  if (typeof body.access_token !== 'string' || body.access_token === '') return null;
  const expiresIn = Number(body.expires_in);
  // the specification's tokens live 86 400 s; without expires_in the token's own exp still rules the API
  const seconds = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : 86_400;
  return { accessToken: body.access_token, expiresAt: Date.now() + seconds * 1000 };
}

export async function completeLogin(config: ConsoleConfig, params: URLSearchParams): Promise<CallbackResult> {
  const pending = takePending();
  const error = params.get('error');
  if (error) return { ok: false, error: `${error}${params.get('error_description') ? `: ${params.get('error_description')}` : ''}` };
  if (!pending || params.get('state') !== pending.state)
    return { ok: false, error: 'the login answer does not match the login this tab started (state)' };

  let session: Session | null;
  if (config.flow === 'code') {
    const code = params.get('code');
    if (!code || !pending.codeVerifier) return { ok: false, error: 'the login answer carries no authorization code' };
    const res = await fetch(`${config.authUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: callbackUrl(),
        client_id: config.clientId,
        code_verifier: pending.codeVerifier,
      }),
    });
    if (!res.ok) return { ok: false, error: `the identity provider refused the code exchange (HTTP ${res.status})` };
    session = sessionFrom((await res.json()) as Record<string, unknown>);
  } else {
    session = sessionFrom({ access_token: params.get('access_token') ?? undefined, expires_in: params.get('expires_in') ?? undefined });
  }
  if (!session) return { ok: false, error: 'the login answer carries no access token' };
  saveSession(session);
  return { ok: true, returnTo: safeReturnTo(pending.returnTo) };
}
