import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyResolver } from '../../src/api/auth/key-resolver.js';
import { createTokenVerifier } from '../../src/api/auth/token-verifier.js';
import { DEV_CONSOLE_CLIENT_ID, DEV_READONLY_USER, startDevIdentityProvider } from '../../src/dev/dev-idp.js';
import { http } from '../support/http.js';

/** The request dev mode prints, executed as printed (its JSON body), then verified as the API does. */
async function tokenFromRecipe(lines: string[]): Promise<{ url: string; body: string }> {
  const urlLine = lines.find((l) => l.includes('/oauth/token')) ?? '';
  const bodyLine = lines.find((l) => l.includes('"grant_type":"client_credentials"')) ?? '';
  return {
    url: /(http:\/\/\S+\/oauth\/token)/.exec(urlLine)?.[1] ?? '',
    body: /-d '([^']+)'/.exec(bodyLine)?.[1] ?? '',
  };
}

describe('dev mode identity provider', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'dev-idp-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints a client-credentials curl that yields a token the admin API accepts; the key survives a restart', async () => {
    const idp = await startDevIdentityProvider({ dataDir: dir, port: 0 });
    const recipe = idp.recipe('http://127.0.0.1:8080');
    expect(recipe.join('\n')).toContain('curl');
    const { url, body } = await tokenFromRecipe(recipe);
    expect(url).toBe(`${idp.config.authUrl}/oauth/token`);

    const res = await http(url, { headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(200);
    const { access_token: token, expires_in: expiresIn } = res.json() as { access_token: string; expires_in: number };
    expect(expiresIn).toBe(86_400);
    const verify = createTokenVerifier({
      keys: createKeyResolver({ authUrl: idp.config.authUrl }),
      issuer: idp.config.issuer,
      audience: idp.config.audience,
    });
    const principal = await verify(token);
    expect([...principal.permissions].sort()).toEqual(['read:webhooks', 'replay:webhooks']);
    const kid = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString()) as { kid: string };
    await idp.close();

    // same data folder: the same signing key
    const again = await startDevIdentityProvider({ dataDir: dir, port: 0 });
    try {
      const next = await http(`${again.config.authUrl}/oauth/token`, { headers: { 'content-type': 'application/json' }, body });
      const header = JSON.parse(
        Buffer.from((next.json() as { access_token: string }).access_token.split('.')[0] ?? '', 'base64url').toString(),
      ) as {
        kid: string;
      };
      expect(header.kid).toBe(kid.kid);
    } finally {
      await again.close();
    }
  });

  it('prints the console and both users; the printed user signs in at /authorize for the console at that address', async () => {
    const idp = await startDevIdentityProvider({ dataDir: dir, port: 0, user: { username: 'alice', password: 'wonderland-42' } });
    try {
      const apiUrl = 'http://127.0.0.1:18080';
      const banner = idp.recipe(apiUrl, { console: true }).join('\n');
      expect(banner).toContain(`${apiUrl}/console/`);
      expect(banner).toContain('alice / wonderland-42');
      expect(banner).toContain(`${DEV_READONLY_USER.username} / ${DEV_READONLY_USER.password}`);
      expect(idp.recipe(apiUrl).join('\n')).not.toContain('/console/');

      const authorize = (redirectUri: string) =>
        `${idp.config.authUrl}/authorize?${new URLSearchParams({ response_type: 'token', client_id: DEV_CONSOLE_CLIENT_ID, redirect_uri: redirectUri, audience: idp.config.audience, scope: 'openid profile email', state: 'x' }).toString()}`;
      // not registered until the console's address is known
      expect((await http(authorize(`${apiUrl}/console/callback`), { method: 'GET' })).status).toBe(400);
      idp.allowConsoleAt(apiUrl);
      for (const host of ['127.0.0.1', 'localhost']) {
        const page = await http(authorize(`http://${host}:18080/console/callback`), { method: 'GET' });
        expect(page.status).toBe(200);
      }
      const page = await http(authorize(`${apiUrl}/console/callback`), { method: 'GET' });
      const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(page.text)?.[1] ?? '';
      const res = await http(`${idp.config.authUrl}/authorize`, {
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          cookie: String([page.headers['set-cookie']].flat()[0]).split(';')[0] ?? '',
        },
        body: new URLSearchParams({ tx: field('tx'), csrf: field('csrf'), username: 'alice', password: 'wonderland-42' }).toString(),
      });
      expect(res.status).toBe(303);
      const token = new URLSearchParams(new URL(String(res.headers.location)).hash.slice(1)).get('access_token') ?? '';
      const verify = createTokenVerifier({
        keys: createKeyResolver({ authUrl: idp.config.authUrl }),
        issuer: idp.config.issuer,
        audience: idp.config.audience,
      });
      const principal = await verify(token);
      expect(principal.subject).toBe('alice');
      expect([...principal.permissions].sort()).toEqual(['email', 'openid', 'profile', 'read:webhooks', 'replay:webhooks']);
    } finally {
      await idp.close();
    }
  });
});
