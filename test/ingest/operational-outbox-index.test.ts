import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fileDatabase } from '../support/db.js';
import { planOf } from '../support/query-plan.js';

// Operational events (docs/operations-events.md) wait unpublished for ingest's sweeper, which looks
// for them every second: through the partial index of unpublished events (migration 052), whatever
// the number of events published.
describe("the sweeper's look for operational events", () => {
  const t = fileDatabase();

  it("the sweeper's look for unpublished operational events, every second, reads only the unpublished (EXPLAIN ANALYZE)", async () => {
    const db = t.database.db;
    await db.raw(
      `INSERT INTO webhook_event (source, external_event_id, payload, status, published_at, received_at)
       SELECT 'webhook-fanout', 'published-' || i, convert_to('{}', 'UTF8'), 'COMPLETED', now(), now() - interval '1 hour'
         FROM generate_series(1, 20000) AS i`,
    );
    const waiting = await Promise.all(
      [1, 2, 3].map((i) =>
        t.repos.operationalEvents.record({
          type: 'endpoint.disabled',
          key: `${randomUUID()}:${i}`,
          subject: { kind: 'WebhookEndpoint', namespace: 'payments', name: 'ledger', uid: null, adminApiPath: '/api/deliveries' },
        }),
      ),
    );
    expect(waiting).toEqual([true, true, true]);
    await db.raw('VACUUM ANALYZE webhook_event');
    const seen: Array<{ sql: string; bindings: readonly unknown[] }> = [];
    const capture = (q: { sql: string; bindings: readonly unknown[] }) => seen.push(q);
    db.on('query', capture);
    let found: Array<{ id: string }>;
    try {
      found = await t.repos.events.findUnpublishedOperational(100);
    } finally {
      db.off('query', capture);
    }
    expect(found).toHaveLength(3);
    const [statement] = seen;
    if (!statement) throw new Error('findUnpublishedOperational ran no statement');
    const plan = await planOf(db, statement.sql.replace(/\$\d+/g, '?'), statement.bindings as never, { analyze: true });
    const scan = plan.find((n) => n['Relation Name'] === 'webhook_event');
    expect(scan?.['Index Name']).toBe('webhook_event_unpublished_idx');
    expect((scan?.['Actual Rows'] ?? 0) + (scan?.['Rows Removed by Filter'] ?? 0)).toBeLessThanOrEqual(10);
  });
});
