/**
 * What bounds the cost of wrong passwords, without letting anyone else's wrong passwords lock out a
 * valid credential. Every refused Basic credential costs one bcrypt comparison (so that refusals
 * look alike), which a flood of wrong passwords would turn into both cores' worth of bcrypt and a
 * slow ingest for everyone. So, for credentials not already proven valid (those skip all of this:
 * the verifier's cache answers them without bcrypt):
 * - comparisons run a few at a time; the others wait in a bounded line, and past it the request is
 *   answered 429 at once. That alone bounds bcrypt's CPU;
 * - a client address, or a source, with too many refusals in the current window is answered 429
 *   with Retry-After before any comparison, until the window ends: a flood spends its connections
 *   on held 429s rather than on the line;
 * - except a credential that may be valid: one that names an existing source and its username (a
 *   constant-time comparison, no bcrypt). It is compared even when its address or source is over
 *   the limit, as long as that address has had fewer than `perAddress` such credentials refused
 *   for that source in the window (a source's password can not be guessed faster than that from
 *   one address), in a line of its own that goes first, best placed the fewer of them its address
 *   has had refused for that source, then from an address that source's credential was proven
 *   from before (proven-addresses.ts: kept across restarts, so a known sender goes before a
 *   flood's first tries from fresh addresses, and loses that place with its address's first wrong
 *   guess), then the fewer its source has had refused from anyone (so a flood guessing at other
 *   sources' passwords waits behind a clean source's sender), then the fewer refusals its address
 *   has had overall, ranked when a turn is handed over. A wrong one is answered the 429 it would
 *   have had; a right one passes.
 *   So a flood from the same address (a shared proxy, a NAT) or against the same source makes a
 *   valid sender wait for a comparison or two, and never turns it away, unless the flood knows the
 *   source's username and comes from the sender's own address (docs/sources.md).
 * The counts take the source as it was named, whether it exists or not, so a 429 says nothing of
 * which sources exist; the numbers are the same for every source.
 */
export interface RefusalLimits {
  /** refusals a client address may have in a window before it is answered 429 */
  perAddress: number;
  /** refusals a source may have in a window (from every address) before unproven credentials for it are answered 429 */
  perSource: number;
  windowMs: number;
  /** bcrypt comparisons at once for credentials not yet proven (bcrypt runs on libuv's thread pool) */
  concurrency: number;
  /** comparisons that may wait for a turn, in each of the two lines (credentials that may be valid, the others); past that, 429 */
  queue: number;
  /**
   * the line of credentials that may be valid, when longer than `queue`: its first comers from
   * fresh addresses are as well placed as a valid sender's, and a valid sender had better wait
   * than be refused (default: queue)
   */
  candidateQueue?: number;
}

/**
 * 10 refusals a minute from one address (a sender with a rotated password retries well under it),
 * 60 a minute for one source, one comparison at a time (about a core at most, leaving the other to
 * the traffic that is let in) with 32 waiting: measured in docs/benchmarks.md, "Wrong passwords".
 */
export const DEFAULT_REFUSAL_LIMITS: RefusalLimits = {
  perAddress: 10,
  perSource: 60,
  windowMs: 60_000,
  concurrency: 1,
  queue: 32,
  candidateQueue: 128,
};

// a bounded memory of addresses and source names an attacker chooses
const MAX_KEYS = 10_000;

/** Refusals per key in fixed windows, the oldest keys forgotten past MAX_KEYS. */
class WindowCounts {
  private readonly counts = new Map<string, { start: number; n: number }>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}
  /** refusals of the key in its current window */
  count(key: string, now: number): number {
    const c = this.counts.get(key);
    return !c || now - c.start >= this.windowMs ? 0 : c.n;
  }
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

/** Who asks for a comparison that may be valid (it names an existing source and its username). */
export interface Candidate {
  address: string;
  source: string;
}

export interface RefusalLimiter {
  /** Whether a credential not yet proven may be checked now; 429's wait when not. */
  admit(address: string, source: string): Limited | undefined;
  /** Whether a credential that may be valid is compared although admit() said no: its address has refusals to spare for its source. */
  spares(address: string, source: string): boolean;
  /** A refusal, after its comparison; `candidate`: of a credential that named the source's username (a guess at its password). */
  refused(address: string, source: string, candidate?: boolean): void;
  /**
   * Runs a comparison when its turn comes; a Limited answer instead when the line is full. A
   * candidate waits in the line that goes first.
   */
  inTurn<T>(fn: () => Promise<T>, candidate?: Candidate): Promise<T | Limited>;
}

interface Waiting {
  candidate: Candidate;
  /** true: its turn; false: dropped for a better-placed candidate */
  go: (turn: boolean) => void;
}

