import { prepared, type Db } from './knex.js';

/** What an endpoint limits (null = not that one); at least one is set when the gate is asked. */
export interface EndpointLimits {
  perSecond: number | null;
  maxConcurrency: number | null;
}

/** Why a delivery has to wait: the limit that sets the pace of its endpoint's queue. */
export type WaitReason = 'concurrency' | 'rate';

export type Admission = { admitted: true } | { admitted: false; waitMs: number; reason: WaitReason };

interface AdmitRow {
  admitted: boolean;
  wait_ms: number;
  reason: WaitReason | null;
}

/**
 * The state of per-endpoint limits, shared by every worker (migration 056, docs/limits.md): the
 * functions there decide atomically, in one round trip each, under a lock on the endpoint's state
 * row. Only endpoints with a limit call admit/release; the pause is written only after a 429/503
 * with Retry-After, and read for free with the endpoint row on every attempt.
 */
export function createEndpointLimitRepository(db: Db) {
  return {
    /**
     * May this delivery send its request now? With a concurrency limit an admission holds a lease
     * for leaseMs, given back by release() or, when the worker died, by its expiry.
     */
    async admit(endpointId: string, deliveryId: string, limits: EndpointLimits, leaseMs: number): Promise<Admission> {
      const res = await prepared<{ rows: AdmitRow[] }>(
        db,
        'endpointLimits.admit',
        'SELECT admitted, wait_ms, reason FROM webhook_endpoint_admit(?, ?, ?, ?, ?)',
        [endpointId, deliveryId, limits.perSecond, limits.maxConcurrency, Math.round(leaseMs)],
      );
      const row = res.rows[0];
      if (!row) throw new Error('webhook_endpoint_admit returned no row');
      if (row.admitted) return { admitted: true };
      return { admitted: false, waitMs: row.wait_ms, reason: row.reason ?? 'rate' };
    },

    /** The request ended: its lease goes, its duration feeds the spacing of waiting turns. */
    async release(endpointId: string, deliveryId: string, durationMs: number): Promise<void> {
      await prepared(db, 'endpointLimits.release', 'SELECT webhook_endpoint_release(?, ?, ?)', [endpointId, deliveryId, durationMs]);
    },

    /** Nothing is sent to the endpoint for pauseMs from now (a later pause already set stays). */
    async pause(endpointId: string, pauseMs: number): Promise<void> {
      await prepared(
        db,
        'endpointLimits.pause',
        `UPDATE webhook_endpoint
            SET paused_until = greatest(paused_until, now() + make_interval(secs => ? / 1000.0))
          WHERE id = ?`,
        [Math.round(pauseMs), endpointId],
      );
    },
  };
}

export type EndpointLimitRepository = ReturnType<typeof createEndpointLimitRepository>;
