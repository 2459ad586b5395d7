import type { Knex } from 'knex';
import { eventWithPayload } from './deliveries.js';
import type { Db } from './knex.js';

// Replay bookkeeping beyond deliveries.reopenFailed: whole events, bulk by filter, and undoing a
// reopen whose workflow could not be started.

export interface FailedDeliveryFilter {
  source?: string;
  endpointId?: string;
  eventType?: string;
  /** on the delivery's created_at: from inclusive, to exclusive */
  from?: Date;
  to?: Date;
}

export interface Reopened {
  id: string;
  eventId: string;
}

function failedMatching(db: Db, f: FailedDeliveryFilter): Knex.QueryBuilder {
  // an event whose payload retention dropped has nothing left to send: not replayable
  const q = db('webhook_delivery as d')
    .join('webhook_event as e', 'e.id', 'd.event_id')
    .where('d.status', 'FAILED')
    .whereNull('e.payload_dropped_at');
  if (f.source !== undefined) q.where('e.source', f.source);
  if (f.eventType !== undefined) q.where('e.event_type', f.eventType);
  if (f.endpointId !== undefined) q.where('d.endpoint_id', f.endpointId);
  if (f.from) q.where('d.created_at', '>=', f.from);
  if (f.to) q.where('d.created_at', '<', f.to);
  return q;
}

export function createReplayQueries(db: Db) {
  return {
    /** Every FAILED delivery of one event back to PENDING, atomically; the ids reopened. */
    async reopenFailedOfEvent(eventId: string): Promise<string[]> {
      const rows = (await db('webhook_delivery')
        .where({ event_id: eventId, status: 'FAILED' })
        .whereExists(eventWithPayload(db))
        .update({ status: 'PENDING', completed_at: null, updated_at: db.fn.now() })
        .returning('id')) as Array<{ id: string }>;
      return rows.map((r) => r.id);
    },

    async countFailed(f: FailedDeliveryFilter): Promise<number> {
      const row = (await failedMatching(db, f).count<{ n: number }>({ n: '*' }).first()) as { n: number } | undefined;
      return Number(row?.n ?? 0);
    },

    /**
     * Up to `limit` matching FAILED deliveries, newest first, back to PENDING. Rows another
     * replay holds are skipped rather than waited for, and a row is reopened once however many
     * bulk replays race for it (the UPDATE re-checks FAILED).
     */
    async reopenFailedMatching(f: FailedDeliveryFilter, limit: number): Promise<Reopened[]> {
      const picked = failedMatching(db, f)
        .select('d.id')
        .orderBy([
          { column: 'd.created_at', order: 'desc' },
          { column: 'd.id', order: 'desc' },
        ])
        .limit(limit)
        .forUpdate('d')
        .skipLocked();
      const rows = (await db('webhook_delivery')
        .whereIn('id', picked)
        .andWhere('status', 'FAILED')
        .whereExists(eventWithPayload(db))
        .update({ status: 'PENDING', completed_at: null, updated_at: db.fn.now() })
        .returning(['id', 'event_id'])) as Array<{ id: string; event_id: string }>;
      return rows.map((r) => ({ id: r.id, eventId: r.event_id }));
    },

    /**
     * Undo a reopen whose replay workflow was never started, so the rows stay replayable instead
     * of PENDING with nothing to deliver them. Rows a workflow settled meanwhile are left alone.
     */
    async revertReopened(ids: readonly string[]): Promise<number> {
      if (ids.length === 0) return 0;
      return db('webhook_delivery')
        .whereIn('id', ids as string[])
        .andWhere('status', 'PENDING')
        .update({ status: 'FAILED', completed_at: db.fn.now(), updated_at: db.fn.now() });
    },
  };
}

export type ReplayQueries = ReturnType<typeof createReplayQueries>;
