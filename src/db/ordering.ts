import type { Knex } from 'knex';
import { prepared, type Db } from './knex.js';
import { aboutEndpoint, recordOperationalEvent, resourceName } from './operational-events.js';
import { decodeOrderingKey } from '../domain/ordering.js';
import type { WebhookEvent } from '../domain/records.js';
import { finishIfSettled, type FinishedEvent } from './events.js';

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
 * so it either sees the waiter or the waiter saw the end. A delivery that waits for an earlier
 * event of its sequence not prepared yet is pointed at that event's delivery by its prepare, in
 * the same way (under the waiting row's lock), and then woken by its end: one signal per wait.
 */

/** What a turn check answers. */
export type Turn =
  /** deliver now; outOfOrder: a delivery that no longer holds its key, sent again by a replay */
  | {
      turn: 'go';
      outOfOrder: boolean;
      /**
       * a releasing activity made its attempt (the handoff, docs/ordering.md): 'ended', it ended
       * and released the key (the run completes, no request); retryInMs, it failed and the run
       * retries after that delay, continuing the row's attempts
       */
      handedOff?: 'ended' | { retryInMs: number };
    }
  /**
   * wait for a signal: behind a delivery that holds the key or will (its key not decided yet: the
   * signal its end sends), or behind an event of the sequence not prepared yet (behind null: its
   * prepare points this one at its delivery). For a timer, when the check could not tell (too many
   * earlier events not prepared yet, or its own key not decided): the workflow checks again.
   */
  | {
      turn: 'wait';
      behind: string | null;
      wake: 'signal' | 'timer';
      /** its waiter is its continuation's id (left to its key's chain): no run waits for it now */
      detached?: true;
    };

/** The endpoint whose sequence a turn check reads, as a SequenceJudge needs it. */
export interface SequenceEndpoint {
  id: string;
  /** spec.ordering.key, null: the whole endpoint is one sequence */
  keyCel: string | null;
  filter: string | null;
}

/** An earlier event not prepared yet, as a SequenceJudge reads it. */
export type CandidateEvent = Pick<WebhookEvent, 'id' | 'source' | 'eventType' | 'externalEventId' | 'receivedAt' | 'headers' | 'payload'>;

/**
 * Which earlier events, not prepared yet or their keys not decided, join a delivery's sequence
 * (activities/sequence-judge.ts: the endpoint's filter and key over the event, as prepare will
 * evaluate them). Only those hold the delivery back; an event of another key does not.
 */
export interface SequenceJudge {
  /**
   * The index of the first of `eventIds` (latest first) whose event joins the sequence `key` (as
   * the column stores it) of `endpoint`, or -1 when none does. `load` reads events by id.
   */
  firstMember(
    endpoint: SequenceEndpoint,
    key: string,
    eventIds: readonly string[],
    load: (ids: readonly string[]) => Promise<CandidateEvent[]>,
  ): Promise<number>;
}

/** Without a judge every earlier event not prepared yet may join: the latest holds the delivery back. */
const EVERY_EVENT_JOINS: SequenceJudge = { firstMember: (_endpoint, _key, ids) => Promise.resolve(ids.length > 0 ? 0 : -1) };

/**
 * How many earlier events not prepared yet (or undecided deliveries) a turn check judges at most;
 * with more, and none of them joining, it waits on a timer as before the judge (a backlog, rare).
 */
export const ORDERING_CANDIDATES_MAX = 200;

/**
 * A FAILED delivery that a handoff still claims is not reopened (a replay, a bulk replay, the
 * redrive): the attempt that failed it has not released it yet, and reopened under the claim it
 * would be sent by the replay's run beside the run the release wakes, or by neither (issue 41's
 * review, R3-1). The release clears the claim within moments; a lost worker's claim is cleared by
 * the continuation the waker starts once its lease ran out. SQL over the row's alias.
 */
export const notClaimedByHandoff = (alias: string): string => `${alias}.ordering_handoff IS DISTINCT FROM 'claimed'`;

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
  /**
   * The handoff: the woken delivery's turn has come and it was claimed for the releasing
   * activity, which makes its attempt and then signals `wake` (docs/ordering.md, "The handoff").
   */
  claimed?: Claim;
  /**
   * The delivery ended by the handoff had been left to its key's chain (no run waits for it): its
   * end finished its event when it was the event's last PENDING delivery ('pending': it was not).
   */
  finished?: { eventId: string; event: FinishedEvent | 'pending' | undefined };
  /**
   * A delivery after this one that a chain from it had ended but not released (its release
   * failed: strandedAfter), ended and released here in turn; `holds`, `wake` and `claimed` are then
   * its own. Its run is to be told (`wake`), or its event was finished (`finished`, left to its
   * key's chain), as after the chain's own release(ended).
   */
  adopted?: {
    deliveryId: string;
    wake?: Wake;
    finished?: { eventId: string; event: FinishedEvent | 'pending' | undefined };
    /**
     * Not ended: its handed-off attempt failed and was recorded, but the chain's handoffEnd did not
     * commit (strandedAfter). It is left to its run's retry as handoffEnd would have left it, and
     * still holds its key; its run is told (`wake`).
     */
    retried?: true;
    /**
     * Not ended, not attempted: claimed by a chain whose handed-off attempt made no request (a limit
     * said wait, the rows could not be read) and whose handoffEnd('dropped') failed; the claim was
     * never renewed, so no request can start. Given back to its run as handoffEnd would have, and
     * its run is told (`wake`).
     */
    dropped?: true;
  };
}

/** A delivery claimed by a releasing activity: what its attempt needs. */
export interface Claim {
  deliveryId: string;
  /** the endpoint's max_attempts now (the waiting run's plan has the same unless it changed since) */
  maxAttempts: number;
  /** the endpoint's timeout: the claim's lease is this plus the margin */
  timeoutSeconds: number;
}

/** What a release may do besides releasing: claim the delivery it wakes (the handoff). */
export interface HandoffOptions {
  judge: SequenceJudge;
  /** the claim's lease beyond the endpoint's timeout: loading the rows and recording the attempt */
  leaseMarginMs: number;
  /** the releasing run: a delivery it waits for itself is not claimed (it counts its own wake-up) */
  workflowId: string;
  /** whether there is time left for an attempt of `timeoutSeconds` (the releasing activity's budget) */
  mayAttempt: (timeoutSeconds: number) => boolean;
}

