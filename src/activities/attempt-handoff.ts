import type { PreparedRow } from '../db/deliveries.js';

/**
 * What prepare read for each delivery it planned (the row, its endpoint, its event), kept in the
 * worker for the delivery's first attempt: that attempt runs as a local activity on this same
 * worker a few milliseconds later, and needs no statement of its own to load them again (one
 * round trip and a three-table read per delivery; figures: docs/benchmarks.md). Each entry is
 * taken once; a later attempt, an attempt on another worker, or one that comes after the entry's
 * time is up loads fresh rows as before. What the attempt then decides is what it would have
 * decided from rows read at prepare: the row is PENDING with the attempts prepare saw, and
 * recording the outcome is guarded against a row another run settled meanwhile.
 */
export interface AttemptHandoff {
  put(rows: readonly PreparedRow[]): void;
  /** the delivery's prepared rows, once; undefined when none are here (or too old) */
  take(deliveryId: string): PreparedRow | undefined;
}

export interface AttemptHandoffOptions {
  /** entries held at most; the oldest goes first (default 500) */
  maxEntries?: number;
  /** how long an entry is good for (default 10 s): a first attempt normally starts within milliseconds */
  ttlMs?: number;
  /** payloads above this are not held, their attempt loads them (default 64 KiB): bounds the memory */
  maxPayloadBytes?: number;
  now?: () => number;
}

export function createAttemptHandoff(opts: AttemptHandoffOptions = {}): AttemptHandoff {
  const maxEntries = opts.maxEntries ?? 500;
  const ttlMs = opts.ttlMs ?? 10_000;
  const maxPayloadBytes = opts.maxPayloadBytes ?? 64 * 1024;
  const now = opts.now ?? Date.now;
  // a Map iterates in insertion order: its first key is the oldest entry
  const entries = new Map<string, { row: PreparedRow; expiresAt: number }>();
  return {
    put(rows) {
      const expiresAt = now() + ttlMs;
      for (const row of rows) {
        if (row.event.payload.length > maxPayloadBytes) continue;
        while (entries.size >= maxEntries) {
          const oldest = entries.keys().next();
          if (oldest.done) break;
          entries.delete(oldest.value);
        }
        entries.set(row.delivery.id, { row, expiresAt });
      }
    },
    take(deliveryId) {
      const entry = entries.get(deliveryId);
      if (!entry) return undefined;
      entries.delete(deliveryId);
      return entry.expiresAt > now() ? entry.row : undefined;
    },
  };
}
