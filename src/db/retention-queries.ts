import type { Knex } from 'knex';
import type { Db } from './knex.js';

// The retention job's statements (src/retention/retention-job.ts). Each runs on the one connection
// that holds the job's advisory lock, so the lock is held exactly while the work is done, and a
// replica that died loses it with its session.

/** Where a pass has got to: the last event it looked at, in (received_at, id) order. */
export interface PurgeCursor {
  /** as Postgres prints it: microseconds, which a JS Date would cut */
  receivedAt: string;
  id: string;
}

export const PURGE_START: PurgeCursor = { receivedAt: '-infinity', id: '00000000-0000-0000-0000-000000000000' };

/** The events of one source, or of every source but those with an age of their own. */
export type PurgeScope = { source: string } | { exceptSources: string[] };

/** What the job does to a due event: delete it whole, or drop its payload and headers. */
export type PurgeKind = 'delete' | 'payload';

export interface SourceRetentionRow {
  source: string;
  /** null: the global age; 0: forever */
  maxAgeSeconds: number | null;
  payloadMaxAgeSeconds: number | null;
}

export interface DeletedRows {
  events: number;
  deliveries: number;
  attempts: number;
}

/** Ages in seconds of the oldest rows; null: the table holds none. */
export interface OldestAges {
  event: number | null;
  delivery: number | null;
  /**
   * the oldest settled event that still carries its payload: what the payload pass can drop (an
   * event in flight keeps it until it is settled, whatever its age)
   */
  payload: number | null;
}

/**
 * One key for every replica of every release sharing the database (two releases on one database
 * would share the rows too). Session-level: held across the run's transactions, freed by the
 * session's end if the process dies.
 */
const LOCK_KEY = `hashtext('webhook-fanout:retention')`;

/**
 * An event the job may touch: final, and nothing of it still to be delivered: no delivery PENDING
 * (a first run, a retry, a replay or a redrive in flight) and none held for a disabled endpoint
 * (redrive_on_enable: it is delivered when the endpoint is enabled, however late), nor an ordered
 * delivery that FAILED and holds its key (ordering_blocked_at, docs/ordering.md: its key must not
 * unblock because its poison event went, and it is to be replayed or skipped). A grace period
 * after the last change of the event or of any of its deliveries leaves alone what a workflow is
 * still finishing (a replay recomputes the event's status after its last delivery settled).
 * `e` is the event; :grace is in seconds.
 */
export const SETTLED = `e.status <> 'RECEIVED'
   AND e.updated_at < now() - make_interval(secs => :grace)
   AND NOT EXISTS (
     SELECT 1 FROM webhook_delivery d
      WHERE d.event_id = e.id
        AND (d.status = 'PENDING' OR d.redrive_on_enable OR d.ordering_blocked_at IS NOT NULL
             OR d.updated_at >= now() - make_interval(secs => :grace)))`;

function scopeSql(scope: PurgeScope): { sql: string; bindings: Record<string, string | string[]> } {
  return 'source' in scope
    ? { sql: 'e.source = :source', bindings: { source: scope.source } }
    : { sql: 'e.source <> ALL(:except::text[])', bindings: { except: scope.exceptSources } };
}