/** What a release is told besides its delivery. */
export interface ReleaseOptions {
  /** the handoff: claim the delivery it wakes when it can */
  handoff?: HandoffOptions;
  /** the delivery was the handoff's own attempt, which ended it (release above) */
  ended?: boolean;
  /**
   * A handed-off attempt that failed and whose 'retry' was not written (strandedAfter) is retried
   * by its run this long from now: the delay after a first attempt (the endpoint's backoff). 0 when
   * not given.
   */
  retryInMs?: number;
  /**
   * The releasing activity is a retry (its attempt before failed): a chain of that attempt may have
   * stopped at a delivery whose end it recorded and whose release failed, with nothing after it
   * that holds the key to lead there (the last of its key): endedAfter finds it.
   */
  retried?: boolean;
}

/** How a handed-off attempt ended, as its row keeps it for its run's turn check. */
export type HandoffEnd =
  /** it ended the delivery, SUCCESS or FAILED: released (or not) by release(id, { ended: true }) */
  | 'ended'
  /** it failed and is retried by the run, from now + retryInMs */
  | { retryInMs: number }
  /** it was not made (a gate said wait, something unusual): the run delivers it as without a handoff */
  | 'dropped';

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
  ordering_key_cel: string | null;
  filter: string | null;
  ordering_waiter: string | null;
  ordering_behind: string | null;
  ordering_handoff: 'accepts' | 'claimed' | 'ended' | 'retry' | null;
  /** left to its key's chain: its waiter is its continuation's id and no run waits (migration 091) */
  ordering_detached: boolean | null;
  /** ms from now to ordering_handoff_until (negative: past) */
  handoff_in_ms: number | null;
  /** the claim was renewed right before its request (migration 093): false, no request was made */
  ordering_handoff_renewed: boolean | null;
  max_attempts: number;
  timeout_seconds: number;
}

/**
 * The row with what its endpoint says now, locked. `skipLocked`: undefined at once when another
 * transaction holds its lock (strandedAfter's lock against the sequence's order).
 */
async function lockOrdered(trx: Knex.Transaction, id: string, skipLocked = false): Promise<OrderedRow | undefined> {
  const res = await prepared<{ rows: OrderedRow[] }>(
    trx,
    skipLocked ? 'ordering.lockIfFree' : 'ordering.lock',
    `SELECT d.id, d.event_id, d.endpoint_id, d.status, d.attempts, d.ordering_position, d.ordering_key, d.ordering_skipped,
            d.redrive_on_enable, d.ordering_blocked_at, d.ordering_waiter, d.ordering_behind, d.ordering_handoff, d.ordering_detached,
            d.ordering_handoff_renewed,
            (extract(epoch FROM d.ordering_handoff_until - now()) * 1000)::float8 AS handoff_in_ms,
            ep.name AS endpoint_name, ep.namespace, ep.resource_uid, ep.source, ep.event_type, ep.active, ep.denied_reason,
            ep.ordering_on_failure, ep.ordering_key_cel, ep.filter, ep.max_attempts, ep.timeout_seconds
       FROM webhook_delivery d JOIN webhook_endpoint ep ON ep.id = d.endpoint_id
      WHERE d.id = ? FOR UPDATE OF d${skipLocked ? ' SKIP LOCKED' : ''}`,
    [id],
  );
  return res.rows[0];
}

/** Its endpoint no longer orders, or sends nothing any more (removed, revoked): its deliveries go, and fail at once. */
const unordered = (r: OrderedRow): boolean => r.ordering_on_failure === null || !r.active || r.denied_reason !== null;

/** An earlier event that may still join a delivery's sequence: a delivery whose key is not decided yet, or an event not prepared yet. */
interface Candidate {
  /** the delivery, null: the event is not prepared yet */
  delivery: string | null;
  event: string;
}

/** What a turn check reads. */
interface Before {
  /** the delivery just before it in its sequence that holds the key, if any */
  p?: string;
  /**
   * after the predecessor (or from the start), latest first: the endpoint's deliveries whose key
   * is not decided yet, and the earlier events of its source this endpoint may get that are not
   * prepared yet (an event is prepared when its run is recorded on it, with its deliveries); once
   * decided or prepared, one may come between the two. At most ORDERING_CANDIDATES_MAX + 1.
   */
  candidates: Candidate[];
}

/**
 * All in one statement, so one snapshot: read apart, an earlier event's prepare could commit
 * between the reads (its delivery not seen by the first, its event seen prepared by the second),
 * and the later delivery would go before it. Under load the window was wide enough for
 * test/api/ordering.test.ts to see it (test/db/ordering-turn.test.ts holds the window open).
 */
async function before(trx: Knex.Transaction, r: OrderedRow): Promise<Before> {
  // p and the undecided deliveries index scans of webhook_delivery_ordering_holds_idx, its
  // predicate repeated; the events an index scan of webhook_event_unprepared_position_idx
  const res = await prepared<{ rows: Array<{ p: string | null; candidates: Candidate[] }> }>(
    trx,
    'ordering.before',
    `WITH p AS (
       SELECT id, ordering_position FROM webhook_delivery
        WHERE endpoint_id = :endpointId AND ordering_key = :key AND ordering_position < :position
          AND ordering_position IS NOT NULL AND NOT ordering_skipped AND status <> 'SUCCESS'
        ORDER BY ordering_position DESC LIMIT 1),
     c AS (
       (SELECT d.id AS delivery, d.event_id AS event, d.ordering_position AS position FROM webhook_delivery d
         WHERE d.endpoint_id = :endpointId AND d.ordering_key IS NULL AND d.ordering_position < :position
           AND d.ordering_position > coalesce((SELECT ordering_position FROM p), 0)
           AND d.ordering_position IS NOT NULL AND NOT d.ordering_skipped AND d.status <> 'SUCCESS'
         ORDER BY d.ordering_position DESC LIMIT :limit)
       UNION ALL
       (SELECT NULL::uuid, e.id, e.position FROM webhook_event e
         WHERE e.source = :source AND e.position < :position AND e.position > coalesce((SELECT ordering_position FROM p), 0)
           AND e.status = 'RECEIVED' AND e.workflow_id IS NULL AND e.position IS NOT NULL
           AND (:eventType::text IS NULL OR e.event_type = :eventType::text)
         ORDER BY e.position DESC LIMIT :limit))
     SELECT (SELECT id FROM p) AS p,
            coalesce((SELECT json_agg(json_build_object('delivery', l.delivery, 'event', l.event) ORDER BY l.position DESC)
                        FROM (SELECT * FROM c ORDER BY position DESC LIMIT :limit) l), '[]'::json) AS candidates`,
    {
      endpointId: r.endpoint_id,
      key: r.ordering_key ?? '',
      position: r.ordering_position,
      source: r.source,
      eventType: r.event_type,
      limit: ORDERING_CANDIDATES_MAX + 1,
    },
  );
  const row = res.rows[0];
  return { ...(row?.p ? { p: row.p } : {}), candidates: row?.candidates ?? [] };
}

