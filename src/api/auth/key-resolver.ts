import { createPublicKey, type JsonWebKey } from 'node:crypto';
import buildGetJwks from 'get-jwks';
import { VARIABLES } from '../../config/settings.js';
import { transient } from '../../domain/errors.js';
import { InvalidToken } from './invalid-token.js';

export interface KeyResolverOptions {
  /** AUTH_URL: the key set is `${authUrl}/.well-known/jwks.json` */
  authUrl: string;
  /** how long a fetched key is trusted before it is fetched again (default AUTH_JWKS_CACHE_TTL_SECONDS's, 10 min) */
  cacheTtlMs?: number;
  /** key-set fetches for kids not in the cache: this many at once, refilled one per refillMs */
  refetchBurst?: number;
  refetchRefillMs?: number;
  /** a kid the key set did not have is not looked up again for this long (default 30 s) */
  unknownKidBackoffMs?: number;
  /** a key-set fetch slower than this counts as the identity provider being unavailable */
  fetchTimeoutMs?: number;
  now?: () => number;
}

export interface KeyResolver {
  /** the PEM public key for a token header's (alg, kid); InvalidToken or a transient AppError */
  publicKey(header: { alg?: unknown; kid?: unknown }): Promise<string>;
}

/** Only asymmetric algorithms: HS* with the public key as secret, or none, are classic forgeries. */
export const ALLOWED_ALGORITHMS = ['RS256', 'ES256'] as const;
type Algorithm = (typeof ALLOWED_ALGORITHMS)[number];
const isAllowedAlgorithm = (alg: unknown): alg is Algorithm => (ALLOWED_ALGORITHMS as readonly unknown[]).includes(alg);

/**
 * Public keys from the identity provider's key set, cached by (alg, kid) by get-jwks. A token with
 * a kid not in the cache triggers a fetch (how a key rotation is picked up without a restart), but
 * rate-limited: random kids must not turn every request into a request to the identity provider.
 */
