/**
 * What bounds the cost of wrong passwords. Every refused Basic credential costs one bcrypt
 * comparison (so that refusals look alike), which a flood of wrong passwords would turn into both
 * cores' worth of bcrypt and a slow ingest for everyone. So, for credentials not already proven
 * valid (those skip all of this: the verifier's cache answers them without bcrypt):
 * - a client address, or a source, with too many refusals in the current window is answered 429
 *   with Retry-After before any comparison, until the window ends;
 * - comparisons run a few at a time; the others wait in a bounded line, and past it the request is
 *   answered 429 at once.
 * Both count the source as it was named, whether it exists or not, so a 429 says nothing of which
 * sources exist; the numbers are the same for every source.
 */
export interface RefusalLimits {
  /** refusals a client address may have in a window before it is answered 429 */
  perAddress: number;
  /** refusals a source may have in a window (from every address) before unproven credentials for it are answered 429 */
  perSource: number;
  windowMs: number;
  /** bcrypt comparisons at once for credentials not yet proven (bcrypt runs on libuv's thread pool) */
  concurrency: number;
  /** comparisons that may wait for a turn; past that, 429 */
  queue: number;
}

/**
 * 10 refusals a minute from one address (a sender with a rotated password retries well under it),
 * 60 a minute for one source, one comparison at a time (about a core at most, leaving the other to
 * the traffic that is let in) with 32 waiting: measured in docs/benchmarks.md, "Wrong passwords".
 */
export const DEFAULT_REFUSAL_LIMITS: RefusalLimits = { perAddress: 10, perSource: 60, windowMs: 60_000, concurrency: 1, queue: 32 };

// a bounded memory of addresses and source names an attacker chooses
const MAX_KEYS = 10_000;

/** Refusals per key in fixed windows, the oldest keys forgotten past MAX_KEYS. */
class WindowCounts {
  private readonly counts = new Map<string, { start: number; n: number }>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}
  /** ms until the key may try again, or 0 */
  blockedFor(key: string, now: number): number {
    const c = this.counts.get(key);
    if (!c || now - c.start >= this.windowMs || c.n < this.limit) return 0;
    return c.start + this.windowMs - now;
  }
  add(key: string, now: number): void {
    const c = this.counts.get(key);
    if (c && now - c.start < this.windowMs) {
      c.n++;
      return;
    }
    this.counts.delete(key);
    this.counts.set(key, { start: now, n: 1 });
    if (this.counts.size > MAX_KEYS) {
      const oldest = this.counts.keys().next().value;
      if (oldest !== undefined) this.counts.delete(oldest);
    }
  }
}

export type Limited = { limited: true; retryAfterSeconds: number; by: 'address' | 'source' | 'queue' };

export interface RefusalLimiter {
  /** Whether a credential not yet proven may be checked now; 429's wait when not. */
  admit(address: string, source: string): Limited | undefined;
  /** A refusal, after its comparison. */
  refused(address: string, source: string): void;
  /** Runs a comparison when its turn comes; a Limited answer instead when the line is full. */
  inTurn<T>(fn: () => Promise<T>): Promise<T | Limited>;
}

export function createRefusalLimiter(limits: RefusalLimits = DEFAULT_REFUSAL_LIMITS, now: () => number = Date.now): RefusalLimiter {
  const byAddress = new WindowCounts(limits.perAddress, limits.windowMs);
  const bySource = new WindowCounts(limits.perSource, limits.windowMs);
  let running = 0;
  const waiting: Array<() => void> = [];
  const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

  return {
    admit(address, source) {
      const t = now();
      const a = byAddress.blockedFor(address, t);
      if (a > 0) return { limited: true, retryAfterSeconds: seconds(a), by: 'address' };
      const s = bySource.blockedFor(source, t);
      if (s > 0) return { limited: true, retryAfterSeconds: seconds(s), by: 'source' };
      return undefined;
    },
    refused(address, source) {
      const t = now();
      byAddress.add(address, t);
      bySource.add(source, t);
    },
    async inTurn(fn) {
      if (running >= limits.concurrency) {
        if (waiting.length >= limits.queue) return { limited: true, retryAfterSeconds: 1, by: 'queue' };
        // the turn is handed over by the comparison that ends (running stays as it is)
        await new Promise<void>((resolve) => waiting.push(resolve));
      } else running++;
      try {
        return await fn();
      } finally {
        const next = waiting.shift();
        if (next) next();
        else running--;
      }
    },
  };
}
