import { DEFAULT_OPERATIONS_EVENTS } from '../src/config/settings.js';
import type { Knex } from 'knex';
import { createAdminQueries } from '../src/db/admin-queries.js';
import { createEventRepository } from '../src/db/events.js';
import type { Db } from '../src/db/knex.js';
import { createRetentionQueries, PURGE_START } from '../src/db/retention-queries.js';
import { createStatsQueries } from '../src/db/stats-queries.js';
import { UNSCOPED } from '../src/db/tenant-scope.js';
import { nodesOf, type PlanNode } from '../test/support/query-plan.js';

// Which index each read of webhook_event uses, on a filled table: the statements as the code
// makes them (captured from knex), each EXPLAIN ANALYZE'd. Used by bench/index-bench.ts.

const DAY_S = 86_400;

/** The rare event type of the fill: 1 event in 10 000. */
export const RARE_TYPE = 'invoice.voided';

/**
 * A month of events, newest last: 8 sources, 20 common types and a rare one, 94 % COMPLETED,
 * 2 % FAILED, 2 % PARTIAL, the newest 0.5 % RECEIVED (in flight; a tenth of them never started),
 * payloads dropped for the settled events older than a week; one delivery each.
 */
export async function fillEvents(db: Db, events: number): Promise<void> {
  await db.transaction(async (trx) => {
    await trx.raw('SET LOCAL statement_timeout = 0');
    const endpoint = (await trx('webhook_endpoint')
      .insert({ name: 'plans', source: 'src-0', url: 'http://127.0.0.1:9/' })
      .returning('id')) as Array<{
      id: string;
    }>;
    await trx.raw(
      `INSERT INTO webhook_event (source, external_event_id, event_type, payload, content_type, headers, status, workflow_id,
                                  published_at, received_at, completed_at, updated_at, payload_dropped_at)
       SELECT 'src-' || (g % 8), 'evt-' || g,
              CASE WHEN g % 10000 = 7 THEN :rare ELSE 'type-' || (g % 20) END,
              CASE WHEN dropped THEN '\\x'::bytea ELSE convert_to(repeat('{"k":"value"}', 20), 'UTF8') END,
              'application/json',
              CASE WHEN dropped THEN '{}'::jsonb ELSE '{"content-type":"application/json","user-agent":"sender/1.0"}'::jsonb END,
              status, CASE WHEN status = 'RECEIVED' AND g % 10 = 0 THEN NULL ELSE 'wf-' || g END,
              t, t, CASE WHEN status = 'RECEIVED' THEN NULL ELSE t + interval '2 seconds' END, t + interval '2 seconds',
              CASE WHEN dropped THEN now() END
         FROM generate_series(1, :n) g,
              LATERAL (SELECT now() - make_interval(secs => (:n - g) * (30.0 * :day / :n)) AS t) at,
              LATERAL (SELECT CASE WHEN g > :n * 0.995 THEN 'RECEIVED' WHEN g % 50 = 0 THEN 'FAILED'
                                   WHEN g % 50 = 1 THEN 'PARTIAL' ELSE 'COMPLETED' END AS status) s,
              LATERAL (SELECT s.status <> 'RECEIVED' AND at.t < now() - interval '7 days' AS dropped) d`,
      { rare: RARE_TYPE, n: events, day: DAY_S },
    );
    await trx.raw(
      `INSERT INTO webhook_delivery (event_id, endpoint_id, status, attempts, created_at, completed_at, updated_at)
       SELECT id, :endpoint, CASE status WHEN 'COMPLETED' THEN 'SUCCESS' WHEN 'RECEIVED' THEN 'PENDING' ELSE 'FAILED' END, 1,
              received_at, completed_at, updated_at
         FROM webhook_event`,
      { endpoint: endpoint[0]?.id ?? '' },
    );
  });
  // what autovacuum does to a table that grew: statistics and the visibility map
  await db.raw('VACUUM ANALYZE webhook_event');
  await db.raw('VACUUM ANALYZE webhook_delivery');
}

/** How a read reached webhook_event: each scan of it, the rows it read, and the statement's time. */
export interface ReadPlan {
  read: string;
  scans: string[];
  rowsRead: number;
  ms: number;
}

interface Captured {
  sql: string;
  bindings: readonly Knex.RawBinding[];
}

/** The statements `fn` runs (as knex sends them, $n placeholders back to ?), in order. */
async function statementsOf(db: Db, fn: () => Promise<unknown>): Promise<Captured[]> {
  const seen: Captured[] = [];
  const capture = (q: { sql: string; bindings?: readonly Knex.RawBinding[] }) =>
    seen.push({ sql: q.sql.replace(/\$\d+/g, '?'), bindings: q.bindings ?? [] });
  db.on('query', capture);
  try {
    await fn();
  } finally {
    db.off('query', capture);
  }
  return seen;
}

