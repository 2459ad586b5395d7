import { createHash, createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';
import bcrypt from 'bcrypt';
import { VARIABLES } from '../config/settings.js';
import type { CredentialRepository } from '../db/credentials.js';
import { SOURCE_PATTERN, type InboundCredential } from '../domain/records.js';
import { parseBasicAuth } from './basic-auth.js';
import { createRefusalLimiter, type Limited, type RefusalLimiter } from './refusal-limiter.js';

const VALID_SOURCE = new RegExp(SOURCE_PATTERN);
const DEFAULT_COST = 10;
// bcrypt's maximum is 31; beyond 16 a single comparison takes seconds and no sane hash has it
const MAX_COST = 16;
/** The cost a bcrypt hash was made with ($2b$12$... -> 12); the default for anything else. */
const costOf = (hash: string): number => Number(/^\$2[abxy]?\$(\d{2})\$/.exec(hash)?.[1] ?? DEFAULT_COST);

/** A small LRU on Map insertion order. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, v: V): void {
    if (this.max <= 0) return;
    this.map.delete(key);
    this.map.set(key, v);
    if (this.map.size > this.max) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
  }
}

/** Why a credential was refused before any signature was looked at: for the log and the metric only. */
export type CredentialRefusal = 'unknown_source' | 'missing_credentials' | 'bad_credentials' | 'unexpected_credentials';

/**
 * What the headers alone decide. `ok`: the source's Basic credential matched, or it has none and
 * its signature is checked once the body is in. A refusal is answered at once (`beforeBody`) only
 * when Basic credentials were presented: without any, every source (unknown, Basic or signed)
 * reads the body first, so that how a refusal comes says nothing of which sources exist or how
 * they verify.
 */
export type HeadersOutcome =
  | { ok: true; credential: InboundCredential }
  | { ok: false; reason: CredentialRefusal; credential: InboundCredential | undefined; beforeBody: boolean }
  /** too many refusals lately from this address or for this source, or too many waiting: no comparison was made */
  | { ok: false; reason: 'rate_limited'; credential: InboundCredential | undefined; beforeBody: true; retryAfterSeconds: number };

export interface CredentialVerifier {
  /** Checks the `Authorization` header of a request to /api/webhooks/{source} from a client address. */
  verify(source: string, authorization: string | undefined, address: string): Promise<HeadersOutcome>;
}

export interface VerifierOptions {
  credentials: Pick<CredentialRepository, 'findBySource' | 'maxHashCost'>;
  /** entries of verified (source, username, password, hash); 0 disables the cache */
  cacheSize?: number;
  /** how long a credential row is reused before Postgres is asked again (rotation latency) */
  rowTtlMs?: number;
  now?: () => number;
  /** what bounds the bcrypt comparisons of credentials not yet proven (default: DEFAULT_REFUSAL_LIMITS) */
  limiter?: RefusalLimiter;
  /**
   * the source of the service's own events (OPERATIONS_EVENTS_SOURCE): nobody outside may send
   * to it, so it is refused as an unknown source is, even if a row for it was written by hand
   * (docs/operations-events.md)
   */
  reservedSource?: string;
  /**
   * a request was let in by its Basic credential from this client address (proven-addresses.ts:
   * the limiter places that address first for the source after a restart); called on the
   * request's path, so it must return at once
   */
  onProven?: (address: string, source: string) => void;
}

/**
 * Inbound Basic auth. bcrypt runs only on a cache miss; the cache key is a salted hash (SHA-256
 * with a per-process random salt) of source, username, password AND the stored hash, so a rotated
 * credential misses the cache by construction and no plaintext password is kept in memory.
 * Every presented credential that is refused costs one bcrypt comparison at the highest cost among
 * the stored hashes (at least 10), through the same statements whether the source is unknown, has
 * a Basic credential or only a signature: the comparison is against the stored hash when there is
 * one of that cost, else against a dummy hash of it (a cheaper stored hash is compared alongside
 * one), so a refusal's time does not say whether the source exists. What those comparisons may
 * cost is bounded (refusal-limiter.ts): they run a few at a time, and an address or source that
 * keeps failing is answered 429 before any, except for a credential that names an existing
 * source's username, which is still compared, first; a credential in the cache skips all of it.
 * The same credential presented again while its comparison runs waits for that one.
 */
export function createCredentialVerifier(opts: VerifierOptions): CredentialVerifier {
  // per-process random salt: cache keys are useless outside this process and hold no password
  const salt = randomBytes(32);
  // the same salt as an HMAC key object, made once: createHmac with a Buffer key makes one on every
  // call (~11 us on node 24, signatures.ts)
  const saltKey = createSecretKey(salt);
  const cacheSize = opts.cacheSize ?? VARIABLES.CREDENTIAL_CACHE_SIZE.default;
  const verified = new Lru<true>(cacheSize);
  const rows = new Lru<{ at: number; row: InboundCredential | null }>(Math.max(cacheSize, 100));
  const rowTtlMs = opts.rowTtlMs ?? 2000;
  const now = opts.now ?? Date.now;
  const limiter = opts.limiter ?? createRefusalLimiter(undefined, now);
  // comparisons under way, by cache key: identical credentials wait for the one
  const comparing = new Map<string, Promise<boolean | Limited>>();
  // dummy hashes by cost, made on first use (making one costs about what comparing with it does)
  const dummies = new Map<number, Promise<string>>();
  const dummyHash = (cost: number): Promise<string> => {
    let hash = dummies.get(cost);
    if (hash === undefined) {
      hash = bcrypt.hash(randomBytes(16).toString('hex'), cost);
      dummies.set(cost, hash);
    }
    return hash;
  };
  // the cost every refusal pays: bcrypt's default 10 (what the operator and dev mode hash with),
  // or more when a Secret holds a pre-hashed password of a higher cost
  let refusalCost = { cost: DEFAULT_COST, at: -Infinity };
  const currentRefusalCost = async (): Promise<number> => {
    if (now() - refusalCost.at >= Math.max(rowTtlMs, 10_000)) {
      const max = await opts.credentials.maxHashCost();
      refusalCost = { cost: Math.max(DEFAULT_COST, Math.min(max ?? DEFAULT_COST, MAX_COST)), at: now() };
    }
    return refusalCost.cost;
  };

  const loadRow = async (source: string): Promise<InboundCredential | undefined> => {
    // a name no credential can have is not worth a query (and NUL bytes are not valid text)
    if (!VALID_SOURCE.test(source) || source === opts.reservedSource) return undefined;
    const cached = rows.get(source);
    if (cached && now() - cached.at < rowTtlMs) return cached.row ?? undefined;
    const row = await opts.credentials.findBySource(source);
    rows.set(source, { at: now(), row: row ?? null });
    return row;
  };

  const sameString = (a: string, b: string): boolean => {
    // compare digests so the comparison is constant-time whatever the lengths
    const da = createHmac('sha256', saltKey).update(a).digest();
    const db = createHmac('sha256', saltKey).update(b).digest();
    return timingSafeEqual(da, db);
  };

  return {
    async verify(source, authorization, address) {
      const row = await loadRow(source);
      const cost = await currentRefusalCost();
      if (authorization === undefined) {
        // nothing to compare: the answer waits for the body whatever the source (see HeadersOutcome)
        if (row === undefined) return { ok: false, reason: 'unknown_source', credential: undefined, beforeBody: false };
        if (row.passwordHash !== null) return { ok: false, reason: 'missing_credentials', credential: row, beforeBody: false };
        return { ok: true, credential: row };
      }
      // From here one path for every source: the same hashing, comparisons and one bcrypt at the
      // refusal cost, whether the source is unknown, has Basic, or has a signature alone.
      const presented = parseBasicAuth(authorization);
      const username = presented?.username ?? '';
      const password = presented?.password ?? '';
      const stored = presented !== undefined && row?.passwordHash ? row.passwordHash : undefined;
      // a salted hash, not an HMAC: it is computed on every request, and HMAC key handling cost more
      const key = createHash('sha256')
        .update(salt)
        .update(source)
        .update('\0')
        .update(username)
        .update('\0')
        .update(password)
        .update('\0')
        .update(stored ?? '')
        .digest('base64');
      // proven valid before: no comparison, no limit
      if (stored !== undefined && verified.get(key) && row) {
        opts.onProven?.(address, source);
        return { ok: true, credential: row };
      }
      // not proven: the comparison is what a flood of wrong passwords would multiply (refusal-limiter.ts)
      const userOk = sameString(username, row?.username ?? '');
      // may be valid: an existing source's username with a password to check. Compared even when
      // the address or source is over its limit (while that address has refusals to spare for the
      // source), ahead of the others, so that no one else's wrong passwords turn it away
      const candidate = stored !== undefined && userOk;
      const limited = limiter.admit(address, source);
      if (limited && !(candidate && limiter.spares(address, source)))
        return { ok: false, reason: 'rate_limited', credential: row, beforeBody: true, retryAfterSeconds: limited.retryAfterSeconds };
      const storedCost = stored === undefined ? 0 : costOf(stored);
      if (storedCost > refusalCost.cost) refusalCost = { cost: Math.min(storedCost, MAX_COST), at: now() };
      // the same credential asked again while its comparison runs (a sender's next requests): one comparison for all
      let comparison = comparing.get(key);
      if (comparison === undefined) {
        comparison = limiter
          .inTurn(
            async () => {
              // no stored hash, or a cheaper one: a dummy comparison at the refusal cost, which a refusal waits for
              const padding = storedCost < cost ? dummyHash(cost).then((h) => bcrypt.compare(password, h)) : undefined;
              const ok = stored === undefined ? false : await bcrypt.compare(password, stored);
              if (!(userOk && ok && row)) await padding;
              // a success leaks nothing the caller does not know; the padding finishes on its own
              else padding?.catch(() => undefined);
              return ok;
            },
            candidate ? { address, source } : undefined,
          )
          .finally(() => comparing.delete(key));
        comparing.set(key, comparison);
      }
      const passOk = await comparison;
      if (typeof passOk !== 'boolean')
        return { ok: false, reason: 'rate_limited', credential: row, beforeBody: true, retryAfterSeconds: passOk.retryAfterSeconds };
      if (!(userOk && passOk && row)) {
        limiter.refused(address, source, candidate);
        // compared over the limit as a candidate: answered the 429 it would have had, so that the
        // answer says no more than a 429 does (which usernames are right)
        if (limited)
          return { ok: false, reason: 'rate_limited', credential: row, beforeBody: true, retryAfterSeconds: limited.retryAfterSeconds };
        const reason: CredentialRefusal =
          row === undefined ? 'unknown_source' : row.passwordHash === null ? 'unexpected_credentials' : 'bad_credentials';
        return { ok: false, reason, credential: row, beforeBody: true };
      }
      verified.set(key, true);
      opts.onProven?.(address, source);
      return { ok: true, credential: row };
    },
  };
}
