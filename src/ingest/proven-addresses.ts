import type { ProvenAddressRepository } from '../db/proven-addresses.js';
import { describeError } from '../domain/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';

/**
 * The client addresses each source's credential has been proven from, kept across restarts (issue
 * 45): the wrong-password limiter places a candidate from such an address, for that source, before
 * those from addresses never seen (refusal-limiter.ts), so that after a restart or a rollout a
 * known sender does not wait behind the first tries of a flood from fresh addresses, which rank as
 * well as its own first request would without history. What is stored is which address sent a
 * valid credential for which source, and when: no credential, nothing derived from a password,
 * nothing an offline attacker could test a guess against (docs/sources.md, "What wrong passwords
 * may cost"); addresses are in the refusal log lines anyway.
 *
 * A pair is written when a request is let in by its Basic credential (compared by bcrypt, or found
 * in the cache of credentials so proven, so that a sender served from the cache for weeks stays
 * known), at most once an hour per pair and process, after the answer and never in its way: a
 * bounded set of pending pairs, written one statement at a time; a failed write is logged, counted
 * and tried again with the pair's next proof, and never fails a request. The pairs proven within
 * the window are loaded at start (at most `maxPairs`, the most recent) and again every
 * `refreshMs`, so that those proven by other replicas count too; the retention job deletes the
 * older rows.
 */
export interface ProvenAddresses {
  /** whether a credential of `source` was proven from `address` within the window */
  has: (address: string, source: string) => boolean;
  /** a credential of `source` was just proven from `address`: remembered now, written soon */
  record: (address: string, source: string) => void;
  /** loads the pairs proven within the window (a failure is logged: ingest starts without them), then refreshes them every refreshMs */
  start(): Promise<void>;
  /** stops refreshing and writes what is pending */
  stop(): Promise<void>;
}

export interface ProvenAddressesOptions {
  repo: Pick<ProvenAddressRepository, 'record' | 'recent'>;
  metrics: Pick<Metrics, 'provenAddressWrites' | 'provenAddresses'>;
  logger: Logger;
  /** INGEST_PROVEN_ADDRESS_DAYS in ms: pairs proven longer ago do not count; 0: none is written or loaded */
  maxAgeMs: number;
  /** how often the pairs are read again (default a minute) */
  refreshMs?: number;
  /** pairs kept in memory, the most recent (default MAX_PROVEN_PAIRS) */
  maxPairs?: number;
  now?: () => number;
}

/** 10 000 pairs: every sender of a large installation, a few addresses each, in about 2 MB. */
export const MAX_PROVEN_PAIRS = 10_000;
/** a pair proven again within the hour is not written again: the window is days, an hour's precision is plenty */
const WRITE_EVERY_MS = 3_600_000;
const REFRESH_EVERY_MS = 60_000;
/** pairs waiting to be written; past that a proof is not written (counted as dropped), the next one will be */
const MAX_PENDING = 1_000;
/** after a failed write, no other is tried for this long (Postgres is down: one warning, not one per request) */
const RETRY_AFTER_FAILURE_MS = 30_000;

interface Entry {
  source: string;
  address: string;
  provenAt: number;
  /** when it was last written (or queued to be); -Infinity: never, or the write failed */
  writtenAt: number;
}

const pairKey = (address: string, source: string) => `${address}\0${source}`;

