import type { OperationsEventsSettings } from '../config/settings.js';
import type { WebhookEvent } from '../domain/records.js';
import type { EventStatus } from '../domain/statuses.js';
import type { Knex } from 'knex';
import { prepared, type Db } from './knex.js';
import { toEvent, type EventRow } from './rows.js';

export type NewEvent = Pick<WebhookEvent, 'source' | 'externalEventId' | 'eventType' | 'payload' | 'contentType' | 'headers'> &
  Partial<Pick<WebhookEvent, 'traceparent'>>;

/** An event the sweeper re-publishes, with the trace its publish joins (docs/tracing.md). */
interface SweptEvent {
  id: string;
  traceparent: string | null;
}

export interface InsertedEvent {
  id: string;
  duplicate: boolean;
  /** null while the event id has not reached the topic yet */
  publishedAt: Date | null;
  /**
   * A consumer started the event's workflow. Until then a duplicate re-publishes: published_at is
   * set optimistically at insert, so an ingest that died before its publish leaves it set.
   */
  started: boolean;
}

const META_COLUMNS = [
  'id',
  'source',
  'external_event_id',
  'event_type',
  'content_type',
  'headers',
  'status',
  'workflow_id',
  'published_at',
  'received_at',
  'completed_at',
  'traceparent',
  'payload_dropped_at',
];

