import type { Knex } from 'knex';
import type { Db } from './knex.js';
import { aboutEndpoint, recordOperationalEvent, resourceName } from './operational-events.js';
import { decodeOrderingKey } from '../domain/ordering.js';

/**
 * The sequences of ordered deliveries in Postgres (docs/ordering.md). A delivery *holds its key*
 * while it is ordered, not SUCCESS and not skipped (ordering_skipped); its turn has come when no
 * delivery of its sequence with an earlier position holds the key and no earlier event of its
 * source is still to be prepared. Every decision is made here, in one transaction under the
 * delivery's row lock; the workflow only waits and signals what these answer.
 *
 * Why no wake-up is lost: a delivery that waits records its waiter under its own row lock, in
 * the transaction that found its predecessor holding the key; the predecessor's release commits
 * its end first and then locks the next delivery of the sequence (waiting for that transaction),
 * so it either sees the waiter or the waiter saw the end.
 */

/** What a turn check answers. */
export type Turn =
  /** deliver now; outOfOrder: a delivery that no longer holds its key, sent again by a replay */
  | { turn: 'go'; outOfOrder: boolean }
  /**
   * wait: behind a delivery that holds the key (woken by the signal its end sends), or behind an
   * event not prepared yet, or a delivery whose key is not decided yet (behind null or undecided:
   * nothing signals, the workflow checks again after a timer)
   */
  | { turn: 'wait'; behind: string | null; wake: 'signal' | 'timer' };

/** A workflow to signal: the one waiting for the turn of `deliveryId`. */
export interface Wake {
  workflowId: string;
  deliveryId: string;
}

/** What the end of an ordered delivery did to its key. */
export interface Release {
  /** it still holds its key: FAILED under Block (or held for a disabled endpoint) */
  holds: boolean;
  /** the delivery behind it that now may go, when a workflow waits for it */
  wake?: Wake;
  /** the endpoint, for the log of a blocked key */
  endpointId?: string;
}

interface OrderedRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  status: string;
  attempts: number;
  ordering_blocked_at: Date | null;
  endpoint_name: string;
  namespace: string | null;
  resource_uid: string | null;
  ordering_position: number | null;
  ordering_key: string | null;
  ordering_skipped: boolean;
  redrive_on_enable: boolean;
  source: string;
  event_type: string | null;
  active: boolean;
  denied_reason: string | null;
  ordering_on_failure: string | null;
}

/** The row with what its endpoint says now, locked. */
async function lockOrdered(trx: Knex.Transaction, id: string): Promise<OrderedRow | undefined> {
  const res = await trx.raw<{ rows: OrderedRow[] }>(
    `SELECT d.id, d.event_id, d.endpoint_id, d.status, d.attempts, d.ordering_position, d.ordering_key, d.ordering_skipped,
            d.redrive_on_enable, d.ordering_blocked_at, ep.name AS endpoint_name, ep.namespace, ep.resource_uid,
            ep.source, ep.event_type, ep.active, ep.denied_reason, ep.ordering_on_failure
       FROM webhook_delivery d JOIN webhook_endpoint ep ON ep.id = d.endpoint_id
      WHERE d.id = ? FOR UPDATE OF d`,
    [id],
  );
  return res.rows[0];
}

/** Its endpoint no longer orders, or sends nothing any more (removed, revoked): its deliveries go, and fail at once. */
const unordered = (r: OrderedRow): boolean => r.ordering_on_failure === null || !r.active || r.denied_reason !== null;

/** What a turn check reads: the delivery just before it that holds the key, and whether an event between is not prepared yet. */
interface Before {
  /** the delivery just before it in its sequence that holds the key (an undecided one included), if any */
  p?: { id: string; ordering_key: string | null; ordering_position: number };
  /**
   * an earlier event of its source this endpoint may get, after the predecessor (or from the
   * start), not prepared yet: its key is not known, and once prepared its delivery may come
   * between the two
   */
  gap: boolean;
}

/**
 * Both in one statement, so one snapshot: read apart, an earlier event's prepare could commit
 * between the two reads (its delivery not seen by the first, its event seen prepared by the
 * second), and the later delivery would go before it. Under load the window was wide enough for
 * test/api/ordering.test.ts to see it (test/db/ordering-turn.test.ts holds the window open).
 */
