import type { Db } from './knex.js';
import type { OperationalEvents } from './operational-events.js';

/**
 * The admin API's bulk replays (POST /api/deliveries/replay, migration 087): which deliveries one
 * reopened, so that its end is told as replay.completed (docs/operations-events.md) like a
 * WebhookReplay's. The row is written in the reopen's transaction (a crash loses both or neither);
 * the sweeper completes it once none of its deliveries is PENDING, recording the event in the same
 * statement's transaction, so one bulk replay raises one replay.completed, whichever ingest replica
 * sees it first.
 */

/** What the bulk replay was asked for, as its replay.completed payload repeats it. */
export interface BulkReplayCriteria {
  source?: string | undefined;
  endpointId?: string | undefined;
  eventType?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  limit: number;
  /** the namespaces of the token that asked (absent: every namespace) */
  namespaces?: readonly string[] | undefined;
}

/** Completed bulk replays are kept this long (the admin API does not list them; the event is the record). */
const KEEP_COMPLETED = '7 days';
/** bulk replays completed per sweeper pass, at most */
const BATCH = 100;

interface CompletedRow {
  id: string;
  criteria: BulkReplayCriteria;
  reopened: number;
  succeeded: number;
  failed: number;
  namespaces: Array<string | null>;
}

export function createBulkReplays(db: Db, events: OperationalEvents) {
  return {
    /** Records a bulk replay of `deliveryIds` in `trx`, the transaction that reopened them; returns its id. */
    async open(trx: Db, criteria: BulkReplayCriteria, deliveryIds: readonly string[]): Promise<string> {
      const rows = (await trx('webhook_bulk_replay')
        .insert({ criteria: JSON.stringify(criteria), delivery_ids: trx.raw('?::uuid[]', [deliveryIds as string[]]) })
        .returning('id')) as Array<{ id: string }>;
      const id = rows[0]?.id;
      if (!id) throw new Error('webhook_bulk_replay insert returned no id');
      return id;
    },

    /**
     * Completes the open bulk replays whose deliveries have all settled (SUCCESS or FAILED), each
     * with its replay.completed in the same transaction; forgets those completed a week ago.
     * Returns how many it completed. Replicas skip each other's locked rows.
     */
    async completeSettled(): Promise<number> {
      return db.transaction(async (trx) => {
        const done = (
          await trx.raw<{ rows: CompletedRow[] }>(
            `WITH settled AS (
             SELECT b.id FROM webhook_bulk_replay b
              WHERE b.completed_at IS NULL
                AND NOT EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.id = ANY (b.delivery_ids) AND d.status = 'PENDING')
              ORDER BY b.created_at
              LIMIT ${BATCH}
                FOR UPDATE SKIP LOCKED
           ), completed AS (
             UPDATE webhook_bulk_replay b SET completed_at = now() FROM settled s WHERE b.id = s.id
             RETURNING b.id, b.criteria, b.delivery_ids
           )
           SELECT c.id, c.criteria, cardinality(c.delivery_ids) AS reopened,
                  count(*) FILTER (WHERE d.status = 'SUCCESS')::int AS succeeded,
                  count(*) FILTER (WHERE d.status = 'FAILED')::int AS failed,
                  array_agg(DISTINCT e.namespace) FILTER (WHERE e.id IS NOT NULL) AS namespaces
             FROM completed c
             LEFT JOIN webhook_delivery d ON d.id = ANY (c.delivery_ids)
             LEFT JOIN webhook_endpoint e ON e.id = d.endpoint_id
            GROUP BY c.id, c.criteria, c.delivery_ids`,
          )
        ).rows;
        for (const r of done) {
          // one namespace's deliveries: that namespace's subscribers hear of it; several (an
          // unscoped token's filter): only the platform namespaces, as for a subject without one
          const namespaces = r.namespaces ?? [];
          const namespace = namespaces.length === 1 ? (namespaces[0] ?? null) : null;
          await events.record(
            {
              type: 'replay.completed',
              key: r.id,
              subject: { kind: 'BulkReplay', namespace, name: r.id, uid: r.id, adminApiPath: '/api/deliveries/replay' },
              data: {
                replay: {
                  phase: 'Complete',
                  bulk: true,
                  criteria: r.criteria,
                  started: r.reopened,
                  succeeded: r.succeeded,
                  failed: r.failed,
                },
              },
            },
            trx,
          );
        }
        await trx.raw(`DELETE FROM webhook_bulk_replay WHERE completed_at < now() - interval '${KEEP_COMPLETED}'`);
        return done.length;
      });
    },
  };
}

export type BulkReplays = ReturnType<typeof createBulkReplays>;
