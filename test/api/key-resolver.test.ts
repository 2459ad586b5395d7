import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidToken } from '../../src/api/auth/invalid-token.js';
import { createKeyResolver } from '../../src/api/auth/key-resolver.js';
import { createTokenVerifier } from '../../src/api/auth/token-verifier.js';
import { isAppError } from '../../src/domain/errors.js';
import { refusedUrl } from '../support/receiver.js';
import { nowSeconds, rsaKey, signJwt, type SigningKey } from './support/tokens.js';
import { httpStatusOf } from '../../src/http/problem.js';
import { sleep } from '../support/wait.js';

/** A key set server that counts its fetches and whose keys the test changes at will. */
async function startJwksServer(): Promise<{ url: string; fetches: () => number; setKeys(k: SigningKey[]): void; close(): Promise<void> }> {
  let keys: SigningKey[] = [];
  let fetches = 0;
  const server: Server = createServer((req, res) => {
    if (req.url !== '/.well-known/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    fetches++;
    const publicKeys = keys.map((k) => {
      const { kty, n, e, crv, x, y } = k.jwk as Record<string, string>;
      return { kty, n, e, crv, x, y, kid: k.kid, alg: k.alg, use: 'sig' };
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: publicKeys }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    fetches: () => fetches,
    setKeys: (k) => (keys = k),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describe('key resolver: cached keys, rate-limited refetch on an unknown kid', () => {
  let jwks: Awaited<ReturnType<typeof startJwksServer>>;
  const key = rsaKey();

  beforeAll(async () => {
    jwks = await startJwksServer();
    jwks.setKeys([key]);
  });
  afterAll(async () => {
    await jwks?.close();
  });

  it('fetches a key once and serves it from the cache afterwards', async () => {
    const resolver = createKeyResolver({ authUrl: `${jwks.url}/` });
    const before = jwks.fetches();
    for (let i = 0; i < 5; i++) expect(await resolver.publicKey({ alg: 'RS256', kid: key.kid })).toContain('BEGIN PUBLIC KEY');
    expect(jwks.fetches() - before).toBe(1);
  });

  it('refuses unsupported algorithms and a missing kid without any fetch', async () => {
    const resolver = createKeyResolver({ authUrl: jwks.url });
    const before = jwks.fetches();
    for (const header of [
      { alg: 'HS256', kid: key.kid },
      { alg: 'none', kid: key.kid },
      { alg: 'RS512', kid: key.kid },
      { alg: 'RS256' },
    ]) {
      await expect(resolver.publicKey(header)).rejects.toBeInstanceOf(InvalidToken);
    }
    expect(jwks.fetches()).toBe(before);
  });

  it('random kids cost at most the burst of fetches, then one per refill interval; a rotated-in key is found after it', async () => {
    let now = 1_000_000;
    const resolver = createKeyResolver({ authUrl: jwks.url, refetchBurst: 3, refetchRefillMs: 10_000, now: () => now });
    const before = jwks.fetches();
    for (let i = 0; i < 20; i++) {
      await expect(resolver.publicKey({ alg: 'RS256', kid: `random-${i}` })).rejects.toBeInstanceOf(InvalidToken);
    }
    expect(jwks.fetches() - before).toBe(3);

    // the identity provider rotates: the new kid is looked up as soon as the budget refills
    const next = rsaKey();
    jwks.setKeys([next, key]);
    await expect(resolver.publicKey({ alg: 'RS256', kid: next.kid })).rejects.toBeInstanceOf(InvalidToken);
    now += 10_000;
    expect(await resolver.publicKey({ alg: 'RS256', kid: next.kid })).toContain('BEGIN PUBLIC KEY');
    expect(jwks.fetches() - before).toBe(4);
  });

  it('refreshing a known key after its cache time is not throttled by an exhausted budget', async () => {
    const resolver = createKeyResolver({ authUrl: jwks.url, cacheTtlMs: 200, refetchBurst: 1, refetchRefillMs: 3_600_000 });
    expect(await resolver.publicKey({ alg: 'RS256', kid: key.kid })).toContain('BEGIN PUBLIC KEY');
    // budget spent (the first fetch took the only token); made-up kids are refused without a fetch
    await expect(resolver.publicKey({ alg: 'RS256', kid: 'made-up' })).rejects.toBeInstanceOf(InvalidToken);
    await sleep(300);
    const before = jwks.fetches();
    expect(await resolver.publicKey({ alg: 'RS256', kid: key.kid })).toContain('BEGIN PUBLIC KEY');
    expect(jwks.fetches() - before).toBe(1);
  });

  it('made-up kids that spend the whole budget of a process just started make the real keys known, instead of locking them out', async () => {
    const resolver = createKeyResolver({ authUrl: jwks.url, refetchBurst: 2, refetchRefillMs: 3_600_000 });
    for (let i = 0; i < 5; i++) await expect(resolver.publicKey({ alg: 'RS256', kid: `forged-${i}` })).rejects.toBeInstanceOf(InvalidToken);
    // the budget is spent, yet the real key (never asked for yet) is known from those fetches
    const before = jwks.fetches();
    expect(await resolver.publicKey({ alg: 'RS256', kid: key.kid })).toContain('BEGIN PUBLIC KEY');
    expect(jwks.fetches() - before).toBe(0);
  });

  it('a kid the key set lacks is not looked up again for a while', async () => {
    let now = 5_000_000;
    const resolver = createKeyResolver({ authUrl: jwks.url, unknownKidBackoffMs: 30_000, now: () => now });
    const before = jwks.fetches();
    for (let i = 0; i < 5; i++) await expect(resolver.publicKey({ alg: 'RS256', kid: 'gone' })).rejects.toBeInstanceOf(InvalidToken);
    expect(jwks.fetches() - before).toBe(1);
    now += 30_001;
    await expect(resolver.publicKey({ alg: 'RS256', kid: 'gone' })).rejects.toBeInstanceOf(InvalidToken);
    expect(jwks.fetches() - before).toBe(2);
  });

  it('an unreachable identity provider is a transient error (503), not an invalid token', async () => {
    const resolver = createKeyResolver({ authUrl: new URL(await refusedUrl()).origin });
    const err = await resolver.publicKey({ alg: 'RS256', kid: key.kid }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(InvalidToken);
    expect(isAppError(err) && httpStatusOf(err)).toBe(503);

    // and through the verifier, too
    const verify = createTokenVerifier({ keys: resolver, issuer: 'https://idp/', audience: 'api' });
    const token = signJwt(key, { iss: 'https://idp/', aud: 'api', exp: nowSeconds() + 60 });
    const viaVerifier = await verify(token).catch((e: unknown) => e);
    expect(isAppError(viaVerifier) && httpStatusOf(viaVerifier)).toBe(503);
  });

  it('a key set that does not answer in time is a transient error too', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const resolver = createKeyResolver({ authUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, fetchTimeoutMs: 300 });
      const err = await resolver.publicKey({ alg: 'RS256', kid: key.kid }).catch((e: unknown) => e);
      expect(isAppError(err) && err.code).toBe('identity_provider_unavailable');
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});