/** The fields of earlier events a SequenceJudge evaluates the endpoint's filter and key over. */
async function loadCandidates(trx: Knex, ids: readonly string[]): Promise<CandidateEvent[]> {
  const res = await trx.raw<{
    rows: Array<{
      id: string;
      source: string;
      event_type: string | null;
      external_event_id: string | null;
      received_at: Date;
      headers: Record<string, string> | null;
      payload: Buffer | null;
    }>;
  }>(`SELECT id, source, event_type, external_event_id, received_at, headers, payload FROM webhook_event WHERE id = ANY(?::uuid[])`, [
    [...ids],
  ]);
  return res.rows.map((e) => ({
    id: e.id,
    source: e.source,
    eventType: e.event_type,
    externalEventId: e.external_event_id,
    receivedAt: e.received_at,
    headers: e.headers ?? {},
    payload: e.payload ?? Buffer.alloc(0),
  }));
}

/**
 * Where an ordered delivery stands: go, or wait behind what comes first in its sequence. The
 * latest earlier event that joins the sequence (judged over the undecided and unprepared
 * candidates) holds it back, else the predecessor that holds the key. Events of other keys do
 * not: with many keys, most deliveries go at once however their events raced through the queue.
 */
async function turnOf(trx: Knex.Transaction, r: OrderedRow & { ordering_key: string }, judge: SequenceJudge): Promise<Turn> {
  const { p, candidates } = await before(trx, r);
  const judged = candidates.slice(0, ORDERING_CANDIDATES_MAX);
  const endpoint: SequenceEndpoint = { id: r.endpoint_id, keyCel: r.ordering_key_cel, filter: r.filter };
  const member =
    judged[
      await judge.firstMember(
        endpoint,
        r.ordering_key,
        judged.map((c) => c.event),
        (ids) => loadCandidates(trx, ids),
      )
    ];
  // a delivery not decided yet is signalled by its end like any predecessor; an event not
  // prepared yet points this one at its delivery when it is prepared (pointNextAt)
  if (member) return { turn: 'wait', behind: member.delivery, wake: 'signal' };
  if (candidates.length > judged.length) return { turn: 'wait', behind: p ?? null, wake: 'timer' };
  if (p) return { turn: 'wait', behind: p, wake: 'signal' };
  return { turn: 'go', outOfOrder: false };
}

/**
 * Where a locked ordered row stands, read only: a run's turn check and the handoff's claim ask
 * this same question. Not PENDING, not ordered, or of an endpoint that no longer orders or sends:
 * it goes (and its attempt fails at once when revoked or removed).
 */
async function answerOf(trx: Knex.Transaction, r: OrderedRow, judge: SequenceJudge): Promise<Turn> {
  if (r.status !== 'PENDING' || r.ordering_position === null || unordered(r)) return { turn: 'go', outOfOrder: false };
  if (r.ordering_skipped) return { turn: 'go', outOfOrder: true };
  if (r.ordering_key === null) return { turn: 'wait', behind: null, wake: 'timer' };
  return turnOf(trx, { ...r, ordering_key: r.ordering_key }, judge);
}

/**
 * quickGo's write of the key prepare decided (deliveries.prepareRun's deferKeys), in the same
 * statement: the row as it is after it (coalesce: a retried prepare's key stays). Its row lock is
 * taken before the next delivery's (n), in the sequence's order, as every release takes them.
 */
const KEY_WRITE = `k AS (
       UPDATE webhook_delivery SET ordering_key = coalesce(ordering_key, :key)
        WHERE id = :id AND status = 'PENDING' AND ordering_position IS NOT NULL
       RETURNING id, endpoint_id, status, ordering_key, ordering_position, ordering_skipped, ordering_waiter, ordering_handoff,
                 ordering_detached),
     `;

/** quickGo's statement; `keyed`: it writes the key first (KEY_WRITE). */
const quickGoSql = (keyed: boolean): string => `WITH ${keyed ? KEY_WRITE : ''}r AS (
       SELECT d.id, d.endpoint_id, d.ordering_key, d.ordering_position, ep.source, ep.event_type, ep.ordering_key_cel, ep.filter
         FROM ${keyed ? 'k' : 'webhook_delivery'} d JOIN webhook_endpoint ep ON ep.id = d.endpoint_id
        WHERE d.id = :id AND d.status = 'PENDING' AND d.ordering_position IS NOT NULL AND d.ordering_key IS NOT NULL
          AND NOT d.ordering_skipped AND d.ordering_waiter IS NULL AND d.ordering_handoff IS NULL AND d.ordering_detached IS NULL
          AND ep.ordering_on_failure IS NOT NULL AND ep.active AND ep.denied_reason IS NULL),
     p AS (
       SELECT id FROM webhook_delivery
        WHERE endpoint_id = (SELECT endpoint_id FROM r) AND ordering_key = (SELECT ordering_key FROM r)
          AND ordering_position < (SELECT ordering_position FROM r)
          AND ordering_position IS NOT NULL AND NOT ordering_skipped AND status <> 'SUCCESS'
        LIMIT 1),
     c AS (
       (SELECT d.id AS delivery, d.event_id AS event, d.ordering_position AS position FROM webhook_delivery d
         WHERE d.endpoint_id = (SELECT endpoint_id FROM r) AND d.ordering_key IS NULL
           AND d.ordering_position < (SELECT ordering_position FROM r)
           AND d.ordering_position IS NOT NULL AND NOT d.ordering_skipped AND d.status <> 'SUCCESS'
         ORDER BY d.ordering_position DESC LIMIT :limit)
       UNION ALL
       (SELECT NULL::uuid, e.id, e.position FROM webhook_event e
         WHERE e.source = (SELECT source FROM r) AND e.position < (SELECT ordering_position FROM r)
           AND e.status = 'RECEIVED' AND e.workflow_id IS NULL AND e.position IS NOT NULL
           AND ((SELECT event_type FROM r) IS NULL OR e.event_type = (SELECT event_type FROM r))
         ORDER BY e.position DESC LIMIT :limit)),
     n AS (
       SELECT id, ordering_waiter, ordering_behind FROM webhook_delivery
        WHERE endpoint_id = (SELECT endpoint_id FROM r) AND ordering_key = (SELECT ordering_key FROM r)
          AND ordering_position > (SELECT ordering_position FROM r)
          AND ordering_position IS NOT NULL AND NOT ordering_skipped AND status <> 'SUCCESS'
        ORDER BY ordering_position LIMIT 1 FOR UPDATE)
     SELECT r.id, r.endpoint_id, r.ordering_key, r.ordering_key_cel, r.filter, (SELECT id FROM p) AS p,
            coalesce((SELECT json_agg(json_build_object('delivery', l.delivery, 'event', l.event) ORDER BY l.position DESC)
                        FROM (SELECT delivery, event, position FROM c ORDER BY position DESC LIMIT :limit) l), '[]'::json) AS candidates,
            (SELECT ordering_waiter FROM n) AS n_waiter, (SELECT ordering_behind FROM n) AS n_behind
       FROM r`;