export function createKeyResolver(opts: KeyResolverOptions): KeyResolver {
  const now = opts.now ?? Date.now;
  const domain = `${opts.authUrl.replace(/\/+$/, '')}/`;
  const jwks = buildGetJwks({
    ttl: opts.cacheTtlMs ?? VARIABLES.AUTH_JWKS_CACHE_TTL_SECONDS.default * 1000,
    max: 100,
    jwksPath: '.well-known/jwks.json',
  });
  const burst = opts.refetchBurst ?? 10;
  const refillMs = opts.refetchRefillMs ?? 6_000;
  const backoffMs = opts.unknownKidBackoffMs ?? 30_000;
  const timeoutMs = opts.fetchTimeoutMs ?? 5_000;

  let tokens = burst;
  let refilledAt = now();
  const takeFetchToken = (): boolean => {
    const t = now();
    const refill = Math.floor((t - refilledAt) / refillMs);
    if (refill > 0) {
      tokens = Math.min(burst, tokens + refill);
      refilledAt += refill * refillMs;
    }
    if (tokens === 0) return false;
    tokens--;
    return true;
  };
  // (alg, kid) the key set did not contain -> until when they are not looked up again
  const missing = new Map<string, number>();
  // (alg, kid) the key set did contain
  const resolved = new Map<string, true>();
  const jwksUrl = `${domain}.well-known/jwks.json`;
  /**
   * A lookup of an unknown kid fetches the whole key set and makes every key in it known (cached,
   * and never throttled again), not only the one asked for. Made-up kids spend the fetch budget,
   * and on a process just started no real key is known yet: were only the asked kid kept, such a
   * flood would answer every real token 401 until it stopped (issue 45's kind of lockout); now the
   * flood's own fetches make the real keys known.
   */
  const learnKeySet = async (): Promise<void> => {
    const res = await fetch(jwksUrl, { signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.json()) as { keys?: unknown };
    if (!res.ok) throw new Error(`the key set answered ${res.status}`);
    for (const k of Array.isArray(body.keys) ? (body.keys as unknown[]) : []) {
      if (typeof k !== 'object' || k === null) continue;
      const jwk = k as buildGetJwks.JWK & { alg?: unknown; kid?: unknown };
      if (typeof jwk.kid !== 'string' || jwk.kid === '' || jwk.kid.length > 200) continue;
      for (const a of ALLOWED_ALGORITHMS) {
        if (jwk.alg !== undefined && jwk.alg !== a) continue;
        const key = jwks.generateCacheKey(a, jwk.kid, domain);
        // get-jwks keeps promises there and awaits whatever it finds; a key found now is a value
        jwks.cache.set(key, jwk);
        missing.delete(key);
        remember(resolved, key, true);
      }
    }
  };

  return {
    async publicKey(header) {
      const { alg, kid } = header;
      if (!isAllowedAlgorithm(alg)) throw new InvalidToken(`algorithm ${String(alg).slice(0, 20)} is not accepted`);
      if (typeof kid !== 'string' || kid === '' || kid.length > 200) throw new InvalidToken('the token names no key (kid)');

      const cacheKey = jwks.generateCacheKey(alg, kid, domain);
      // A key that resolved before and merely expired from the cache is a refresh, never
      // throttled: forged tokens (made-up kids, or a real kid with another alg) must not be able
      // to lock real tokens out. Everything else is an unknown key, looked up at a limited rate.
      const unknown = jwks.cache.get(cacheKey) === undefined && !resolved.has(cacheKey);
      if (unknown) {
        const until = missing.get(cacheKey);
        if (until !== undefined && until > now()) throw new InvalidToken('unknown signing key');
        if (!takeFetchToken()) throw new InvalidToken('unknown signing key (key set refresh is rate-limited)');
      }

      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`key set fetch took longer than ${timeoutMs} ms`)), timeoutMs);
      });
      let jwk: buildGetJwks.JWK;
      try {
        if (unknown) {
          await Promise.race([learnKeySet(), timeout]);
          if (jwks.cache.get(cacheKey) === undefined)
            throw Object.assign(new Error('no such key in the key set'), { code: 'JWK_NOT_FOUND' });
        }
        jwk = await Promise.race([jwks.getJwk({ domain, alg, kid }), timeout]);
        missing.delete(cacheKey);
        remember(resolved, cacheKey, true);
      } catch (err) {
        if ((err as { code?: unknown }).code === 'JWK_NOT_FOUND') {
          remember(missing, cacheKey, now() + backoffMs);
          throw new InvalidToken('unknown signing key');
        }
        // a stuck or failed fetch must not stay cached as the answer for this kid
        jwks.cache.delete(cacheKey);
        throw transient('identity_provider_unavailable', 'the identity provider key set could not be fetched', err);
      } finally {
        clearTimeout(timer);
      }
      return toPem(jwk, alg);
    },
  };
}

/** Bounded, oldest dropped first: attacker-chosen kids must not grow memory. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= 1000) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

const KEY_TYPE: Record<Algorithm, { kty: string; crv?: string }> = {
  RS256: { kty: 'RSA' },
  ES256: { kty: 'EC', crv: 'P-256' },
};

/** The published key as PEM, if it is a signing key of the token's algorithm. */
function toPem(jwk: Record<string, unknown>, alg: Algorithm): string {
  const want = KEY_TYPE[alg];
  if (jwk.kty !== want.kty || (want.crv !== undefined && jwk.crv !== want.crv) || (jwk.use !== undefined && jwk.use !== 'sig')) {
    throw new InvalidToken('the signing key does not match the token algorithm');
  }
  try {
    // only the public members: a key set must never make us hold private material
    const { kty, n, e, crv, x, y } = jwk as Record<string, string | undefined>;
    const pub: JsonWebKey = kty === 'RSA' ? { kty, n, e } : { kty, crv, x, y };
    return createPublicKey({ key: pub, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString();
  } catch {
    throw new InvalidToken('the signing key is unusable');
  }
}
