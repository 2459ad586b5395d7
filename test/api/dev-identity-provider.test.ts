import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyResolver } from '../../src/api/auth/key-resolver.js';
import { createTokenVerifier } from '../../src/api/auth/token-verifier.js';
import { startDevIdentityProvider } from '../../src/dev/dev-idp.js';
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
      const header = JSON.parse(Buffer.from((next.json() as { access_token: string }).access_token.split('.')[0] ?? '', 'base64url').toString()) as {
        kid: string;
      };
      expect(header.kid).toBe(kid.kid);
    } finally {
      await again.close();
    }
  });
});