/**
 * The common path of prepare's turn check, in one statement and no transaction (issue 41's cost):
 * a delivery just put in place, nothing recorded on it yet, whose turn has come (nothing earlier in
 * its sequence holds the key, and no earlier event not prepared yet or delivery not decided yet
 * joins it, as the judge says), and whose next delivery in the sequence, if any, needs no pointing
 * at it (pointNextAt). Undefined for anything else: the caller then asks in a transaction (check).
 *
 * Why "go" needs no lock of its own row: it is read from one snapshot (as `before` reads it), and
 * nothing that held the key in it stops holding and starts again, nor does an earlier event not
 * prepared in it get a delivery that it did not judge; a stale snapshot can only show more that
 * holds the key (then the transaction asks again). The row's lock serialises recording a wait
 * against a release, and this records none. The next delivery is locked (FOR UPDATE, in the same
 * statement) as pointNextAt locks it, so a turn check of it that is recording a wait behind this
 * event finishes first and is seen here (then the transaction points it).
 */
async function quickGo(db: Db, deliveryId: string, judge: SequenceJudge, key?: string): Promise<boolean> {
  const keyed = key !== undefined;
  const res = await prepared<{
    rows: Array<{
      endpoint_id: string;
      ordering_key: string;
      ordering_key_cel: string | null;
      filter: string | null;
      p: string | null;
      candidates: Candidate[];
      n_waiter: string | null;
      n_behind: string | null;
      id: string;
    }>;
  }>(db, keyed ? 'ordering.quickGoKeyed' : 'ordering.quickGo', quickGoSql(keyed), {
    id: deliveryId,
    limit: ORDERING_CANDIDATES_MAX + 1,
    ...(keyed ? { key } : {}),
  });
  const row = res.rows[0];
  if (!row || row.p !== null || row.candidates.length > ORDERING_CANDIDATES_MAX) return false;
  // a waiting next delivery not pointed at this one yet: pointNextAt's work, in the transaction
  if (row.n_waiter !== null && row.n_behind !== row.id) return false;
  if (row.candidates.length === 0) return true;
  const endpoint: SequenceEndpoint = { id: row.endpoint_id, keyCel: row.ordering_key_cel, filter: row.filter };
  const member = await judge.firstMember(
    endpoint,
    row.ordering_key,
    row.candidates.map((c) => c.event),
    (ids) => loadCandidates(db, ids),
  );
  return member === -1;
}

/**
 * The common path of a release (issue 41's cost), in one statement and no transaction: the
 * delivery ended SUCCESS (or was skipped), blocked nothing, and the next delivery of its sequence
 * that holds the key, locked as nextHolding locks it, neither waits behind it nor is claimed or
 * waits behind another delivery (strandedAfter): nothing to write, wake or claim. The release
 * writes nothing then (settleHold, noteBlocked), so its own row's lock serialises nothing. A
 * turn check of the next delivery that is recording a wait behind it finishes first (the lock)
 * and is seen here. Undefined for anything else: the caller releases in a transaction.
 */
async function quickRelease(db: Db, deliveryId: string): Promise<Release | undefined> {
  const res = await prepared<{
    rows: Array<{
      id: string;
      status: string;
      ordered: boolean;
      ordering_skipped: boolean;
      blocked: boolean;
      n_id: string | null;
      n_waiter: string | null;
      n_behind: string | null;
      n_handoff: string | null;
    }>;
  }>(
    db,
    'ordering.quickRelease',
    `WITH r AS (
       SELECT id, endpoint_id, status, ordering_key, ordering_position, ordering_skipped, ordering_blocked_at
         FROM webhook_delivery WHERE id = :id),
     n AS (
       SELECT id, ordering_waiter, ordering_behind, ordering_handoff FROM webhook_delivery
        WHERE endpoint_id = (SELECT endpoint_id FROM r) AND ordering_key = (SELECT ordering_key FROM r)
          AND ordering_position > (SELECT ordering_position FROM r)
          AND ordering_position IS NOT NULL AND NOT ordering_skipped AND status <> 'SUCCESS'
        ORDER BY ordering_position LIMIT 1 FOR UPDATE)
     SELECT r.id, r.status, (r.ordering_position IS NOT NULL AND r.ordering_key IS NOT NULL) AS ordered, r.ordering_skipped,
            r.ordering_blocked_at IS NOT NULL AS blocked,
            (SELECT id FROM n) AS n_id, (SELECT ordering_waiter FROM n) AS n_waiter,
            (SELECT ordering_behind FROM n) AS n_behind, (SELECT ordering_handoff FROM n) AS n_handoff
       FROM r`,
    { id: deliveryId },
  );
  const r = res.rows[0];
  if (!r) return undefined;
  if (!r.ordered) return { holds: false };
  if ((r.status !== 'SUCCESS' && !r.ordering_skipped) || r.blocked) return undefined;
  if (r.n_id === null) return { holds: false };
  if (r.n_handoff === 'claimed' || (r.n_behind !== null && r.n_behind !== r.id)) return undefined;
  return r.n_waiter !== null && r.n_behind === r.id ? undefined : { holds: false };
}

