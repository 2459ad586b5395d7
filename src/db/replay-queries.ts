import { notClaimedByHandoff } from './ordering.js';
import type { Knex } from 'knex';
import { eventWithPayload } from './deliveries.js';
import type { DeniedReason } from '../domain/records.js';
import type { BulkReplayCriteria, BulkReplays } from './bulk-replays.js';
import type { Db } from './knex.js';
import { whereEndpointIn, whereEventVisible, whereNamespaceIn, type TenantScope } from './tenant-scope.js';

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

/** An endpoint a replay would send to, with why its source does not allow it (null: allowed). */
export interface ReplayEndpoint {
  endpointId: string;
  name: string;
  source: string;
  namespace: string | null;
  deniedReason: DeniedReason | null;
}

/** A delivery a replay was asked for, with its endpoint. */
export interface ReplayTarget extends ReplayEndpoint {
  id: string;
  eventId: string;
  status: string;
  /** its place in an ordered sequence (docs/ordering.md): null when it is not ordered */
  orderingPosition: number | null;
  /** as stored (domain/ordering.ts): null while undecided */
  orderingKey: string | null;
  orderingSkipped: boolean;
}

const ENDPOINT_COLUMNS = ['p.id as endpointId', 'p.name', 'p.source', 'p.namespace', 'p.denied_reason as deniedReason'];

/**
 * The delivery's endpoint is allowed by its source (migration 071: denied_reason NULL). Checked
 * in the reopening statement itself, so an endpoint revoked meanwhile is not reopened.
 */
const endpointAllowed = (db: Db, deliveryTable: string) =>
  db('webhook_endpoint as ap').select(db.raw('1')).whereRaw(`ap.id = ${deliveryTable}.endpoint_id`).whereNull('ap.denied_reason');

function failedMatching(db: Db, scope: TenantScope, f: FailedDeliveryFilter): Knex.QueryBuilder {
  // an event whose payload retention dropped has nothing left to send: not replayable; nor is a
  // delivery to an endpoint its source does not allow
  const q = db('webhook_delivery as d')
    .join('webhook_event as e', 'e.id', 'd.event_id')
    .where('d.status', 'FAILED')
    .whereRaw(notClaimedByHandoff('d'))
    .whereNull('e.payload_dropped_at')
    .whereExists(endpointAllowed(db, 'd'));
  whereEndpointIn(db, q, scope, 'd.endpoint_id');
  if (f.source !== undefined) q.where('e.source', f.source);
  if (f.eventType !== undefined) q.where('e.event_type', f.eventType);
  if (f.endpointId !== undefined) q.where('d.endpoint_id', f.endpointId);
  if (f.from) q.where('d.created_at', '>=', f.from);
  if (f.to) q.where('d.created_at', '<', f.to);
  return q;
}