/**
 * Where a candidate stands, fewest first: its address's guesses at this source, 0 when its address
 * was proven for this source before (1 when not), its source's guesses from anyone, its address's refusals.
 */
type Rank = readonly [number, number, number, number];
const before = (a: Rank, b: Rank) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2] || a[3] - b[3];

/** Whether a credential of `source` was proven from `address` before (proven-addresses.ts); default: never. */
export type IsProven = (address: string, source: string) => boolean;

export function createRefusalLimiter(
  limits: RefusalLimits = DEFAULT_REFUSAL_LIMITS,
  now: () => number = Date.now,
  isProven: IsProven = () => false,
): RefusalLimiter {
  const byAddress = new WindowCounts(limits.perAddress, limits.windowMs);
  const bySource = new WindowCounts(limits.perSource, limits.windowMs);
  // refused candidates of one address for one source: what a guesser at that source's password
  // spends (a wrong username guesses nothing, and must not spend a valid sender's share behind the same address)
  const byPair = new WindowCounts(limits.perAddress, limits.windowMs);
  // refused candidates of one source from every address: only someone who knows its username can
  // raise it, so a flood guessing at other sources' passwords never places itself before this one's sender
  const guessedSources = new WindowCounts(limits.perSource, limits.windowMs);
  const pairKey = (address: string, source: string) => `${address}\0${source}`;
  let running = 0;
  // in arrival order; ranked when a turn is handed over, not when placed: the first tries of a
  // flood that arrived before any of them was refused are not as well placed as a clean source's sender
  const candidates: Waiting[] = [];
  const others: Array<Omit<Waiting, 'candidate'>> = [];
  const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
  const full: Limited = { limited: true, retryAfterSeconds: 1, by: 'queue' };
  const rankOf = (c: Candidate, t: number): Rank => [
    byPair.count(pairKey(c.address, c.source), t),
    // after its own guesses: an attacker behind a proven proxy address keeps the place only until its first wrong one
    isProven(c.address, c.source) ? 0 : 1,
    guessedSources.count(c.source, t),
    byAddress.count(c.address, t),
  ];
  /** Index of the best-placed waiting candidate (the first come among equals), or of the worst (the last come among equals). */
  const pick = (best: boolean, t: number): number => {
    let at = -1;
    let rank: Rank | undefined;
    candidates.forEach((w, i) => {
      const r = rankOf(w.candidate, t);
      if (!rank || (best ? before(r, rank) < 0 : before(r, rank) >= 0)) {
        at = i;
        rank = r;
      }
    });
    return at;
  };

  /** A place in the candidates' line, or false: that line is full of better-placed ones. */
  const enqueueCandidate = (c: Candidate): Promise<boolean> | false => {
    if (candidates.length >= (limits.candidateQueue ?? limits.queue)) {
      const t = now();
      const at = pick(false, t);
      const worst = candidates[at];
      if (!worst || before(rankOf(worst.candidate, t), rankOf(c, t)) <= 0) return false;
      candidates.splice(at, 1);
      worst.go(false);
    }
    return new Promise<boolean>((go) => candidates.push({ candidate: c, go }));
  };
  const nextCandidate = (): Waiting | undefined => {
    if (candidates.length === 0) return undefined;
    return candidates.splice(pick(true, now()), 1)[0];
  };

  return {
    admit(address, source) {
      const t = now();
      const a = byAddress.blockedFor(address, t);
      if (a > 0) return { limited: true, retryAfterSeconds: seconds(a), by: 'address' };
      const s = bySource.blockedFor(source, t);
      if (s > 0) return { limited: true, retryAfterSeconds: seconds(s), by: 'source' };
      return undefined;
    },
    spares(address, source) {
      return byPair.blockedFor(pairKey(address, source), now()) === 0;
    },
    refused(address, source, candidate = false) {
      const t = now();
      byAddress.add(address, t);
      bySource.add(source, t);
      if (candidate) {
        byPair.add(pairKey(address, source), t);
        guessedSources.add(source, t);
      }
    },
    async inTurn(fn, candidate) {
      if (running >= limits.concurrency) {
        let turn: Promise<boolean> | false;
        if (candidate) turn = enqueueCandidate(candidate);
        else if (others.length >= limits.queue) turn = false;
        else turn = new Promise<boolean>((go) => others.push({ go }));
        // the turn is handed over by the comparison that ends (running stays as it is)
        if (turn === false || !(await turn)) return full;
      } else running++;
      try {
        return await fn();
      } finally {
        const next = nextCandidate() ?? others.shift();
        if (next) next.go(true);
        else running--;
      }
    },
  };
}