export function createProvenAddresses(opts: ProvenAddressesOptions): ProvenAddresses {
  const now = opts.now ?? Date.now;
  const maxPairs = opts.maxPairs ?? MAX_PROVEN_PAIRS;
  const refreshMs = opts.refreshMs ?? REFRESH_EVERY_MS;
  const off = opts.maxAgeMs <= 0;
  const logger = opts.logger.child({ component: 'proven-addresses' });
  const { metrics } = opts;
  // in order of proof, the oldest first (the first forgotten past maxPairs)
  let pairs = new Map<string, Entry>();
  const pending = new Map<string, { source: string; address: string }>();
  let writing: Promise<void> | undefined;
  let retryAt = -Infinity;
  let refreshing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const write = async (): Promise<void> => {
    while (pending.size > 0) {
      const batch = [...pending.entries()];
      pending.clear();
      try {
        await opts.repo.record(batch.map(([, p]) => p));
        metrics.provenAddressWrites.inc({ result: 'written' }, batch.length);
      } catch (err) {
        metrics.provenAddressWrites.inc({ result: 'failed' }, batch.length);
        retryAt = now() + RETRY_AFTER_FAILURE_MS;
        // written again with their next proof
        for (const [key] of batch) {
          const e = pairs.get(key);
          if (e) e.writtenAt = -Infinity;
        }
        logger.warn(
          { err: describeError(err), pairs: batch.length },
          'proven client addresses not written; they are with their next proof',
        );
        return;
      }
    }
  };
  const writeSoon = (): void => {
    if (writing || pending.size === 0 || now() < retryAt) return;
    writing = write().finally(() => (writing = undefined));
  };

  const refresh = async (): Promise<void> => {
    const rows = await opts.repo.recent(opts.maxAgeMs / 1000, maxPairs);
    const cutoff = now() - opts.maxAgeMs;
    const merged = new Map<string, Entry>();
    for (const r of rows) {
      const at = r.provenAt.getTime();
      merged.set(pairKey(r.address, r.source), { source: r.source, address: r.address, provenAt: at, writtenAt: at });
    }
    // those proven here and not written yet (or not read back yet) stay
    for (const [key, e] of pairs) {
      if (e.provenAt < cutoff) continue;
      const m = merged.get(key);
      if (!m) merged.set(key, e);
      else {
        m.provenAt = Math.max(m.provenAt, e.provenAt);
        m.writtenAt = Math.max(m.writtenAt, e.writtenAt);
      }
    }
    pairs = new Map([...merged].sort((a, b) => a[1].provenAt - b[1].provenAt).slice(-maxPairs));
    metrics.provenAddresses.set(pairs.size);
  };
  const tick = (): void => {
    writeSoon();
    if (refreshing) return;
    refreshing = refresh()
      .catch((err: unknown) => logger.warn({ err: describeError(err) }, 'proven client addresses not read again; the next refresh tries'))
      .finally(() => (refreshing = undefined));
  };

  return {
    has(address, source) {
      return pairs.has(pairKey(address, source));
    },
    record(address, source) {
      if (off) return;
      const key = pairKey(address, source);
      const t = now();
      const e = pairs.get(key);
      // the request's path: a lookup, and nothing more for a pair written within the hour
      if (e && t - e.writtenAt < WRITE_EVERY_MS) return;
      if (e) {
        e.provenAt = t;
        e.writtenAt = t;
      } else {
        pairs.set(key, { source, address, provenAt: t, writtenAt: t });
        if (pairs.size > maxPairs) {
          const oldest = pairs.keys().next().value;
          if (oldest !== undefined) pairs.delete(oldest);
        }
        metrics.provenAddresses.set(pairs.size);
      }
      if (pending.size >= MAX_PENDING) {
        metrics.provenAddressWrites.inc({ result: 'dropped' });
        // written with its next proof
        const kept = pairs.get(key);
        if (kept) kept.writtenAt = -Infinity;
        return;
      }
      pending.set(key, { source, address });
      writeSoon();
    },
    async start() {
      if (off || timer) return;
      try {
        await refresh();
      } catch (err) {
        logger.warn(
          { err: describeError(err) },
          'proven client addresses not loaded; ingest starts without them and reads them again in a minute',
        );
      }
      timer = setInterval(tick, refreshMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await refreshing;
      await writing;
      // what is pending is tried once more, whatever the last failure
      if (pending.size > 0) await write();
    },
  };
}
