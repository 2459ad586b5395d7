import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE, CONSOLE_CLIENT_ID, startAdminHarness, USERS, type AdminHarness } from './support/admin-harness.js';

/** One answer, redirects not followed: what a browser would be told to do. */
interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

async function call(
  url: string,
  opts: { method?: 'GET' | 'POST' | 'OPTIONS'; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const res = await request(url, { method: opts.method ?? 'GET', headers: opts.headers, body: opts.body });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

const hidden = (html: string, name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';
const cookieOf = (a: Answer): string => String([a.headers['set-cookie']].flat()[0] ?? '').split(';')[0] ?? '';

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

describe('browser login of the dev identity provider (implicit and code + PKCE), over real HTTP', () => {
  let h: AdminHarness;
  let callback: string;

  beforeAll(async () => {
    h = await startAdminHarness();
    callback = `${h.url}/console/callback`;
  });
  afterAll(async () => {
    await h?.close();
  });

  const authorizeUrl = (params: Record<string, string>) => `${h.idp.url}/authorize?${new URLSearchParams(params).toString()}`;
  const implicitParams = (state: string) => ({
    response_type: 'token',
    client_id: CONSOLE_CLIENT_ID,
    redirect_uri: callback,
    audience: AUDIENCE,
    scope: 'openid profile email',
    state,
    nonce: randomUUID(),
  });

  /** The login page, then its form posted as the browser would (cookie and hidden fields). */
  async function login(params: Record<string, string>, user: { username: string; password: string }): Promise<Answer> {
    const pageAnswer = await call(authorizeUrl(params));
    expect(pageAnswer.status).toBe(200);
    const form = new URLSearchParams({
      tx: hidden(pageAnswer.text, 'tx'),
      csrf: hidden(pageAnswer.text, 'csrf'),
      username: user.username,
      password: user.password,
    });
    return call(`${h.idp.url}/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieOf(pageAnswer) },
      body: form.toString(),
    });
  }

  it('implicit: the token comes back in the fragment with the state, and the admin API accepts it', async () => {
    const state = randomBytes(16).toString('base64url');
    const page = await call(authorizeUrl(implicitParams(state)));
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.headers['content-security-policy']).toContain(`form-action 'self' ${new URL(h.url).origin}`);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.text).toContain('<form method="post" action="/authorize">');
    expect(page.text).not.toMatch(/<script|style=/i);

    const back = await login(implicitParams(state), USERS.operator);
    expect(back.status).toBe(303);
    const location = new URL(String(back.headers.location));
    expect(`${location.origin}${location.pathname}`).toBe(callback);
    expect(location.search).toBe('');
    const fragment = new URLSearchParams(location.hash.slice(1));
    expect(fragment.get('state')).toBe(state);
    expect(fragment.get('token_type')).toBe('Bearer');
    expect(fragment.get('expires_in')).toBe('86400');
    const token = fragment.get('access_token') ?? '';

    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    expect(claims.sub).toBe('operator');
    expect((claims.exp as number) - (claims.iat as number)).toBe(86_400);
    expect((await h.get('/api/events', token)).status).toBe(200);
    // replay permitted: an unknown delivery is a 404, not a 403
    expect((await h.post(`/api/deliveries/${randomUUID()}/replay`, token)).status).toBe(404);
  });

  it('the read-only user reads but gets 403 on replay', async () => {
    const back = await login(implicitParams('s1'), USERS.viewer);
    const token = new URLSearchParams(new URL(String(back.headers.location)).hash.slice(1)).get('access_token') ?? '';
    expect((await h.get('/api/events', token)).status).toBe(200);
    const replay = await h.post(`/api/deliveries/${randomUUID()}/replay`, token);
    expect(replay.status).toBe(403);
    expect(replay.headers['www-authenticate']).toContain('insufficient_scope');
  });

  it('code + PKCE: the code is exchanged once, with the verifier, the redirect URI and the client id of the request', async () => {
    const { verifier, challenge } = pkce();
    const params = {
      response_type: 'code',
      client_id: CONSOLE_CLIENT_ID,
      redirect_uri: callback,
      audience: AUDIENCE,
      scope: 'openid profile email',
      state: 'st-42',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
    const back = await login(params, USERS.operator);
    expect(back.status).toBe(303);
    const location = new URL(String(back.headers.location));
    expect(location.hash).toBe('');
    expect(location.searchParams.get('state')).toBe('st-42');
    const code = location.searchParams.get('code') ?? '';
    expect(code.length).toBeGreaterThan(20);

    const exchange = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      call(`${h.idp.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(h.url).origin, ...headers },
        body: new URLSearchParams(body).toString(),
      });
    const good = { grant_type: 'authorization_code', client_id: CONSOLE_CLIENT_ID, code, redirect_uri: callback, code_verifier: verifier };
    const ok = await exchange(good);
    expect(ok.status).toBe(200);
    // the console calls from its own origin: Auth0's "allowed web origins"
    expect(ok.headers['access-control-allow-origin']).toBe(new URL(h.url).origin);
    const answer = JSON.parse(ok.text) as { access_token: string; token_type: string; expires_in: number };
    expect(answer.token_type).toBe('Bearer');
    expect(answer.expires_in).toBe(86_400);
    expect((await h.get('/api/events', answer.access_token)).status).toBe(200);

    // used once
    const again = await exchange(good);
    expect(again.status).toBe(400);
    expect(JSON.parse(again.text)).toMatchObject({ error: 'invalid_grant' });

    // a wrong verifier, a wrong redirect_uri: refused, and the code is spent
    for (const wrong of [{ code_verifier: pkce().verifier }, { redirect_uri: `${h.url}/elsewhere` }, { client_id: 'other' }]) {
      const fresh = pkce();
      const loc = new URL(String((await login({ ...params, code_challenge: fresh.challenge }, USERS.operator)).headers.location));
      const body = { ...good, code: loc.searchParams.get('code') ?? '', code_verifier: fresh.verifier, ...wrong };
      const refused = await exchange(body);
      expect(refused.status, JSON.stringify(wrong)).toBe(400);
      expect(JSON.parse(refused.text)).toMatchObject({ error: 'invalid_grant' });
      expect((await exchange({ ...body, ...good, code: body.code, code_verifier: fresh.verifier })).status).toBe(400);
    }

    // JSON from another origin: the preflight is refused, and no CORS header is given
    const preflight = await call(`${h.idp.url}/oauth/token`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    const ownPreflight = await call(`${h.idp.url}/oauth/token`, {
      method: 'OPTIONS',
      headers: { origin: new URL(h.url).origin, 'access-control-request-method': 'POST' },
    });
    expect(ownPreflight.status).toBe(204);
  });

  it('code flow without S256 PKCE is refused back at the app, with the state', async () => {
    for (const extra of [{}, { code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' }] as Array<Record<string, string>>) {
      const res = await call(
        authorizeUrl({
          response_type: 'code',
          client_id: CONSOLE_CLIENT_ID,
          redirect_uri: callback,
          audience: AUDIENCE,
          scope: 'openid',
          state: 'st',
          ...extra,
        }),
      );
      expect(res.status).toBe(302);
      const location = new URL(String(res.headers.location));
      expect(location.searchParams.get('error')).toBe('invalid_request');
      expect(location.searchParams.get('state')).toBe('st');
    }
  });

  it('refuses an unregistered redirect URI or client on its own page, never redirecting there', async () => {
    for (const params of [
      { ...implicitParams('s'), redirect_uri: 'https://evil.example/console/callback' },
      { ...implicitParams('s'), redirect_uri: `${callback}/../../steal` },
      { ...implicitParams('s'), redirect_uri: `${callback}?x=1` },
      { ...implicitParams('s'), redirect_uri: `https://evil.example/"><script>alert(1)</script>` },
      { ...implicitParams('s'), client_id: '<img src=x onerror=alert(1)>' },
    ]) {
      const res = await call(authorizeUrl(params));
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).not.toContain('<script>');
      expect(res.text).not.toContain('<img');
    }
    // a wrong audience is the app's to show: back with the error
    const wrongAudience = await call(authorizeUrl({ ...implicitParams('s9'), audience: 'https://other/api' }));
    expect(wrongAudience.status).toBe(302);
    const fragment = new URLSearchParams(new URL(String(wrongAudience.headers.location)).hash.slice(1));
    expect(fragment.get('error')).toBe('invalid_request');
    expect(fragment.get('state')).toBe('s9');
  });

  it('a wrong password says so on the login page, echoes nothing but the name, as text', async () => {
    const name = '"><img src=x onerror=alert(1)>';
    const res = await login(implicitParams('s'), { username: name, password: 'not-the-password-123' });
    expect(res.status).toBe(401);
    expect(res.headers.location).toBeUndefined();
    expect(res.text).toContain('Wrong user name or password.');
    expect(res.text).not.toContain('not-the-password-123');
    expect(res.text).not.toContain('<img');
    expect(res.text).toContain('&#34;&#62;&#60;img src&#61;x onerror&#61;alert(1)&#62;');
    // the right user with a wrong password: the same words
    const wrong = await login(implicitParams('s'), { username: USERS.operator.username, password: 'nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Wrong user name or password.');
  });

  it('the login form is refused without its cookie or its token (login CSRF), and works once', async () => {
    const page = await call(authorizeUrl(implicitParams('s')));
    const tx = hidden(page.text, 'tx');
    const csrf = hidden(page.text, 'csrf');
    const post = (cookie: string, csrfField: string) =>
      call(`${h.idp.url}/authorize`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
        body: new URLSearchParams({ tx, csrf: csrfField, ...USERS.operator }).toString(),
      });
    // a cross-site form carries no SameSite=Strict cookie
    expect(String(page.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Strict/);
    const noCookie = await post('', csrf);
    expect(noCookie.status).toBe(403);
    expect(noCookie.headers.location).toBeUndefined();
    // the refusal ends that login: it can not be retried with the cookie
    expect((await post(cookieOf(page), csrf)).status).toBe(400);

    const page2 = await call(authorizeUrl(implicitParams('s')));
    const tx2 = hidden(page2.text, 'tx');
    const wrongField = await call(`${h.idp.url}/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieOf(page2) },
      body: new URLSearchParams({ tx: tx2, csrf: 'forged', ...USERS.operator }).toString(),
    });
    expect(wrongField.status).toBe(403);
  });

  it('client credentials still work beside it, as a form too', async () => {
    expect((await h.token('admin')).split('.')).toHaveLength(3);
    const form = await call(`${h.idp.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: 'reader-client',
        client_secret: 'reader-secret',
        audience: AUDIENCE,
      }).toString(),
    });
    expect(form.status).toBe(200);
    const token = (JSON.parse(form.text) as { access_token: string }).access_token;
    expect((await h.get('/api/events', token)).status).toBe(200);
  });
});
