import type { Delivery, Endpoint, WebhookEvent } from '../domain/records.js';
import type { DeliveryStatus } from '../domain/statuses.js';
import type { Db } from './knex.js';
import { toDelivery, toEndpoint, toEvent, type DeliveryRow, type EndpointRow, type EventRow } from './rows.js';

export interface AttemptResult {
  status: DeliveryStatus;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  /** when the attempt began, and how long the request took (null: no request was made) */
  startedAt: Date;
  durationMs: number | null;
  /**
   * No request was made: the endpoint was removed (inactive) or is disabled. Such an outcome leaves
   * the endpoint's failure count alone; endpoint_disabled also holds the FAILED row for the redrive
   * on enable. Absent: a settled outcome counts (a SUCCESS resets the count, a FAILED adds one).
   */
  skipped?: 'endpoint_inactive' | 'endpoint_disabled';
}

/** A settled attempt; autoDisabled: its FAILED was the one that reached the endpoint's threshold. */
export interface Settled {
  autoDisabled: boolean;
}

/**
 * The endpoint-health part of recordAttempt (issue 13, part 3): a settled delivery that counts
 * resets (SUCCESS) or bumps (FAILED) its endpoint's run of failures, and the FAILED that reaches
 * auto_disable_after disables it. One UPDATE under the endpoint row's lock, so concurrent workers
 * each count. A SUCCESS on a healthy endpoint writes nothing (no hot row on the happy path).
 * auto_disabled compares with now(): RETURNING shows only new values, and now() is this
 * statement's own time, which an earlier disable can not have.
 */
const HEALTH_CTE = `health AS (
           UPDATE webhook_endpoint ep
              SET consecutive_failures = CASE WHEN :status = 'SUCCESS' THEN 0 ELSE ep.consecutive_failures + 1 END,
                  disabled_at = CASE WHEN :status = 'FAILED' AND ep.disabled_at IS NULL AND ep.auto_disable_after > 0
                                      AND ep.consecutive_failures + 1 >= ep.auto_disable_after
                                     THEN now() ELSE ep.disabled_at END
             FROM updated u
            WHERE ep.id = u.endpoint_id AND :counts AND (:status = 'FAILED' OR ep.consecutive_failures > 0)
        RETURNING ep.disabled_at IS NOT NULL AND ep.disabled_at = now() AS auto_disabled)`;

interface AttemptRow extends EventRow {
  delivery: DeliveryRow;
  endpoint: EndpointRow;
}

/** row_to_json renders timestamps as text; the domain records carry Dates. */
function withDates<T extends object>(row: T, keys: ReadonlyArray<keyof T>): T {
  const out = { ...row };
  for (const k of keys) {
    const v = out[k];
    if (typeof v === 'string') (out as Record<keyof T, unknown>)[k] = new Date(v);
  }
  return out;
}