async function before(trx: Knex.Transaction, r: OrderedRow): Promise<Before> {
  // each branch of p an index scan of webhook_delivery_ordering_holds_idx, its predicate repeated;
  // the gap an index scan of webhook_event_unprepared_position_idx
  const res = await trx.raw<{
    rows: Array<{ id: string | null; ordering_key: string | null; ordering_position: number | null; gap: boolean }>;
  }>(
    `WITH p AS (
       SELECT id, ordering_key, ordering_position FROM (
         (SELECT id, ordering_key, ordering_position FROM webhook_delivery
           WHERE endpoint_id = :endpointId AND ordering_key = :key AND ordering_position < :position
             AND ordering_position IS NOT NULL AND NOT ordering_skipped AND status <> 'SUCCESS'
           ORDER BY ordering_position DESC LIMIT 1)
         UNION ALL
         (SELECT id, ordering_key, ordering_position FROM webhook_delivery
           WHERE endpoint_id = :endpointId AND ordering_key IS NULL AND ordering_position < :position
             AND ordering_position IS NOT NULL AND NOT ordering_skipped AND status <> 'SUCCESS'
           ORDER BY ordering_position DESC LIMIT 1)) b
       ORDER BY ordering_position DESC LIMIT 1)
     SELECT p.id, p.ordering_key, p.ordering_position,
            EXISTS (SELECT 1 FROM webhook_event
                     WHERE source = :source AND position < :position
                       AND position > coalesce((SELECT ordering_position FROM p), 0)
                       AND status = 'RECEIVED' AND workflow_id IS NULL AND position IS NOT NULL
                       AND (:eventType::text IS NULL OR event_type = :eventType::text)) AS gap
       FROM (SELECT 1) one LEFT JOIN p ON true`,
    { endpointId: r.endpoint_id, key: r.ordering_key ?? '', position: r.ordering_position, source: r.source, eventType: r.event_type },
  );
  const row = res.rows[0];
  const gap = row?.gap === true;
  if (!row || row.id === null || row.ordering_position === null) return { gap };
  return { p: { id: row.id, ordering_key: row.ordering_key, ordering_position: row.ordering_position }, gap };
}

/** Whether the row still holds its key; releases it first when its end does (FAILED under Skip, revoked, removed). */
async function settleHold(trx: Knex.Transaction, r: OrderedRow): Promise<boolean> {
  if (r.status === 'SUCCESS' || r.ordering_skipped) return false;
  if (r.status !== 'FAILED') return true;
  // a delivery held for a disabled endpoint keeps its key under either policy: the redrive on
  // enable sends it, in order (docs/ordering.md, "With the rest of the service")
  const release = unordered(r) || (r.ordering_on_failure === 'Skip' && !r.redrive_on_enable);
  if (!release) return true;
  await trx('webhook_delivery').where({ id: r.id }).update({ ordering_skipped: true });
  return false;
}

/** The delivery after `r` in its sequence that holds the key, locked, when a workflow waits for it behind `r` (or behind nothing known). */
async function nextWaiting(trx: Knex.Transaction, r: OrderedRow, opts: { anyBehind?: boolean } = {}): Promise<Wake | undefined> {
  const res = await trx.raw<{ rows: Array<{ id: string; ordering_waiter: string | null; ordering_behind: string | null }> }>(
    `SELECT id, ordering_waiter, ordering_behind FROM webhook_delivery
      WHERE endpoint_id = :endpointId AND ordering_key = :key AND ordering_position > :position
        AND ordering_position IS NOT NULL AND NOT ordering_skipped AND status <> 'SUCCESS'
      ORDER BY ordering_position LIMIT 1 FOR UPDATE`,
    { endpointId: r.endpoint_id, key: r.ordering_key ?? '', position: r.ordering_position },
  );
  const n = res.rows[0];
  if (!n?.ordering_waiter || (!opts.anyBehind && n.ordering_behind !== null && n.ordering_behind !== r.id)) return undefined;
  return { workflowId: n.ordering_waiter, deliveryId: n.id };
}

/**
 * ordering.key_blocked when a FAILED delivery begins to hold its key, ordering.key_unblocked when
 * a delivery that blocked its key stops holding it (docs/operations-events.md), in the
 * transaction that decides it; ordering_blocked_at says which it is now. Once per change: the
 * event's key is the delivery and its attempt count.
 */