export function createEventRepository(db: Db, operations: Pick<OperationsEventsSettings, 'source'>) {
  return {
    /**
     * Inserts the event unless (source, external id) exists already. Concurrent identical
     * requests race on the partial unique index; exactly one wins and the rest see a duplicate.
     */
    async insertOrGetDuplicate(e: NewEvent): Promise<InsertedEvent> {
      // published_at is set optimistically, saving an UPDATE per request: the caller publishes
      // next and clears it (clearPublished) if that fails; were the process to die in between,
      // a sender's retry (a duplicate without a workflow re-publishes) or the sweeper's
      // "published but never started" scan (SWEEP_UNSTARTED_AFTER_SECONDS, and at start-up)
      // re-publishes the event.
      const inserted = await db.raw<{ rows: Array<{ id: string }> }>(
        `INSERT INTO webhook_event (source, external_event_id, event_type, payload, content_type, headers, traceparent, published_at)
         VALUES (?, ?, ?, ?, ?, ?::jsonb, ?, now())
         ON CONFLICT (source, external_event_id) WHERE external_event_id IS NOT NULL DO NOTHING
         RETURNING id`,
        [e.source, e.externalEventId, e.eventType, e.payload, e.contentType, JSON.stringify(e.headers), e.traceparent ?? null],
      );
      const row = inserted.rows[0];
      if (row) return { id: row.id, duplicate: false, publishedAt: new Date(), started: false };
      const existing = await db<EventRow>('webhook_event')
        .select('id', 'published_at', 'workflow_id')
        .where({ source: e.source, external_event_id: e.externalEventId })
        .first();
      if (!existing) throw new Error('duplicate event vanished between insert and select');
      return { id: existing.id, duplicate: true, publishedAt: existing.published_at, started: existing.workflow_id !== null };
    },

    async markPublished(id: string): Promise<void> {
      await db('webhook_event').where({ id }).whereNull('published_at').update({ published_at: db.fn.now(), updated_at: db.fn.now() });
    },

    /**
     * An event without a workflow was published again: it counts as published now, so the
     * sweeper picks it up again only after the grace period, not on every tick. Re-publishing all
     * of them every few seconds multiplied the queue's backlog after a long Temporal outage (a
     * copy per event per tick) and starved the consumer of the messages that mattered.
     */
    async markRepublished(id: string): Promise<void> {
      await db('webhook_event').where({ id }).whereNull('workflow_id').update({ published_at: db.fn.now(), updated_at: db.fn.now() });
    },

    /** The publish after insert failed: leave the event to the sender's retry or the sweeper. */
    async clearPublished(id: string): Promise<void> {
      await db('webhook_event').where({ id }).update({ published_at: null, updated_at: db.fn.now() });
    },

    async setWorkflowId(id: string, workflowId: string): Promise<void> {
      await db('webhook_event').where({ id }).update({ workflow_id: workflowId, updated_at: db.fn.now() });
    },

    /** Accepted events whose publish failed and was not retried by the sender. */
    async findUnpublished(olderThanMs: number, limit: number): Promise<SweptEvent[]> {
      const rows = await db<EventRow>('webhook_event')
        .select('id', 'traceparent')
        .whereNull('published_at')
        .where('received_at', '<', db.raw(`now() - (? * interval '1 millisecond')`, [olderThanMs]))
        .orderBy('received_at')
        .limit(limit);
      return rows.map((r) => ({ id: r.id, traceparent: r.traceparent ?? null }));
    },

    /**
     * Operational events not published yet (docs/operations-events.md): written unpublished in the
     * transaction of their change, they wait for no sender and no grace period (the partial index
     * of unpublished events finds them).
     */
    async findUnpublishedOperational(limit: number): Promise<SweptEvent[]> {
      const rows = await db<EventRow>('webhook_event')
        .select('id', 'traceparent')
        .whereNull('published_at')
        .where({ source: operations.source })
        .orderBy('received_at')
        .limit(limit);
      return rows.map((r) => ({ id: r.id, traceparent: r.traceparent ?? null }));
    },

    /**
     * Published events no consumer has started a workflow for: their message was lost or
     * dead-lettered (e.g. Temporal was down for longer than the queue's receive budget).
     */
    async findUnstarted(publishedBeforeMs: number, limit: number, asOf?: string): Promise<SweptEvent[]> {
      const rows = await db<EventRow>('webhook_event')
        .select('id', 'traceparent')
        .whereNull('workflow_id')
        // asOf (the database's time when a sweep pass began) keeps rows re-published during the
        // pass out of it, even with no grace period
        .where(
          'published_at',
          '<',
          db.raw(`coalesce(?::timestamptz, now()) - (? * interval '1 millisecond')`, [asOf ?? null, publishedBeforeMs]),
        )
        .where({ status: 'RECEIVED' })
        .orderBy('published_at')
        .orderBy('id')
        .limit(limit);
      return rows.map((r) => ({ id: r.id, traceparent: r.traceparent ?? null }));
    },

    /**
     * The database's clock, so time windows compare with what it wrote; as text, because a JS
     * Date keeps milliseconds and timestamps have microseconds (a truncated cutoff missed rows).
     */
    async now(): Promise<string> {
      const res = await db.raw<{ rows: { now: string }[] }>('select now()::text as now');
      const now = res.rows[0]?.now;
      if (!now) throw new Error('select now() returned no row');
      return now;
    },

    /** The event without its payload, for bookkeeping that does not send it. */
    async getMeta(id: string): Promise<Omit<WebhookEvent, 'payload'> | undefined> {
      const row = (await db('webhook_event').select(META_COLUMNS).where({ id }).first()) as Omit<EventRow, 'payload'> | undefined;
      if (!row) return undefined;
      const { payload: _payload, ...meta } = toEvent({ ...row, payload: Buffer.alloc(0) });
      return meta;
    },

    /**
     * Settles the event: its status from ALL its deliveries' (so a replay recomputes it from the
     * whole picture), in one round trip. The rule (docs/decisions.md) lives here and only here:
     * COMPLETED when every delivery succeeded (also when none matched; bool_and of no rows is
     * NULL), FAILED when every delivery failed, PARTIAL otherwise (a delivery still PENDING
     * included). Returns the status before (read from the statement's snapshot, so as it was
     * before the UPDATE) with the event's receipt time; undefined: no such event.
     */
    async finish(id: string): Promise<FinishedEvent | undefined> {
      return finishStatement(db, id);
    },

    /**
     * finish, only once none of the event's deliveries is PENDING: a run that left a delivery to
     * its key's chain, a continuation, and the handoff that ends such a delivery each call it
     * after their own end, and whichever comes last finishes the event. 'pending': left as it is.
     */
    async finishIfSettled(id: string): Promise<FinishedEvent | 'pending' | undefined> {
      return db.transaction((trx) => finishIfSettled(trx, id));
    },

    async get(id: string): Promise<WebhookEvent | undefined> {
      const row = await db<EventRow>('webhook_event').where({ id }).first();
      return row ? toEvent(row) : undefined;
    },
  };
}