/** Every read and reopen takes the caller's scope (tenant-scope.ts): a tenant replays its own endpoints' deliveries only. */
export function createReplayQueries(db: Db) {
  return {
    /** What a replay needs of the event (its payload kept? its stored trace), if the scope sees it. */
    async replayableEvent(
      scope: TenantScope,
      id: string,
    ): Promise<{ payloadDroppedAt: Date | null; traceparent: string | null } | undefined> {
      const q = db('webhook_event as e').select('e.payload_dropped_at as payloadDroppedAt', 'e.traceparent').where('e.id', id);
      const row = (await whereEventVisible(db, q, scope, 'e').first()) as
        { payloadDroppedAt: Date | null; traceparent: string | null } | undefined;
      return row && { payloadDroppedAt: row.payloadDroppedAt ?? null, traceparent: row.traceparent ?? null };
    },

    /** The delivery and its endpoint, if the scope sees it. */
    async target(scope: TenantScope, id: string): Promise<ReplayTarget | undefined> {
      const q = db('webhook_delivery as d')
        .join('webhook_endpoint as p', 'p.id', 'd.endpoint_id')
        .select(
          'd.id',
          'd.event_id as eventId',
          'd.status',
          'd.ordering_position as orderingPosition',
          'd.ordering_key as orderingKey',
          'd.ordering_skipped as orderingSkipped',
          ...ENDPOINT_COLUMNS,
        )
        .where('d.id', id);
      return (await whereEndpointIn(db, q, scope, 'd.endpoint_id').first()) as ReplayTarget | undefined;
    },

    /** The endpoint, if the scope sees it. */
    async endpoint(scope: TenantScope, id: string): Promise<ReplayEndpoint | undefined> {
      const q = db('webhook_endpoint as p')
        .select(...ENDPOINT_COLUMNS)
        .where('p.id', id);
      return (await whereNamespaceIn(q, scope, 'p.namespace').first()) as ReplayEndpoint | undefined;
    },

    /** The endpoints, not allowed by their source, of the event's FAILED deliveries the scope sees. */
    async deniedEndpointsOfEvent(scope: TenantScope, eventId: string): Promise<ReplayEndpoint[]> {
      const q = db('webhook_delivery as d')
        .join('webhook_endpoint as p', 'p.id', 'd.endpoint_id')
        .select(...ENDPOINT_COLUMNS)
        .where({ 'd.event_id': eventId, 'd.status': 'FAILED' })
        .whereNotNull('p.denied_reason')
        .orderBy('p.name');
      return (await whereEndpointIn(db, q, scope, 'd.endpoint_id')) as ReplayEndpoint[];
    },

    /** Replay: a FAILED delivery back to PENDING, if its payload is kept and its endpoint allowed; false: not reopened. */
    async reopenFailed(id: string): Promise<boolean> {
      const n = await db('webhook_delivery')
        .where({ id, status: 'FAILED' })
        .whereRaw(notClaimedByHandoff('webhook_delivery'))
        .whereExists(eventWithPayload(db))
        .whereExists(endpointAllowed(db, 'webhook_delivery'))
        .update({ status: 'PENDING', completed_at: null, updated_at: db.fn.now() });
      return n > 0;
    },

    /** The event's FAILED deliveries the scope sees, to endpoints allowed by their source, back to PENDING, atomically; the ids reopened. */
    async reopenFailedOfEvent(scope: TenantScope, eventId: string): Promise<string[]> {
      const q = db('webhook_delivery')
        .where({ event_id: eventId, status: 'FAILED' })
        .whereRaw(notClaimedByHandoff('webhook_delivery'))
        .whereExists(eventWithPayload(db))
        .whereExists(endpointAllowed(db, 'webhook_delivery'));
      const rows = (await whereEndpointIn(db, q, scope, 'webhook_delivery.endpoint_id')
        .update({ status: 'PENDING', completed_at: null, updated_at: db.fn.now() })
        .returning('id')) as Array<{ id: string }>;
      return rows.map((r) => r.id);
    },

    async countFailed(scope: TenantScope, f: FailedDeliveryFilter): Promise<number> {
      const row = (await failedMatching(db, scope, f).count<{ n: number }>({ n: '*' }).first()) as { n: number } | undefined;
      return Number(row?.n ?? 0);
    },

    /**
     * Up to `limit` matching FAILED deliveries, newest first, back to PENDING. Rows another
     * replay holds are skipped rather than waited for, and a row is reopened once however many
     * bulk replays race for it (the UPDATE re-checks FAILED).
     */
    /**
     * `bulk`: the bulk replay is recorded in the same transaction (db/bulk-replays.ts), so that its
     * end raises replay.completed; its id is returned beside the rows (null when none was reopened).
     */
    async reopenFailedMatching(
      scope: TenantScope,
      f: FailedDeliveryFilter,
      limit: number,
      bulk?: { replays: Pick<BulkReplays, 'open'>; criteria: BulkReplayCriteria },
    ): Promise<{ reopened: Reopened[]; bulkReplayId: string | null }> {
      // the rows picked and locked first, then reopened: as a subquery of the UPDATE, a plan that
      // scans it again per row (a nested loop; the planner chose one once migration 081's indexes
      // were there) skips the rows the statement itself just locked and updated, and picks the
      // next ones past the limit (test/api/replay.test.ts, bulk replay: 3 reopened for a limit of 2)
      return db.transaction(async (trx) => {
        const picked = (await failedMatching(trx, scope, f)
          .select('d.id')
          .orderBy([
            { column: 'd.created_at', order: 'desc' },
            { column: 'd.id', order: 'desc' },
          ])
          .limit(limit)
          .forUpdate('d')
          .skipLocked()) as Array<{ id: string }>;
        if (picked.length === 0) return { reopened: [], bulkReplayId: null };
        const rows = (await trx('webhook_delivery')
          .whereIn(
            'id',
            picked.map((p) => p.id),
          )
          .andWhere('status', 'FAILED')
          .whereRaw(notClaimedByHandoff('webhook_delivery'))
          .whereExists(eventWithPayload(trx))
          .whereExists(endpointAllowed(trx, 'webhook_delivery'))
          .update({ status: 'PENDING', completed_at: null, updated_at: trx.fn.now() })
          .returning(['id', 'event_id'])) as Array<{ id: string; event_id: string }>;
        const reopened = rows.map((r) => ({ id: r.id, eventId: r.event_id }));
        const bulkReplayId =
          bulk && reopened.length > 0
            ? await bulk.replays.open(
                trx,
                bulk.criteria,
                reopened.map((r) => r.id),
              )
            : null;
        return { reopened, bulkReplayId };
      });
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
