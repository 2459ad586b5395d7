import { DEFAULT_OPERATIONS_EVENTS } from '../../src/config/settings.js';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createDeliveryRepository } from '../../src/db/deliveries.js';
import type { Db } from '../../src/db/knex.js';
import { fileDatabase } from '../support/db.js';
import { planOf } from '../support/query-plan.js';

// Migration 070: the sweeper finds the events published but never started through an index of the
// events still RECEIVED, and prepare's write of the workflow id, which no index refers to any
// more, is a HOT update (no index entry). Against the real Postgres, with its plans and counters.
describe("the sweeper index and prepare's write to the event", () => {
  const t = fileDatabase();

  it('finds the events never started among many settled and many in flight, reading neither (EXPLAIN ANALYZE)', async () => {
    const db = t.database.db;
    const source = `sweep-${randomUUID().slice(0, 8)}`;
    const insert = (n: number, status: string, started: boolean, prefix: string) =>
      db.raw(
        `INSERT INTO webhook_event (source, external_event_id, payload, status, published_at, received_at, workflow_id)
         SELECT ?, ? || i, convert_to('{}', 'UTF8'), ?, now() - interval '1 hour', now() - interval '1 hour', CASE WHEN ? THEN 'run-' || i END
           FROM generate_series(1, ?) AS i`,
        [source, prefix, status, started, n],
      );
    await insert(20_000, 'COMPLETED', true, 'done-');
    await insert(300, 'RECEIVED', true, 'retrying-');
    await insert(5, 'RECEIVED', false, 'lost-');
    await db.raw('VACUUM ANALYZE webhook_event');

    // the statement the sweeper runs, as it runs it
    const seen: Array<{ sql: string; bindings: readonly unknown[] }> = [];
    const capture = (q: { sql: string; bindings: readonly unknown[] }) => seen.push(q);
    db.on('query', capture);
    let found: Array<{ id: string }>;
    try {
      found = await t.repos.events.findUnstarted(60_000, 100);
    } finally {
      db.off('query', capture);
    }
    const lost = await db('webhook_event').where({ source }).whereNull('workflow_id').pluck('id');
    expect(found.map((e) => e.id).sort()).toEqual([...lost].sort());

    const [statement] = seen;
    if (!statement) throw new Error('findUnstarted ran no statement');
    const plan = await planOf(db, statement.sql.replace(/\$\d+/g, '?'), statement.bindings as never, { analyze: true });
    const scan = plan.find((n) => n['Relation Name'] === 'webhook_event');
    expect(scan?.['Index Name']).toBe('webhook_event_received_published_idx');
    // the RECEIVED ones only: the 20 000 settled events are not in the index
    const read = (scan?.['Actual Rows'] ?? 0) + (scan?.['Rows Removed by Filter'] ?? 0);
    expect(read).toBeLessThanOrEqual(305);
  });

  it("prepare's write of the workflow id to a new event is a HOT update: no index entry", async () => {
    const source = `hot-${randomUUID().slice(0, 8)}`;
    const stored = await t.repos.events.insertOrGetDuplicate({
      source,
      externalEventId: randomUUID(),
      eventType: null,
      payload: Buffer.from('{}'),
      contentType: 'application/json',
      headers: {},
    });
    await t.database.db.transaction(async (trx) => {
      const deliveries = createDeliveryRepository(trx as unknown as Db, DEFAULT_OPERATIONS_EVENTS);
      await deliveries.prepareRun(stored.id, stored.id);
      const counts = await trx.raw<{ rows: Array<{ updated: number; hot: number }> }>(
        `SELECT pg_stat_get_xact_tuples_updated('webhook_event'::regclass) AS updated,
                pg_stat_get_xact_tuples_hot_updated('webhook_event'::regclass) AS hot`,
      );
      expect(counts.rows[0]).toEqual({ updated: 1, hot: 1 });
    });
    expect((await t.repos.events.get(stored.id))?.workflowId).toBe(stored.id);
  });
});
