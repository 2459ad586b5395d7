import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import bcrypt from 'bcrypt';
import type { CredentialRepository } from '../db/credentials.js';
import { SOURCE_PATTERN, type InboundCredential } from '../domain/records.js';
import type { BasicCredentials } from './basic-auth.js';

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

export interface CredentialVerifier {
  /** The source's credential when the Basic credentials match it, else undefined. */
  verify(source: string, presented: BasicCredentials | undefined): Promise<InboundCredential | undefined>;
}

export interface VerifierOptions {
  credentials: Pick<CredentialRepository, 'findBySource' | 'maxHashCost'>;
  /** entries of verified (source, username, password, hash); 0 disables the cache */
  cacheSize?: number;
  /** how long a credential row is reused before Postgres is asked again (rotation latency) */
  rowTtlMs?: number;
  now?: () => number;
}

/**
 * Inbound Basic auth. bcrypt runs only on a cache miss; the cache key is a salted hash (SHA-256
 * with a per-process random salt) of source, username, password AND the stored hash, so a rotated
 * credential misses the cache by construction and no plaintext password is kept in memory.
 * An unknown source still pays one bcrypt comparison against a dummy hash, so it answers like a
 * wrong password, in the same time: the dummy has the highest cost among the stored hashes (at
 * least 10), and a wrong password on a cheaper hash waits for a dummy comparison run alongside,
 * so every refusal costs one comparison at that highest cost whatever the source's own hash.
 */
export function createCredentialVerifier(opts: VerifierOptions): CredentialVerifier {
  // per-process random salt: cache keys are useless outside this process and hold no password
  const salt = randomBytes(32);
  const verified = new Lru<true>(opts.cacheSize ?? 1000);
  const rows = new Lru<{ at: number; row: InboundCredential | null }>(Math.max(opts.cacheSize ?? 1000, 100));
  const rowTtlMs = opts.rowTtlMs ?? 2000;
  const now = opts.now ?? Date.now;
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
    if (!VALID_SOURCE.test(source)) return undefined;
    const cached = rows.get(source);
    if (cached && now() - cached.at < rowTtlMs) return cached.row ?? undefined;
    const row = await opts.credentials.findBySource(source);
    rows.set(source, { at: now(), row: row ?? null });
    return row;
  };

  const sameString = (a: string, b: string): boolean => {
    // compare digests so the comparison is constant-time whatever the lengths
    const da = createHmac('sha256', salt).update(a).digest();
    const db = createHmac('sha256', salt).update(b).digest();
    return timingSafeEqual(da, db);
  };

  return {
    async verify(source, presented) {
      if (presented === undefined) return undefined;
      const row = await loadRow(source);
      const cost = await currentRefusalCost();
      if (row === undefined) {
        await bcrypt.compare(presented.password, await dummyHash(cost));
        return undefined;
      }
      // a salted hash, not an HMAC: it is computed on every request, and HMAC key handling cost more
      const key = createHash('sha256')
        .update(salt)
        .update(source)
        .update('\0')
        .update(presented.username)
        .update('\0')
        .update(presented.password)
        .update('\0')
        .update(row.passwordHash)
        .digest('base64');
      if (verified.get(key)) return row;
      const userOk = sameString(presented.username, row.username);
      const rowCost = costOf(row.passwordHash);
      if (rowCost > refusalCost.cost) refusalCost = { cost: Math.min(rowCost, MAX_COST), at: now() };
      // a cheaper hash: a dummy comparison at the refusal cost runs alongside, and a refusal waits for it
      const padding = rowCost < cost ? dummyHash(cost).then((h) => bcrypt.compare(presented.password, h)) : undefined;
      const passOk = await bcrypt.compare(presented.password, row.passwordHash);
      if (!(userOk && passOk)) {
        await padding;
        return undefined;
      }
      // a success leaks nothing the caller does not know; the padding finishes on its own
      padding?.catch(() => undefined);
      verified.set(key, true);
      return row;
    },
  };
}