async function noteBlocked(trx: Knex.Transaction, source: string, r: OrderedRow, holds: boolean): Promise<void> {
  const blocked = holds && r.status === 'FAILED';
  if (blocked === (r.ordering_blocked_at !== null)) return;
  await trx('webhook_delivery')
    .where({ id: r.id })
    .update({ ordering_blocked_at: blocked ? trx.fn.now() : null });
  const endpoint = {
    id: r.endpoint_id,
    namespace: r.namespace,
    name: resourceName(r.endpoint_name, r.namespace),
    uid: r.resource_uid,
    source: r.source,
  };
  const about = aboutEndpoint(endpoint);
  await recordOperationalEvent(trx, source, {
    type: blocked ? 'ordering.key_blocked' : 'ordering.key_unblocked',
    key: `${r.id}:${r.attempts}`,
    subject: about.subject,
    data: { ...about.data, key: decodeOrderingKey(r.ordering_key) ?? null, deliveryId: r.id, eventId: r.event_id },
  });
}

/**
 * The blocked keys of the endpoint `ep`: keys whose sequence has a delivery that holds the key
 * after it FAILED (ordering_blocked_at, set with ordering.key_blocked). It walks
 * webhook_delivery_ordering_holds_idx (the deliveries that hold a key: waiting and blocking), not
 * the endpoint's history.
 */
const BLOCKED_KEYS = `(SELECT count(DISTINCT d.ordering_key)::int FROM webhook_delivery d
   WHERE d.endpoint_id = ep.id AND d.ordering_blocked_at IS NOT NULL
     AND d.ordering_position IS NOT NULL AND NOT d.ordering_skipped AND d.status <> 'SUCCESS')`;