/** What a handed-off attempt left for the run's turn check: ended, or retried from the time in the row. */
function handedOffOf(r: OrderedRow): 'ended' | { retryInMs: number } | undefined {
  if (r.ordering_handoff === 'ended') return 'ended';
  if (r.ordering_handoff === 'retry' && r.status === 'PENDING') return { retryInMs: Math.max(0, Math.round(r.handoff_in_ms ?? 0)) };
  return undefined;
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

/** The delivery after a released one in its sequence that holds the key, as nextHolding reads it. */
interface NextRow {
  id: string;
  status: string;
  ordering_waiter: string | null;
  ordering_behind: string | null;
  ordering_handoff: string | null;
}

/** The delivery after `r` in its sequence that holds the key, locked. */
async function nextHolding(trx: Knex.Transaction, r: OrderedRow): Promise<NextRow | undefined> {
  const res = await prepared<{ rows: NextRow[] }>(
    trx,
    'ordering.nextWaiting',
    `SELECT id, status, ordering_waiter, ordering_behind, ordering_handoff FROM webhook_delivery
      WHERE endpoint_id = :endpointId AND ordering_key = :key AND ordering_position > :position
        AND ordering_position IS NOT NULL AND NOT ordering_skipped AND status <> 'SUCCESS'
      ORDER BY ordering_position LIMIT 1 FOR UPDATE`,
    { endpointId: r.endpoint_id, key: r.ordering_key ?? '', position: r.ordering_position },
  );
  return res.rows[0];
}

/** `n` (nextHolding's) when a workflow waits for it behind `r`: the wake-up, and whether its run takes a handoff. */
function waitingBehind(n: NextRow | undefined, r: OrderedRow): { wake: Wake; accepts: boolean } | undefined {
  // behind null: it waits for an event not prepared yet (whose prepare points it at its
  // delivery), or on a timer; woken now it would only find that event still in its way
  if (!n?.ordering_waiter || n.ordering_behind !== r.id) return undefined;
  return { wake: { workflowId: n.ordering_waiter, deliveryId: n.id }, accepts: n.ordering_handoff === 'accepts' };
}

/** The delivery after `r` in its sequence that holds the key, locked, when a workflow waits for it behind `r`. */
async function nextWaiting(trx: Knex.Transaction, r: OrderedRow): Promise<{ wake: Wake; accepts: boolean } | undefined> {
  return waitingBehind(await nextHolding(trx, r), r);
}

/**
 * What a chain left stranded: a delivery its attempt ended, one its attempt failed (retried by its
 * run), or one its attempt never sent (given back to its run).
 */
type Stranded = { ended: OrderedRow } | { retry: OrderedRow } | { dropped: OrderedRow };

/**
 * A delivery that a chain claimed and whose handed-off attempt ended it (recorded: SUCCESS or
 * FAILED), but whose release(ended) never committed: the release failed (a Postgres blip) and the
 * activity is retried, releasing its own delivery `r` again (issue 41's review, H4). The chain may
 * have gone several hops past `r` before the failure, so the stranded delivery is found from `n`,
 * the next delivery that holds the key, not from `r`: `n` itself (ended FAILED, so it holds), or
 * the one `n` waits behind (ended SUCCESS). Its claim is still 'claimed' (the failed transaction
 * changed nothing), and the key's one chain stopped at it, so a release that finds it owns it:
 * ended here in turn, the key moves on at once instead of after the claim's lease and the waker.
 * A chain still running (between its attempt's record and its release) would find the claim gone
 * under the row's lock and stop: one of the two ends it.
 *
 * Or `n` is still PENDING and claimed with an attempt recorded (`retry`): its handed-off attempt
 * failed, was recorded, and the chain's handoffEnd (writing 'retry') failed. A claim is taken only
 * on a row with no attempts and the chain makes one request per claim, so that request is over;
 * the release writes what handoffEnd would have, and its run retries it (a chain's handoffEnd that
 * comes late finds the claim gone and changes nothing). A claimed row with no attempt recorded may
 * be in flight once its claim was renewed (right before the request): its lease bounds it, as
 * before; never renewed (`dropped`: its attempt made no request and its handoffEnd('dropped')
 * failed), a retried release gives it back to its run.
 *
 * Locks: `n` is locked already (nextHolding). The delivery `n` waits behind comes before `n` in the
 * sequence, and a release of it locks it and then `n`: locked here after `n`, the two releases
 * could deadlock (an operator's replay of a skipped delivery before it ends while the key's chain
 * releases that one). So it is locked only if free (SKIP LOCKED): a transaction that holds it is
 * its own release (which goes on from it) or a moment's turn check, and a stranded delivery missed
 * then waits for its lease and the waker, as before H4. Undefined when there is none.
 */
async function strandedAfter(trx: Knex.Transaction, r: OrderedRow, n: NextRow, retried: boolean): Promise<Stranded | undefined> {
  const endedUnreleased = (s: Pick<NextRow, 'status' | 'ordering_handoff'>): boolean =>
    s.ordering_handoff === 'claimed' && s.status !== 'PENDING';
  if (endedUnreleased(n)) {
    const ended = await lockOrdered(trx, n.id);
    return ended && { ended };
  }
  if (n.ordering_handoff === 'claimed') {
    // off the common path (a release finds its next delivery claimed only when retried): one
    // statement more, for its attempts
    const row = await lockOrdered(trx, n.id);
    if (!row || row.ordering_handoff !== 'claimed' || row.status !== 'PENDING') return undefined;
    if (row.attempts > 0) return { retry: row };
    // no attempt recorded and the claim never renewed: no request was made, and none can start
    // once the claim is gone (the renewal requires it). Only a retried release takes it: the chain
    // that claimed it is that release's attempt before, which has ended
    return retried && row.ordering_handoff_renewed === false ? { dropped: row } : undefined;
  }
  // the common path: n waits behind r, or on an event not prepared yet
  if (n.ordering_behind === r.id || n.ordering_behind === null) return undefined;
  // a wait behind a delivery other than r: one statement more, only off the common path
  const s = await lockOrdered(trx, n.ordering_behind, true);
  return s && endedUnreleased(s) ? { ended: s } : undefined;
}

/**
 * A retried release's look for what strandedAfter can not reach from `n`: the first delivery after
 * `r` in its sequence whose handed-off attempt ended it (SUCCESS, or FAILED and not yet applied to
 * the key) and whose release(ended) never committed. A SUCCESS that was the last of its key has
 * nothing after it that holds the key, so nextHolding finds nothing, and its event (or its run)
 * waited for the claim's lease and the waker's continuation. Only on a retried release (the one
 * after a failure): a claimed row still has its waiter, so the partial index of waiting deliveries
 * serves it. Locked only if free, as strandedAfter's lock against the sequence's order (`n`, when
 * there is one, is locked already and comes after it).
 */
async function endedAfter(trx: Knex.Transaction, r: OrderedRow): Promise<Stranded | undefined> {
  const res = await trx.raw<{ rows: Array<{ id: string }> }>(
    `SELECT id FROM webhook_delivery
      WHERE endpoint_id = :endpointId AND ordering_key = :key AND ordering_position > :position
        AND ordering_waiter IS NOT NULL AND ordering_handoff = 'claimed' AND status <> 'PENDING'
      ORDER BY ordering_position LIMIT 1`,
    { endpointId: r.endpoint_id, key: r.ordering_key ?? '', position: r.ordering_position },
  );
  const id = res.rows[0]?.id;
  const ended = id === undefined ? undefined : await lockOrdered(trx, id, true);
  return ended && ended.ordering_handoff === 'claimed' && ended.status !== 'PENDING' ? { ended } : undefined;
}

/**
 * The handoff's claim (docs/ordering.md, "The handoff"), in the release's transaction, under the
 * woken delivery's lock: only a delivery whose run takes a handoff ('accepts', written by its own
 * turn check), not attempted yet (a replay or a redrive counts its attempts from its own run's
 * plan), not waited for by the releasing run itself, and whose turn has come by the same check
 * its own run makes (answerOf). Its lease outlives the attempt: the endpoint's timeout plus the
 * margin; while it is live no turn check starts it and the waker leaves it alone. Its waiting time
 * starts again: a waker of the release before (which knows no claim) leaves it for its 10 s, and
 * the waker finds a claim whose worker was lost at its first pass after the lease.
 */
async function claim(trx: Knex.Transaction, id: string, h: HandoffOptions): Promise<Claim | 'waits' | undefined> {
  const n = await lockOrdered(trx, id);
  if (!n || n.ordering_handoff !== 'accepts' || n.ordering_waiter === h.workflowId || n.attempts !== 0 || n.status !== 'PENDING') {
    return undefined;
  }
  if (!h.mayAttempt(n.timeout_seconds)) return undefined;
  const answer = await answerOf(trx, n, h.judge);
  if (answer.turn === 'wait' && answer.wake === 'signal') {
    // still behind what comes first in its sequence (an earlier event of its key not prepared yet,
    // or a delivery whose key is not decided yet): its wait is recorded as its own turn check
    // would record it, under the same row lock, and whatever it waits behind wakes it (that
    // event's prepare points it at its delivery). Woken now, its run (or a continuation started
    // for it) would only find that and wait again: a signal and a workflow task for nothing.
    await trx('webhook_delivery').where({ id: n.id }).update({ ordering_behind: answer.behind, ordering_waiting_since: trx.fn.now() });
    return 'waits';
  }
  if (answer.turn !== 'go') return undefined;
  const leaseSeconds = (n.timeout_seconds * 1000 + h.leaseMarginMs) / 1000;
  await trx.raw(
    `UPDATE webhook_delivery
        SET ordering_handoff = 'claimed', ordering_handoff_until = now() + make_interval(secs => ?), ordering_waiting_since = now(),
            ordering_handoff_renewed = false
      WHERE id = ?`,
    [leaseSeconds, n.id],
  );
  return { deliveryId: n.id, maxAttempts: n.max_attempts, timeoutSeconds: n.timeout_seconds };
}

/**
 * prepare's part in a wait, once `r` (the delivery it has just put in place, PENDING: it holds
 * its key) has its key: the waiting delivery after it in its sequence, which waited for r's event
 * to be prepared or behind a delivery before r, now waits behind r, and r's end wakes it. It is
 * not woken now: its turn can not have come while r holds the key. Locked like a release, so a
 * turn check of that delivery running now records its wait first (and sees r, or is seen here).
 * One that waits behind a later delivery than r (one not decided yet) keeps it.
 */
async function pointNextAt(trx: Knex.Transaction, r: OrderedRow): Promise<void> {
  const res = await prepared<{
    rows: Array<{ id: string; ordering_waiter: string | null; ordering_behind: string | null; behind_position: number | null }>;
  }>(
    trx,
    'ordering.pointNextAt',
    `SELECT n.id, n.ordering_waiter, n.ordering_behind, b.ordering_position AS behind_position
       FROM webhook_delivery n LEFT JOIN webhook_delivery b ON b.id = n.ordering_behind
      WHERE n.endpoint_id = :endpointId AND n.ordering_key = :key AND n.ordering_position > :position
        AND n.ordering_position IS NOT NULL AND NOT n.ordering_skipped AND n.status <> 'SUCCESS'
      ORDER BY n.ordering_position LIMIT 1 FOR UPDATE OF n`,
    { endpointId: r.endpoint_id, key: r.ordering_key ?? '', position: r.ordering_position },
  );
  const n = res.rows[0];
  if (!n?.ordering_waiter || n.ordering_behind === r.id) return;
  if (n.ordering_behind !== null && n.behind_position !== null && r.ordering_position !== null && n.behind_position > r.ordering_position)
    return;
  await trx('webhook_delivery').where({ id: n.id }).update({ ordering_behind: r.id });
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
  async function check(
    deliveryId: string,
    workflowId: string,
    judge: SequenceJudge,
    prepared: boolean,
    takesHandoff: boolean,
    detachTo?: string,
  ): Promise<Turn> {
    return db.transaction(async (trx) => {
      const r = await lockOrdered(trx, deliveryId);
      if (!r) return { turn: 'go', outOfOrder: false };
      // left to its key's chain by an earlier attempt of this prepare (its answer lost: a worker
      // killed, a timeout): the chain, or the continuation it started, owns the delivery until it
      // ends; the event's run must not take it back (it would send it beside them)
      if (detachTo !== undefined && r.ordering_detached !== null) {
        return { turn: 'wait', behind: r.ordering_behind, wake: 'signal', detached: true };
      }
      // once left to the chain it stays so (never null again, for the check above); false: a run
      // of its own (its continuation) has checked its turn, and waits or delivers it
      const owned = r.ordering_detached === null ? null : false;
      // the handoff (docs/ordering.md): a releasing activity makes its attempt now; it signals
      // this run when it is done, and its lease bounds a worker lost meanwhile
      if (r.ordering_handoff === 'claimed' && (r.handoff_in_ms ?? 0) > 0) {
        // a run waits for it now (a continuation a wake-up started): the handoff's end signals it
        if (r.ordering_detached === true) await trx('webhook_delivery').where({ id: deliveryId }).update({ ordering_detached: false });
        return { turn: 'wait', behind: r.ordering_behind, wake: 'signal' };
      }
      // what the handoff left is for the run that waited (a replay's run of a row reopened before
      // that run was told goes its own way, and leaves it to that run)
      const handedOff = r.ordering_waiter === workflowId ? handedOffOf(r) : undefined;
      if (handedOff) {
        await trx('webhook_delivery').where({ id: deliveryId }).update({
          ordering_handoff: null,
          ordering_handoff_until: null,
          ordering_waiter: null,
          ordering_behind: null,
          ordering_waiting_since: null,
          ordering_detached: owned,
        });
        return { turn: 'go', outOfOrder: false, handedOff };
      }
      const answered = await answerOf(trx, r, judge);
      // a wait that a delivery's end will signal is left to the key's chain when the run lets it
      // go (detachTo): its waiter is then its continuation, started only if it needs a run
      const detached = detachTo !== undefined && answered.turn === 'wait' && answered.wake === 'signal';
      const answer: Turn = detached ? { ...answered, detached: true } : answered;
      const waiter = detached ? detachTo : workflowId;
      if (r.ordering_handoff === 'ended') {
        // another run's turn check (a replay's) while the run the handoff ended it for is not told
        // yet: that run's wait stays recorded; this one re-checks on a timer when it must wait
        return answer.turn === 'wait' ? { ...answer, wake: 'timer' } : answer;
      }
      // a delivery that goes at once (most, with many keys) has no wait to record or clear
      if (answer.turn === 'wait' || r.ordering_waiter !== null || r.ordering_handoff !== null || r.ordering_detached === true) {
        await trx('webhook_delivery')
          .where({ id: deliveryId })
          .update(
            answer.turn === 'wait'
              ? {
                  ordering_waiter: waiter,
                  ordering_behind: answer.behind,
                  ordering_waiting_since: trx.fn.now(),
                  ordering_handoff: takesHandoff ? 'accepts' : null,
                  ordering_handoff_until: null,
                  // left to the key's chain, or a run waits (whose end is then signalled to it)
                  ordering_detached: detached ? true : owned,
                }
              : {
                  ordering_waiter: null,
                  ordering_behind: null,
                  ordering_waiting_since: null,
                  ordering_handoff: null,
                  ordering_handoff_until: null,
                  ordering_detached: owned,
                },
          );
      }
      if (prepared && r.status === 'PENDING' && r.ordering_position !== null && !unordered(r) && r.ordering_key !== null) {
        await pointNextAt(trx, r);
      }
      return answer;
    });
  }

  /** release, on its row locked (lockOrdered): also for a delivery a chain ended and did not release (strandedAfter). */
  async function releaseLocked(trx: Knex.Transaction, r: OrderedRow, opts: ReleaseOptions): Promise<Release> {
    if (r.ordering_position === null || r.ordering_key === null) return { holds: false };
    let finished: Release['finished'];
    if (opts.ended) {
      // the claim is no longer this activity's: its lease ran out and the delivery went back to
      // its run, which may be sending it now; that run releases the key when its attempt ends,
      // so waking the next one here would start it while this delivery is in flight
      if (r.ordering_handoff !== 'claimed') return { holds: false };
      // left to its key's chain, no run waits to be told: it is done with, and its end
      // finishes its event when it was the last PENDING delivery (in this transaction, so a
      // worker lost after it does not leave the event unfinished)
      const detached = r.ordering_detached === true;
      await trx('webhook_delivery')
        .where({ id: r.id })
        .update(
          detached
            ? {
                ordering_handoff: null,
                ordering_handoff_until: null,
                ordering_waiter: null,
                ordering_behind: null,
                ordering_waiting_since: null,
                ordering_detached: false,
              }
            : { ordering_handoff: 'ended', ordering_handoff_until: null, ordering_waiting_since: trx.fn.now() },
        );
      if (detached) finished = { eventId: r.event_id, event: await finishIfSettled(trx, r.event_id) };
    }
    const handoff = opts.handoff;
    const holds = await settleHold(trx, r);
    await noteBlocked(trx, operationsSource, r, holds);
    const ended = finished ? { finished } : {};
    if (holds) return { holds: true, endpointId: r.endpoint_id, ...ended };
    const n = await nextHolding(trx, r);
    // a retried release whose chain stopped at the last delivery of its key, or at one that nothing
    // after it waits behind yet (an event not prepared yet): strandedAfter has no way there
    const found = (n && (await strandedAfter(trx, r, n, opts.retried === true))) ?? (opts.retried ? await endedAfter(trx, r) : undefined);
    if (found && 'dropped' in found) {
      // given back to its run as the chain's handoffEnd('dropped') would have: it delivers it itself
      const s = found.dropped;
      await trx('webhook_delivery')
        .where({ id: s.id })
        .update({ ordering_handoff: null, ordering_handoff_until: trx.fn.now(), ordering_waiting_since: trx.fn.now() });
      const wake = s.ordering_waiter ? { wake: { workflowId: s.ordering_waiter, deliveryId: s.id } } : {};
      return { holds: false, ...ended, adopted: { deliveryId: s.id, ...wake, dropped: true } };
    }
    if (found && 'retry' in found) {
      // left to its run's retry as the chain's handoffEnd would have left it: it still holds the key.
      // Its attempt's record wrote the retry's time as the claim's lease (AttemptResult.handoffRetryMs:
      // the backoff's delay, Retry-After as a floor), kept when later than the first delay from now
      const s = found.retry;
      await trx('webhook_delivery')
        .where({ id: s.id })
        .update({
          ordering_handoff: 'retry',
          ordering_handoff_until: trx.raw('greatest(ordering_handoff_until, now() + make_interval(secs => ?))', [
            (opts.retryInMs ?? 0) / 1000,
          ]),
          ordering_waiting_since: trx.fn.now(),
        });
      const wake = s.ordering_waiter ? { wake: { workflowId: s.ordering_waiter, deliveryId: s.id } } : {};
      return { holds: false, ...ended, adopted: { deliveryId: s.id, ...wake, retried: true } };
    }
    const stranded = found?.ended;
    if (stranded) {
      // ended as its chain would have ended it, and the key goes on from it; its run is told (or
      // its event finished) by the caller, as after the chain's own release(ended)
      const { finished: itsFinish, ...after } = await releaseLocked(trx, stranded, { ...opts, ended: true, retried: false });
      const wake = stranded.ordering_waiter ? { wake: { workflowId: stranded.ordering_waiter, deliveryId: stranded.id } } : {};
      return { ...after, ...ended, adopted: { deliveryId: stranded.id, ...wake, ...(itsFinish ? { finished: itsFinish } : {}) } };
    }
    const next = waitingBehind(n, r);
    if (!next) return { holds: false, ...ended };
    const claimed = handoff && next.accepts ? await claim(trx, next.wake.deliveryId, handoff) : undefined;
    if (claimed === 'waits') return { holds: false, ...ended };
    return { holds: false, wake: next.wake, ...(claimed ? { claimed } : {}), ...ended };
  }

  return {
    /**
     * Whether an ordered delivery may go now; a delivery that may not records `workflowId` as its
     * waiter (and what it waits behind) in the same transaction. A delivery that is not ordered,
     * not PENDING, or of an endpoint that no longer orders or sends goes at once. `judge` says
     * which earlier events not prepared yet join its sequence; without it, any may.
     */
    async turn(deliveryId: string, workflowId: string, judge: SequenceJudge = EVERY_EVENT_JOINS, takesHandoff = false): Promise<Turn> {
      return check(deliveryId, workflowId, judge, false, takesHandoff);
    },

    /**
     * prepare's turn check, when the delivery's row has just been put in place: also points the
     * waiting delivery after it in its sequence, which may have waited for this event to be
     * prepared, at it (pointNextAt).
     */
    async firstTurn(
      deliveryId: string,
      workflowId: string,
      judge: SequenceJudge = EVERY_EVENT_JOINS,
      takesHandoff = false,
      opts: { detachTo?: string; key?: string } = {},
    ): Promise<Turn> {
      // most ordered deliveries go at once: one statement, no transaction (quickGo); it writes
      // the key prepare decided (`key`: deliveries.prepareRun's deferKeys) whatever it answers
      if (await quickGo(db, deliveryId, judge, opts.key)) return { turn: 'go', outOfOrder: false };
      return check(deliveryId, workflowId, judge, true, takesHandoff, opts.detachTo);
    },

    /**
     * After an ordered delivery ended: whether it still holds its key (releasing it when its end
     * does), and the waiting delivery behind it to wake when it does not. With `handoff`, that
     * delivery is claimed when it can be (claim above). `ended`: the delivery was the handoff's
     * own attempt, which ended it: its run's turn check finds it 'ended' (and the chain goes on
     * only while the claim was still this activity's).
     */
    async release(deliveryId: string, opts: ReleaseOptions = {}): Promise<Release> {
      // most ends of ordered deliveries wake, claim and write nothing: one statement (quickRelease);
      // a retried release looks further than the next holding delivery (endedAfter), in the transaction
      const quick = opts.ended === true || opts.retried === true ? undefined : await quickRelease(db, deliveryId);
      if (quick) return quick;
      return db.transaction(async (trx) => {
        const r = await lockOrdered(trx, deliveryId);
        return r ? releaseLocked(trx, r, opts) : { holds: false };
      });
    },

    /**
     * The release of a delivery that ended SUCCESS when it has nothing to write, wake or claim
     * (quickRelease): true when it is done so, false when it is left to `release`. For the deliver
     * activity of an ordered delivery (DeliverInput.releases), which then spares its run the
     * orderingRelease local activity.
     */
    async releaseQuietly(deliveryId: string): Promise<boolean> {
      const quick = await quickRelease(db, deliveryId);
      return quick !== undefined && !quick.holds && quick.wake === undefined;
    },

    /**
     * A handed-off attempt's renewal right before its request: true while the claim is still there
     * and its lease has not run out (then it runs `leaseMs` from now); false once the delivery went
     * back to its run (or could have: a lease that ran out), and then no request is made.
     */
    async renewClaim(deliveryId: string, leaseMs: number): Promise<boolean> {
      const { rowCount } = await db.raw(
        `UPDATE webhook_delivery SET ordering_handoff_until = now() + make_interval(secs => :seconds), ordering_handoff_renewed = true
          WHERE id = :id AND ordering_handoff = 'claimed' AND ordering_handoff_until > now()`,
        { id: deliveryId, seconds: leaseMs / 1000 },
      );
      return rowCount === 1;
    },

    /**
     * A handed-off attempt that did not end its delivery: 'dropped' (not made) gives it back to
     * its run as it was; a failure is retried by the run from now + retryInMs. Only while the
     * claim is still there (a lease that ran out gave the delivery back to its run already).
     */
    async handoffEnd(deliveryId: string, end: Exclude<HandoffEnd, 'ended'>): Promise<void> {
      await db.raw(
        `UPDATE webhook_delivery
            SET ordering_handoff = :state, ordering_handoff_until = now() + make_interval(secs => :seconds), ordering_waiting_since = now()
          WHERE id = :id AND ordering_handoff = 'claimed'`,
        {
          id: deliveryId,
          state: end === 'dropped' ? null : 'retry',
          seconds: end === 'dropped' ? 0 : end.retryInMs / 1000,
        },
      );
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
        const next = await nextWaiting(trx, r);
        return next ? { wake: next.wake } : {};
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
     * Waiting deliveries a lost wake-up may have left waiting (temporal/ordering-waker.ts); a
     * delivery handed off whose run was not told (its activity's worker lost: the claim's lease
     * ran out, or the attempt ended it and the signal was not sent); else waiting
     * longer than `afterSeconds` behind a delivery that no longer holds its key (or is gone, or was
     * put in another sequence), behind an event not prepared yet (which a filter or key changed
     * since the check may leave out of the sequence: nothing points the delivery at it), or on an
     * endpoint that no longer orders or sends. Their waiting time starts again, so a pass does not
     * signal them again before another `afterSeconds`.
     */
    async stalled(afterSeconds: number, limit: number): Promise<Array<Wake & { eventId: string }>> {
      const res = await db.raw<{ rows: Array<{ id: string; ordering_waiter: string; event_id: string }> }>(
        `UPDATE webhook_delivery w SET ordering_waiting_since = now()
           FROM (SELECT d.id FROM webhook_delivery d JOIN webhook_endpoint ep ON ep.id = d.endpoint_id
                  WHERE d.ordering_waiter IS NOT NULL AND d.ordering_waiting_since < now() - make_interval(secs => :afterSeconds)
                    AND NOT (d.ordering_handoff = 'claimed' AND d.ordering_handoff_until > now())
                    AND (d.ordering_handoff IN ('ended', 'claimed')
                         OR d.status = 'PENDING'
                         AND (NOT ep.active OR ep.denied_reason IS NOT NULL OR ep.ordering_on_failure IS NULL
                              OR d.ordering_behind IS NULL
                              OR NOT EXISTS (
                                    SELECT 1 FROM webhook_delivery p
                                     WHERE p.id = d.ordering_behind AND NOT p.ordering_skipped AND p.status <> 'SUCCESS'
                                       AND (p.ordering_key = d.ordering_key OR p.ordering_key IS NULL))))
                  ORDER BY d.ordering_waiting_since LIMIT :limit
                  FOR UPDATE OF d SKIP LOCKED) s
          WHERE w.id = s.id AND w.ordering_waiter IS NOT NULL
         RETURNING w.id, w.ordering_waiter, w.event_id`,
        { afterSeconds, limit },
      );
      return res.rows.map((r) => ({ workflowId: r.ordering_waiter, deliveryId: r.id, eventId: r.event_id }));
    },

    /**
     * The run recorded as a delivery's waiter has closed and can not be told (a run terminated by
     * hand: its signal finds no run): the delivery goes to its continuation, as one left to its key's
     * chain (docs/ordering.md), which checks its turn and delivers it, or applies what a handoff
     * left (an end whose release never ran, a lapsed claim it then clears, so the delivery can be
     * replayed again). Only while that run is still its waiter; false when another run took it.
     */
    async toContinuation(deliveryId: string, closedWaiter: string, continuation: string): Promise<boolean> {
      const { rowCount } = await db.raw(
        `UPDATE webhook_delivery SET ordering_waiter = :continuation, ordering_detached = true, ordering_waiting_since = now()
          WHERE id = :id AND ordering_waiter = :closedWaiter`,
        { id: deliveryId, closedWaiter, continuation },
      );
      return rowCount === 1;
    },
  };
}
