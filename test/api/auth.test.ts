import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE, CLIENTS, requestToken, startAdminHarness, type AdminHarness } from './support/admin-harness.js';
import { ecKey, nowSeconds, rsaKey, signHs256, signJwt, tamper, unsigned } from './support/tokens.js';

const CHALLENGE = 'Bearer realm="webhooks"';
const INVALID = /^Bearer realm="webhooks", error="invalid_token"/;

describe('admin API authentication against the identity provider', () => {
  let h: AdminHarness;
  const claims = (over: Record<string, unknown> = {}) => ({
    iss: h.idp.issuer,
    aud: AUDIENCE,
    sub: 'forged-client',
    iat: nowSeconds(),
    exp: nowSeconds() + 3600,
    permissions: ['read:webhooks', 'replay:webhooks'],
    ...over,
  });

  beforeAll(async () => {
    h = await startAdminHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  const expectInvalid = async (token: string) => {
    const res = await h.get('/api/events', token);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(INVALID);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 401, code: 'invalid_token' });
    return res;
  };

  describe('the token endpoint (client credentials, JSON body as the specification shows)', () => {
    it('answers access_token, token_type Bearer and expires_in 86400; the token is an RS256 JWT for the audience', async () => {
      const res = await requestToken(h.idp.url, CLIENTS.admin);
      expect(res.status).toBe(200);
      const body = res.json() as { access_token: string; token_type: string; expires_in: number };
      expect(body.token_type).toBe('Bearer');
      expect(body.expires_in).toBe(86_400);
      const [header, payload] = body.access_token
        .split('.')
        .slice(0, 2)
        .map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>);
      expect(header).toMatchObject({ alg: 'RS256', kid: h.idpKey.kid });
      expect(payload).toMatchObject({ iss: h.idp.issuer, aud: AUDIENCE, sub: CLIENTS.admin.clientId });
      expect(payload?.permissions).toEqual(['read:webhooks', 'replay:webhooks']);
      expect(Number(payload?.exp) - Number(payload?.iat)).toBe(86_400);
    });

    it('publishes the key set at /.well-known/jwks.json, public parts only', async () => {
      const res = await fetch(`${h.idp.url}/.well-known/jwks.json`);
      const jwks = (await res.json()) as { keys: Array<Record<string, unknown>> };
      expect(jwks.keys.map((k) => k.kid)).toContain(h.idpKey.kid);
      for (const k of jwks.keys) expect(k.d).toBeUndefined();
    });

    it('refuses a wrong client secret and an unknown audience', async () => {
      expect((await requestToken(h.idp.url, { ...CLIENTS.admin, clientSecret: 'nope' })).status).toBe(401);
      const other = await requestToken(h.idp.url, CLIENTS.admin, 'https://another.api/');
      expect(other.status).toBe(400);
      expect(other.json()).toMatchObject({ error: 'invalid_target' });
    });
  });

  describe('accepted', () => {
    it('a token from the identity provider reads every list', async () => {
      const token = await h.token('reader');
      for (const p of ['/api/events', '/api/deliveries', '/api/endpoints', '/api/inbound-credentials']) {
        const res = await h.get(p, token);
        expect(res.status, p).toBe(200);
        expect(res.json()).toEqual({ items: [], nextCursor: null });
      }
    });

    it('permissions from the scope claim alone, and from the permissions claim alone', async () => {
      const scopeOnly = signJwt(h.idpKey, claims({ permissions: undefined, scope: 'openid read:webhooks' }));
      expect((await h.get('/api/events', scopeOnly)).status).toBe(200);
      const permissionsOnly = signJwt(h.idpKey, claims({ permissions: ['read:webhooks'] }));
      expect((await h.get('/api/events', permissionsOnly)).status).toBe(200);
    });

    it('an exp a few seconds past, within the clock tolerance', async () => {
      expect((await h.get('/api/events', signJwt(h.idpKey, claims({ exp: nowSeconds() - 5 })))).status).toBe(200);
    });

    it('an ES256 token signed by a published EC key', async () => {
      expect((await h.get('/api/events', signJwt(h.idpEcKey, claims()))).status).toBe(200);
    });
  });

  describe('rejected: 401 without a token', () => {
    it('no Authorization header: the bare Bearer challenge', async () => {
      const res = await h.get('/api/events');
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe(CHALLENGE);
      expect(res.json()).toMatchObject({ status: 401, code: 'unauthorized' });
    });

    it('another scheme (Basic) is not a bearer token', async () => {
      const basic = await fetch(`${h.url}/api/events`, { headers: { authorization: 'Basic YWRtaW46YWRtaW4=' } });
      expect(basic.status).toBe(401);
      expect(basic.headers.get('www-authenticate')).toBe(CHALLENGE);
    });

    it('a token in the query string is ignored', async () => {
      const token = await h.token();
      const res = await h.get(`/api/events?access_token=${token}`);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe(CHALLENGE);
    });
  });

  describe('rejected: 401 invalid_token', () => {
    it('malformed tokens', async () => {
      await expectInvalid('not-a-jwt');
      await expectInvalid('a.b.c');
      await expectInvalid(`${Buffer.from('{"alg":"RS256"}').toString('base64url')}.e30`);
      const res = await fetch(`${h.url}/api/events`, { headers: { authorization: 'Bearer two tokens' } });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(INVALID);
    });

    it('alg none', async () => {
      await expectInvalid(unsigned(claims(), { kid: h.idpKey.kid }));
    });

    it('HS256 signed with the public key as the HMAC secret', async () => {
      const pem = createPublicKey(h.idpKey.privateKey).export({ type: 'spki', format: 'pem' }).toString();
      await expectInvalid(signHs256(pem, claims(), { kid: h.idpKey.kid }));
    });

    it('wrong issuer (signed with the real key)', async () => {
      await expectInvalid(signJwt(h.idpKey, claims({ iss: 'https://evil.example/' })));
      // the issuer must match exactly: the base address without the trailing slash is another issuer
      await expectInvalid(signJwt(h.idpKey, claims({ iss: h.idp.url })));
    });

    it('wrong audience (signed with the real key)', async () => {
      await expectInvalid(signJwt(h.idpKey, claims({ aud: 'https://another.api/' })));
    });

    it('expired: the description says so, so clients fetch a new token', async () => {
      const res = await expectInvalid(signJwt(h.idpKey, claims({ iat: nowSeconds() - 90_000, exp: nowSeconds() - 120 })));
      expect(res.headers['www-authenticate']).toContain('error_description="the access token expired"');
    });

    it('without exp', async () => {
      await expectInvalid(signJwt(h.idpKey, claims({ exp: undefined })));
    });

    it('not yet valid (nbf in the future)', async () => {
      await expectInvalid(signJwt(h.idpKey, claims({ nbf: nowSeconds() + 600 })));
    });

    it('unknown kid', async () => {
      await expectInvalid(signJwt(rsaKey(), claims()));
    });

    it('the right kid with another key', async () => {
      await expectInvalid(signJwt(rsaKey(h.idpKey.kid), claims()));
    });

    it('the right kid, ES256 claimed over an RSA key; real tokens of that kid keep working', async () => {
      for (let i = 0; i < 3; i++) await expectInvalid(signJwt(ecKey(h.idpKey.kid), claims()));
      expect((await h.get('/api/events', signJwt(h.idpKey, claims()))).status).toBe(200);
    });

    it('a tampered payload of a real token', async () => {
      const token = await h.token('reader');
      expect((await h.get('/api/events', token)).status).toBe(200);
      await expectInvalid(tamper(token, (c) => ({ ...c, permissions: ['read:webhooks', 'replay:webhooks'], sub: 'admin' })));
    });
  });

  describe('rejected: 403 insufficient_scope', () => {
    it('a valid token without replay:webhooks cannot replay', async () => {
      const token = await h.token('reader');
      for (const p of [
        '/api/deliveries/00000000-0000-4000-8000-000000000000/replay',
        '/api/events/00000000-0000-4000-8000-000000000000/replay',
      ]) {
        const res = await h.post(p, token);
        expect(res.status, p).toBe(403);
        expect(res.headers['www-authenticate']).toBe('Bearer realm="webhooks", error="insufficient_scope", scope="replay:webhooks"');
        expect(res.json()).toMatchObject({ status: 403, code: 'insufficient_scope' });
      }
      const bulk = await h.post('/api/deliveries/replay', token, { dryRun: true });
      expect(bulk.status).toBe(403);
    });

    it('a valid token without any permission cannot read', async () => {
      const token = await h.token('nobody');
      const res = await h.get('/api/deliveries', token);
      expect(res.status).toBe(403);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="webhooks", error="insufficient_scope", scope="read:webhooks"');
    });

    it('the permission is checked before the resource: an unknown id still answers 403, not 404', async () => {
      const res = await h.post('/api/deliveries/00000000-0000-4000-8000-000000000001/replay', await h.token('reader'));
      expect(res.status).toBe(403);
    });
  });

  it('a key rotation at the identity provider is picked up without a restart; tokens of the old key keep working', async () => {
    const before = await h.token();
    expect((await h.get('/api/events', before)).status).toBe(200);

    const newKid = h.idp.rotateKey();
    const after = await h.token();
    const header = JSON.parse(Buffer.from(after.split('.')[0] ?? '', 'base64url').toString()) as { kid: string };
    expect(header.kid).toBe(newKid);
    expect(newKid).not.toBe(h.idpKey.kid);

    expect((await h.get('/api/events', after)).status).toBe(200);
    expect((await h.get('/api/events', before)).status).toBe(200);
  });
});