/** `operationsSource`: the reserved source of operational events (ordering.key_blocked / _unblocked). */
export function createOrderingRepository(db: Db, operationsSource: string) {
  async function turnAndNext(deliveryId: string, workflowId: string, withNext: boolean): Promise<{ turn: Turn; wake?: Wake }> {
    return db.transaction(async (trx) => {
      const r = await lockOrdered(trx, deliveryId);
      if (!r || r.status !== 'PENDING' || r.ordering_position === null || unordered(r)) return { turn: { turn: 'go', outOfOrder: false } };
      let answer: Turn;
      if (r.ordering_skipped) answer = { turn: 'go', outOfOrder: true };
      else if (r.ordering_key === null) answer = { turn: 'wait', behind: null, wake: 'timer' };
      else {
        // the release of the delivery just before it signals it, when there is nothing between
        // the two that may still become a delivery of the sequence (it would be the one signalled)
        const { p, gap } = await before(trx, r);
        if (p) answer = { turn: 'wait', behind: p.id, wake: p.ordering_key === null || gap ? 'timer' : 'signal' };
        else if (gap) answer = { turn: 'wait', behind: null, wake: 'timer' };
        else answer = { turn: 'go', outOfOrder: false };
      }
      await trx('webhook_delivery')
        .where({ id: deliveryId })
        .update(
          answer.turn === 'wait'
            ? { ordering_waiter: workflowId, ordering_behind: answer.behind, ordering_waiting_since: trx.fn.now() }
            : { ordering_waiter: null, ordering_behind: null, ordering_waiting_since: null },
        );
      const wake = withNext && r.ordering_key !== null ? await nextWaiting(trx, r, { anyBehind: true }) : undefined;
      return wake ? { turn: answer, wake } : { turn: answer };
    });
  }

  return {
    /**
     * Whether an ordered delivery may go now; a delivery that may not records `workflowId` as its
     * waiter (and what it waits behind) in the same transaction. A delivery that is not ordered,
     * not PENDING, or of an endpoint that no longer orders or sends goes at once.
     */
    async turn(deliveryId: string, workflowId: string): Promise<Turn> {
      return (await turnAndNext(deliveryId, workflowId, false)).turn;
    },

    /**
     * prepare's turn check, when the delivery's row has just been put in place: also the waiting
     * delivery after it in its sequence, which may have waited (on a timer) for this event to be
     * prepared, to wake now that its place is known.
     */
    async firstTurn(deliveryId: string, workflowId: string): Promise<{ turn: Turn; wake?: Wake }> {
      return turnAndNext(deliveryId, workflowId, true);
    },

    /**
     * After an ordered delivery ended: whether it still holds its key (releasing it when its end
     * does), and the waiting delivery behind it to wake when it does not.
     */
    async release(deliveryId: string): Promise<Release> {
      return db.transaction(async (trx) => {
        const r = await lockOrdered(trx, deliveryId);
        if (!r || r.ordering_position === null || r.ordering_key === null) return { holds: false };
        const holds = await settleHold(trx, r);
        await noteBlocked(trx, operationsSource, r, holds);
        if (holds) return { holds: true, endpointId: r.endpoint_id };
        const wake = await nextWaiting(trx, r);
        return wake ? { holds: false, wake } : { holds: false };
      });
    },

    /**
     * An operator's skip (POST /api/deliveries/{id}/skip): a FAILED ordered delivery that holds its
     * key stops holding it, stays FAILED. 'not_skippable' when it is not one; else the wake-up.
     */
    async skip(deliveryId: string): Promise<'not_skippable' | { wake?: Wake }> {
      return db.transaction(async (trx) => {
        const r = await lockOrdered(trx, deliveryId);
        if (!r || r.ordering_position === null || r.ordering_key === null || r.status !== 'FAILED' || r.ordering_skipped) {
          return 'not_skippable';
        }
        await trx('webhook_delivery').where({ id: r.id }).update({ ordering_skipped: true });
        await noteBlocked(trx, operationsSource, r, false);
        const wake = await nextWaiting(trx, r);
        return wake ? { wake } : {};
      });
    },

    /**
     * Every ordered endpoint (active) with its blocked keys: keys whose sequence has a delivery
     * that holds the key after it FAILED (ordering_blocked_at, written with ordering.key_blocked).
     * For the gauge webhook_fanout_ordering_blocked_keys and the WebhookEndpoint's status.
     */
    async blockedKeys(): Promise<Array<{ endpointId: string; name: string; resourceUid: string | null; blockedKeys: number }>> {
      const res = await db.raw<{ rows: Array<{ id: string; name: string; resource_uid: string | null; blocked: number }> }>(
        `SELECT ep.id, ep.name, ep.resource_uid, ${BLOCKED_KEYS} AS blocked
           FROM webhook_endpoint ep
          WHERE ep.ordering_on_failure IS NOT NULL AND ep.active
          ORDER BY ep.name`,
      );
      return res.rows.map((r) => ({ endpointId: r.id, name: r.name, resourceUid: r.resource_uid, blockedKeys: r.blocked }));
    },

    /** One endpoint's blocked keys (as blockedKeys counts them): its WebhookEndpoint's status. */
    async blockedKeysOf(endpointId: string): Promise<number> {
      const res = await db.raw<{ rows: Array<{ blocked: number }> }>(
        `SELECT ${BLOCKED_KEYS} AS blocked FROM webhook_endpoint ep WHERE ep.id = ?`,
        [endpointId],
      );
      return res.rows[0]?.blocked ?? 0;
    },

    /**
     * Waiting deliveries a lost wake-up may have left waiting (temporal/ordering-waker.ts): waiting
     * longer than `afterSeconds` behind a delivery that no longer holds its key (or is gone), or on
     * an endpoint that no longer orders or sends. Their waiting time starts again, so a pass does
     * not signal them again before another `afterSeconds`.
     */
    async stalled(afterSeconds: number, limit: number): Promise<Wake[]> {
      const res = await db.raw<{ rows: Array<{ id: string; ordering_waiter: string }> }>(
        `UPDATE webhook_delivery w SET ordering_waiting_since = now()
           FROM (SELECT d.id FROM webhook_delivery d JOIN webhook_endpoint ep ON ep.id = d.endpoint_id
                  WHERE d.ordering_waiter IS NOT NULL AND d.ordering_waiting_since < now() - make_interval(secs => :afterSeconds)
                    AND d.status = 'PENDING'
                    AND (NOT ep.active OR ep.denied_reason IS NOT NULL OR ep.ordering_on_failure IS NULL
                         OR (d.ordering_behind IS NOT NULL AND NOT EXISTS (
                               SELECT 1 FROM webhook_delivery p
                                WHERE p.id = d.ordering_behind AND NOT p.ordering_skipped AND p.status <> 'SUCCESS')))
                  ORDER BY d.ordering_waiting_since LIMIT :limit
                  FOR UPDATE OF d SKIP LOCKED) s
          WHERE w.id = s.id AND w.ordering_waiter IS NOT NULL
         RETURNING w.id, w.ordering_waiter`,
        { afterSeconds, limit },
      );
      return res.rows.map((r) => ({ workflowId: r.ordering_waiter, deliveryId: r.id }));
    },
  };
}