export type EventRepository = ReturnType<typeof createEventRepository>;

/** What finishing an event did: its status, the one before, its receipt time. */
export interface FinishedEvent {
  status: Exclude<EventStatus, 'RECEIVED'>;
  previous: EventStatus;
  receivedAt: Date;
}

/**
 * Settles the event: its status from ALL its deliveries' (so a replay recomputes it from the
 * whole picture), in one round trip. The rule (docs/decisions.md) lives here and only here:
 * COMPLETED when every delivery succeeded (also when none matched; bool_and of no rows is NULL),
 * FAILED when every delivery failed, PARTIAL otherwise (a delivery still PENDING included).
 * Returns the status before (read from the statement's snapshot, so as it was before the UPDATE)
 * with the event's receipt time; undefined: no such event.
 */
const FINISH_OUTCOME = `event AS (
       SELECT status, received_at FROM webhook_event WHERE id = :id),
     outcome AS (
       SELECT CASE WHEN bool_and(status = 'SUCCESS') IS NOT FALSE THEN 'COMPLETED'
                   WHEN bool_and(status = 'FAILED') THEN 'FAILED'
                   ELSE 'PARTIAL' END AS status,
              coalesce(bool_or(status = 'PENDING'), false) AS pending
         FROM webhook_delivery WHERE event_id = :id)`;

type FinishRow = { status: Exclude<EventStatus, 'RECEIVED'> | null; previous: EventStatus; received_at: Date; pending: boolean };

/** A finishing statement's row: the event finished, or undefined (no such event, or nothing written). */
const finishedOf = (row: FinishRow | undefined): FinishedEvent | undefined =>
  row?.status ? { status: row.status, previous: row.previous, receivedAt: row.received_at } : undefined;

async function finishStatement(db: Db, id: string): Promise<FinishedEvent | undefined> {
  const res = await prepared<{ rows: FinishRow[] }>(
    db,
    'events.finish',
    `WITH ${FINISH_OUTCOME},
     settled AS (
       UPDATE webhook_event e SET status = o.status, completed_at = now(), updated_at = now()
         FROM outcome o WHERE e.id = :id
       RETURNING e.status)
     SELECT settled.status, event.status AS previous, event.received_at, false AS pending FROM event, settled`,
    { id },
  );
  return finishedOf(res.rows[0]);
}

/**
 * finishIfSettled in the caller's transaction (db/ordering.ts ends a delivery left to its key's
 * chain with it). The event's row is locked first and the deliveries read in a statement after
 * the lock: two callers whose deliveries ended at the same time are serialized, and the second
 * reads the first's end, so one of them finishes the event and the metrics count it once.
 */
export async function finishIfSettled(trx: Knex.Transaction, id: string): Promise<FinishedEvent | 'pending' | undefined> {
  const locked = await prepared<{ rows: Array<{ id: string }> }>(
    trx,
    'events.lockForFinish',
    'SELECT id FROM webhook_event WHERE id = ? FOR UPDATE',
    [id],
  );
  if (locked.rows.length === 0) return undefined;
  // the outcome and the update in one statement after the lock: nothing is written while a
  // delivery is PENDING
  const res = await prepared<{ rows: FinishRow[] }>(
    trx,
    'events.finishIfSettled',
    `WITH ${FINISH_OUTCOME},
     settled AS (
       UPDATE webhook_event e SET status = o.status, completed_at = now(), updated_at = now()
         FROM outcome o WHERE e.id = :id AND NOT o.pending
       RETURNING e.status)
     SELECT settled.status, event.status AS previous, event.received_at, outcome.pending
       FROM event CROSS JOIN outcome LEFT JOIN settled ON true`,
    { id },
  );
  const row = res.rows[0];
  if (!row) return undefined;
  if (row.pending) return 'pending';
  return finishedOf(row);
}