export function createDeliveryRepository(db: Db) {
  return {
    /** One PENDING row per (event, endpoint); safe to call again when the activity is retried. */
    async createPending(eventId: string, endpointIds: readonly string[]): Promise<Delivery[]> {
      if (endpointIds.length === 0) return [];
      // One round trip: the rows this statement inserted, and those that were there before it (a
      // retried prepare). Both come from the statement's snapshot, so a row another transaction
      // inserted meanwhile is in neither: then read them again, as a separate statement sees it.
      const res = await db.raw<{ rows: DeliveryRow[] }>(
        `WITH inserted AS (
           INSERT INTO webhook_delivery (event_id, endpoint_id)
           SELECT ?, unnest(?::uuid[])
           ON CONFLICT (event_id, endpoint_id) DO NOTHING
           RETURNING *)
         SELECT * FROM inserted
         UNION ALL
         SELECT * FROM webhook_delivery WHERE event_id = ? AND endpoint_id = ANY(?::uuid[])`,
        [eventId, [...endpointIds], eventId, [...endpointIds]],
      );
      let rows = res.rows;
      if (rows.length < new Set(endpointIds).size) {
        rows = await db<DeliveryRow>('webhook_delivery').where({ event_id: eventId }).whereIn('endpoint_id', endpointIds as string[]);
      }
      // oldest first; rows created together in the caller's order of endpoints
      const position = new Map(endpointIds.map((id, i) => [id, i]));
      return rows
        .map(toDelivery)
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (position.get(a.endpointId) ?? 0) - (position.get(b.endpointId) ?? 0));
    },

    /**
     * A delivery with its endpoint and event, in one round trip: what one attempt needs. The
     * endpoint is read fresh on every attempt so rotated secrets apply to the next retry.
     */
    async loadAttempt(id: string): Promise<{ delivery: Delivery; endpoint: Endpoint; event: WebhookEvent } | undefined> {
      const res = await db.raw<{ rows: AttemptRow[] }>(
        `SELECT row_to_json(d) AS delivery, row_to_json(ep) AS endpoint,
                ev.id, ev.source, ev.external_event_id, ev.event_type, ev.payload, ev.content_type, ev.headers,
                ev.status, ev.workflow_id, ev.published_at, ev.received_at, ev.completed_at
           FROM webhook_delivery d
           JOIN webhook_endpoint ep ON ep.id = d.endpoint_id
           JOIN webhook_event ev ON ev.id = d.event_id
          WHERE d.id = ?`,
        [id],
      );
      const row = res.rows[0];
      if (!row) return undefined;
      const { delivery, endpoint, ...event } = row;
      return {
        delivery: toDelivery(withDates(delivery, ['last_attempt_at', 'completed_at', 'created_at'])),
        endpoint: toEndpoint(withDates(endpoint, ['created_at', 'updated_at', 'disabled_at', 'paused_until'])),
        event: toEvent(event),
      };
    },

    async get(id: string): Promise<Delivery | undefined> {
      const row = await db<DeliveryRow>('webhook_delivery').where({ id }).first();
      return row ? toDelivery(row) : undefined;
    },

    async listByEvent(eventId: string): Promise<Delivery[]> {
      const rows = await db<DeliveryRow>('webhook_delivery').where({ event_id: eventId }).orderBy('created_at');
      return rows.map(toDelivery);
    },

    async statusesByEvent(eventId: string): Promise<DeliveryStatus[]> {
      const rows = await db<DeliveryRow>('webhook_delivery').select('status').where({ event_id: eventId });
      return rows.map((r) => r.status);
    },

    /**
     * Settles one attempt: the row's latest state, a line of the attempt log and the endpoint's
     * health, in one statement (all or nothing). null when the row was not PENDING: another run
     * settled it first. See AttemptResult.skipped for what counts towards auto-disable.
     */
    async recordAttempt(id: string, r: AttemptResult): Promise<Settled | null> {
      const res = await db.raw<{ rows: Array<{ auto_disabled: boolean | null }> }>(
        `WITH updated AS (
           UPDATE webhook_delivery
              SET status = :status, attempts = attempts + 1,
                  last_response_status = :responseStatus, last_response_body = :responseBody, last_error = :error,
                  last_attempt_at = now(), completed_at = CASE WHEN :status = 'PENDING' THEN NULL ELSE now() END,
                  redrive_on_enable = :held, updated_at = now()
            WHERE id = :id AND status = 'PENDING'
        RETURNING id, endpoint_id, attempts),
         logged AS (
         INSERT INTO webhook_delivery_attempt
                (delivery_id, attempt, outcome, started_at, duration_ms, response_status, response_body, error)
         SELECT id, attempts, :outcome, :startedAt, :durationMs, :responseStatus, :responseBody, :error FROM updated),
         ${HEALTH_CTE}
         SELECT (SELECT auto_disabled FROM health) AS auto_disabled FROM updated`,
        {
          id,
          status: r.status,
          outcome: r.status === 'PENDING' ? 'RETRYING' : r.status,
          responseStatus: r.responseStatus,
          responseBody: r.responseBody,
          error: r.error,
          startedAt: r.startedAt,
          durationMs: r.durationMs === null ? null : Math.round(r.durationMs),
          held: r.skipped === 'endpoint_disabled',
          counts: r.status !== 'PENDING' && r.skipped === undefined,
        },
      );
      const row = res.rows[0];
      return row ? { autoDisabled: row.auto_disabled === true } : null;
    },

    /** Replay: a FAILED delivery goes back to PENDING. Returns false when it was not FAILED. */
    async reopenFailed(id: string): Promise<boolean> {
      const n = await db('webhook_delivery')
        .where({ id, status: 'FAILED' })
        .update({ status: 'PENDING', completed_at: null, updated_at: db.fn.now() });
      return n > 0;
    },
  };
}

export type DeliveryRepository = ReturnType<typeof createDeliveryRepository>;