async function explain(db: Db, read: string, s: Captured): Promise<ReadPlan> {
  const res = await db.raw<{ rows: Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode; 'Execution Time': number }> }> }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${s.sql}`,
    s.bindings,
  );
  const top = res.rows[0]?.['QUERY PLAN'][0];
  if (!top) throw new Error(`no plan for ${read}`);
  const onEvents = nodesOf(top.Plan).filter(
    (n) => n['Relation Name'] === 'webhook_event' || (n['Index Name']?.startsWith('webhook_event') ?? false),
  );
  const read_ = (n: PlanNode) => ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1);
  return {
    read,
    scans: onEvents.map(
      (n) =>
        `${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''}` +
        (n['Heap Fetches'] !== undefined ? ` (heap fetches ${n['Heap Fetches']})` : ''),
    ),
    // a bitmap's index and heap nodes count the same rows: the heap node's
    rowsRead: onEvents.filter((n) => n['Node Type'] !== 'Bitmap Index Scan').reduce((a, n) => a + read_(n), 0),
    ms: top['Execution Time'],
  };
}

/** Every read of webhook_event that an index is there for, EXPLAIN ANALYZE'd on `db`. */
export async function planReads(db: Db): Promise<ReadPlan[]> {
  const admin = createAdminQueries(db, DEFAULT_OPERATIONS_EVENTS);
  const events = createEventRepository(db, DEFAULT_OPERATIONS_EVENTS);
  const stats = createStatsQueries(db);
  const retention = createRetentionQueries(db);
  const now = Date.now();
  const reads: Array<[string, (conn: unknown) => Promise<unknown>]> = [
    ['GET /api/events (newest first)', () => admin.listEvents(UNSCOPED, {}, 50)],
    ['GET /api/events?source=', () => admin.listEvents(UNSCOPED, { source: 'src-3' }, 50)],
    ['GET /api/events?status=FAILED', () => admin.listEvents(UNSCOPED, { status: 'FAILED' }, 50)],
    ['GET /api/events?status=PARTIAL', () => admin.listEvents(UNSCOPED, { status: 'PARTIAL' }, 50)],
    ['GET /api/events?status=RECEIVED', () => admin.listEvents(UNSCOPED, { status: 'RECEIVED' }, 50)],
    ['GET /api/events?status=COMPLETED', () => admin.listEvents(UNSCOPED, { status: 'COMPLETED' }, 50)],
    ['GET /api/events?type= (common)', () => admin.listEvents(UNSCOPED, { type: 'type-3' }, 50)],
    ['GET /api/events?type= (rare)', () => admin.listEvents(UNSCOPED, { type: RARE_TYPE }, 50)],
    ['GET /api/events?source=&externalId=', () => admin.listEvents(UNSCOPED, { source: 'src-3', externalId: 'evt-1003' }, 50)],
    [
      'GET /api/events (a day, second page)',
      async () => {
        const first = await admin.listEvents(UNSCOPED, { from: new Date(now - 2 * DAY_S * 1000), to: new Date(now - DAY_S * 1000) }, 50);
        if (first.next)
          await admin.listEvents(UNSCOPED, { from: new Date(now - 2 * DAY_S * 1000), to: new Date(now - DAY_S * 1000) }, 50, first.next);
      },
    ],
    ['GET /api/deliveries?eventType= (rare)', () => admin.listDeliveries(UNSCOPED, { eventType: RARE_TYPE }, 50)],
    [
      'stats: events per source, last hour, 1m',
      () => stats.eventsPerSource({ from: new Date(now - 3_600_000), to: new Date(now), bucketSeconds: 60 }, UNSCOPED),
    ],
    [
      'stats: events per source, last day, 15m',
      () => stats.eventsPerSource({ from: new Date(now - DAY_S * 1000), to: new Date(now), bucketSeconds: 900 }, UNSCOPED),
    ],
    [
      'stats: events per source, 30 days, 1d',
      () => stats.eventsPerSource({ from: new Date(now - 30 * DAY_S * 1000), to: new Date(now), bucketSeconds: DAY_S }, UNSCOPED),
    ],
    [
      'retention: delete pass (14 d, all but one source)',
      (conn) =>
        retention.scan(conn, {
          kind: 'delete',
          scope: { exceptSources: ['src-1'] },
          ageSeconds: 14 * DAY_S,
          after: PURGE_START,
          limit: 500,
        }),
    ],
    [
      'retention: delete pass, one source',
      (conn) =>
        retention.scan(conn, { kind: 'delete', scope: { source: 'src-1' }, ageSeconds: 14 * DAY_S, after: PURGE_START, limit: 500 }),
    ],
    [
      'retention: payload pass (3 d)',
      (conn) =>
        retention.scan(conn, { kind: 'payload', scope: { exceptSources: [] }, ageSeconds: 3 * DAY_S, after: PURGE_START, limit: 500 }),
    ],
    [
      'retention: payload pass, one source',
      (conn) =>
        retention.scan(conn, { kind: 'payload', scope: { source: 'src-1' }, ageSeconds: 3 * DAY_S, after: PURGE_START, limit: 500 }),
    ],
    ['retention: oldest rows', (conn) => retention.oldest(conn)],
    ['sweeper: published, never started', () => events.findUnstarted(60_000, 100)],
    ['sweeper: never published', () => events.findUnpublished(10_000, 100)],
  ];
  const conn: unknown = await db.client.acquireConnection();
  const captured: Array<{ read: string; statement: Captured }> = [];
  try {
    for (const [read, fn] of reads) {
      const statements = (await statementsOf(db, () => fn(conn))).filter((s) => /webhook_event/.test(s.sql));
      if (statements.length === 0) throw new Error(`${read}: no statement on webhook_event`);
      statements.forEach((statement, i) => captured.push({ read: statements.length > 1 ? `${read} #${i + 1}` : read, statement }));
    }
  } finally {
    await db.client.releaseConnection(conn);
  }
  const out: ReadPlan[] = [];
  for (const c of captured) out.push(await explain(db, c.read, c.statement));
  return out;
}