export function createRetentionQueries(db: Db) {
  const on = <T>(conn: unknown, sql: string, bindings: Knex.ValueDict = {}): Knex.Raw<T> => db.raw<T>(sql, bindings).connection(conn);

  return {
    async tryLock(conn: unknown): Promise<boolean> {
      const res = await on<{ rows: Array<{ locked: boolean }> }>(conn, `SELECT pg_try_advisory_lock(${LOCK_KEY}) AS locked`);
      return res.rows[0]?.locked === true;
    },

    async unlock(conn: unknown): Promise<void> {
      await on(conn, `SELECT pg_advisory_unlock(${LOCK_KEY})`);
    },

    /** Sources with an age of their own (InboundCredential spec.retention). */
    async sourceOverrides(conn: unknown): Promise<SourceRetentionRow[]> {
      const res = await on<{ rows: Array<{ source: string; max_age: number | null; payload_max_age: number | null }> }>(
        conn,
        `SELECT source, retention_max_age_seconds AS max_age, retention_payload_max_age_seconds AS payload_max_age
           FROM webhook_inbound_credential
          WHERE retention_max_age_seconds IS NOT NULL OR retention_payload_max_age_seconds IS NOT NULL
          ORDER BY source`,
      );
      return res.rows.map((r) => ({ source: r.source, maxAgeSeconds: r.max_age, payloadMaxAgeSeconds: r.payload_max_age }));
    },

    /**
     * The next events older than the age, after the cursor, oldest first, through an index
     * (webhook_event_received_id_source_idx for deletes, webhook_event_settled_payload_kept_idx
     * for payloads, webhook_event_source_received_idx for one source). Whether each may be touched
     * is decided under its lock (purge / dropPayloads); the cursor moves past those that may not,
     * so events waiting to be settled are passed over once per run, not read again by every batch.
     * The payload pass names the settled events' index's condition (SETTLED asks it anyway): an
     * event enters that index when it is settled, not when it is inserted (migration 076).
     */
    async scan(
      conn: unknown,
      p: { kind: PurgeKind; scope: PurgeScope; ageSeconds: number; after: PurgeCursor; limit: number },
    ): Promise<{ ids: string[]; last: PurgeCursor | undefined }> {
      const scope = scopeSql(p.scope);
      const res = await on<{ rows: Array<{ id: string; received_at: string }> }>(
        conn,
        `SELECT e.id, e.received_at::text AS received_at FROM webhook_event e
          WHERE e.received_at < now() - make_interval(secs => :age)
            AND (e.received_at, e.id) > (:afterTs::timestamptz, :afterId::uuid)
            ${p.kind === 'payload' ? `AND e.payload_dropped_at IS NULL AND e.status <> 'RECEIVED'` : ''}
            AND ${scope.sql}
          ORDER BY e.received_at, e.id
          LIMIT :limit`,
        { age: p.ageSeconds, afterTs: p.after.receivedAt, afterId: p.after.id, limit: p.limit, ...scope.bindings },
      );
      const last = res.rows.at(-1);
      return { ids: res.rows.map((r) => r.id), last: last && { receivedAt: last.received_at, id: last.id } };
    },

    /**
     * Deletes those of `ids` that are settled, with their deliveries and attempt log, in one
     * transaction: first their rows are locked (rows a replay holds are skipped, not waited for),
     * then the rule is checked again in a statement that sees every change committed before the
     * locks were taken. A replay reopens a delivery only while it holds its event's row (FOR
     * SHARE, db/replay-queries.ts), so no delivery can become PENDING between the check and the
     * delete.
     */
    async purge(conn: unknown, ids: readonly string[], graceSeconds: number): Promise<DeletedRows> {
      return db.transaction(
        async (trx) => {
          const locked = await lockSettled(trx, ids, graceSeconds);
          if (locked.length === 0) return { events: 0, deliveries: 0, attempts: 0 };
          // the deliveries and attempts explicitly, not by ON DELETE CASCADE, to count them
          const res = await trx.raw<{ rows: DeletedRows[] }>(
            `WITH due AS (
               SELECT e.id FROM webhook_event e WHERE e.id = ANY(:ids::uuid[]) AND ${SETTLED}),
             deliveries AS (SELECT d.id FROM webhook_delivery d JOIN due ON d.event_id = due.id),
             attempts_gone AS (
               DELETE FROM webhook_delivery_attempt a USING deliveries WHERE a.delivery_id = deliveries.id RETURNING 1),
             deliveries_gone AS (
               DELETE FROM webhook_delivery d USING deliveries WHERE d.id = deliveries.id RETURNING 1),
             events_gone AS (
               DELETE FROM webhook_event e USING due WHERE e.id = due.id RETURNING 1)
             SELECT (SELECT count(*) FROM events_gone) AS events,
                    (SELECT count(*) FROM deliveries_gone) AS deliveries,
                    (SELECT count(*) FROM attempts_gone) AS attempts`,
            { ids: locked, grace: graceSeconds },
          );
          return res.rows[0] ?? { events: 0, deliveries: 0, attempts: 0 };
        },
        { connection: conn },
      );
    },

    /** Drops the payload and headers of those of `ids` that are settled (same locking as purge). */
    async dropPayloads(conn: unknown, ids: readonly string[], graceSeconds: number): Promise<number> {
      const dropped = await db.transaction(
        async (trx) => {
          const locked = await lockSettled(trx, ids, graceSeconds);
          if (locked.length === 0) return 0;
          return trx
            .raw<{ rowCount: number }>(
              `UPDATE webhook_event e SET payload = '\\x'::bytea, headers = '{}'::jsonb, payload_dropped_at = now()
              WHERE e.id = ANY(:ids::uuid[]) AND e.payload_dropped_at IS NULL AND ${SETTLED}`,
              { ids: locked, grace: graceSeconds },
            )
            .then((r) => r.rowCount);
        },
        { connection: conn },
      );
      return dropped ?? 0;
    },

    /**
     * Forgets at most `limit` (source, client address) pairs proven longer ago than the age
     * (INGEST_PROVEN_ADDRESS_DAYS, ingest/proven-addresses.ts), the oldest first; how many went.
     */
    async purgeProvenAddresses(conn: unknown, ageSeconds: number, limit: number): Promise<number> {
      const res = await on<{ rows: Array<{ n: number }> }>(
        conn,
        `WITH gone AS (
           DELETE FROM webhook_proven_address
            WHERE (source, address) IN (
              SELECT source, address FROM webhook_proven_address
               WHERE proven_at < now() - make_interval(secs => :age)
               ORDER BY proven_at
               LIMIT :limit)
           RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        { age: ageSeconds, limit },
      );
      return res.rows[0]?.n ?? 0;
    },

    async oldest(conn: unknown): Promise<OldestAges> {
      const age = (sql: string) => `extract(epoch FROM now() - (${sql}))::float8`;
      const res = await on<{ rows: OldestAges[] }>(
        conn,
        `SELECT ${age('SELECT received_at FROM webhook_event ORDER BY received_at, id LIMIT 1')} AS event,
                ${age('SELECT created_at FROM webhook_delivery ORDER BY created_at, id LIMIT 1')} AS delivery,
                ${age(`SELECT received_at FROM webhook_event WHERE payload_dropped_at IS NULL AND status <> 'RECEIVED' ORDER BY received_at, id LIMIT 1`)} AS payload`,
      );
      return res.rows[0] ?? { event: null, delivery: null, payload: null };
    },
  };
}

async function lockSettled(trx: Knex.Transaction, ids: readonly string[], graceSeconds: number): Promise<string[]> {
  const res = await trx.raw<{ rows: Array<{ id: string }> }>(
    `SELECT e.id FROM webhook_event e WHERE e.id = ANY(:ids::uuid[]) AND ${SETTLED} FOR UPDATE OF e SKIP LOCKED`,
    { ids: [...ids], grace: graceSeconds },
  );
  return res.rows.map((r) => r.id);
}
