import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReplayQueries } from '../../src/db/replay-queries.js';
import { UNSCOPED } from '../../src/db/tenant-scope.js';
import { SETTLED } from '../../src/db/retention-queries.js';
import { createDb } from '../../src/db/knex.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { counts, databaseWithEndpoints, DAY, exists, metricValue, retentionJob, seedEndpoint, seedEvent } from './support.js';

// The retention job against a real Postgres: what goes, what never goes whatever its age, batches,
// one replica at a time, and the metrics. Rows are backdated as a year of traffic leaves them.

describe('retention: RETENTION_MAX_AGE deletes settled events with their deliveries and attempts', () => {
  let t: TestDatabase;
  let ep: string[];
  beforeAll(async () => ({ t, ep } = await databaseWithEndpoints(2)));
  afterAll(async () => t?.destroy());

  it('deletes final events older than the age, whole; keeps younger ones; counts each table', async () => {
    const old = [];
    for (const status of ['COMPLETED', 'PARTIAL', 'FAILED'] as const) {
      old.push(
        await seedEvent(t.db, ep, {
          source: 'shop',
          age: 40 * DAY,
          status,
          deliveries: [
            { status: 'SUCCESS', attempts: 1 },
            { status: status === 'COMPLETED' ? 'SUCCESS' : 'FAILED', attempts: 3 },
          ],
        }),
      );
    }
    const young = await seedEvent(t.db, ep, { source: 'shop', age: 29 * DAY, deliveries: [{ status: 'SUCCESS' }] });
    const before = await counts(t.db);

    const { job, metrics } = retentionJob(t.db, { maxAgeSeconds: 30 * DAY });
    const run = await job.runOnce();

    expect(run.ran).toBe(true);
    expect(run.deleted).toEqual({ events: 3, deliveries: 6, attempts: 12 });
    for (const id of old) expect(await exists(t.db, id)).toBe(false);
    expect(await exists(t.db, young)).toBe(true);
    expect(await counts(t.db)).toEqual({ events: before.events - 3, deliveries: before.deliveries - 6, attempts: before.attempts - 12 });
    expect(await metricValue(metrics, 'webhook_fanout_retention_deleted_rows_total', { table: 'webhook_event' })).toBe(3);
    expect(await metricValue(metrics, 'webhook_fanout_retention_deleted_rows_total', { table: 'webhook_delivery' })).toBe(6);
    expect(await metricValue(metrics, 'webhook_fanout_retention_deleted_rows_total', { table: 'webhook_delivery_attempt' })).toBe(12);
    // the oldest left is the 29-day one
    const age = await metricValue(metrics, 'webhook_fanout_retention_oldest_row_age_seconds', { table: 'webhook_event' });
    expect(age).toBeGreaterThan(29 * DAY - 60);
    expect(age).toBeLessThan(30 * DAY);
    expect(await metricValue(metrics, 'webhook_fanout_retention_runs_total', { result: 'completed' })).toBe(1);
    expect(await metricValue(metrics, 'webhook_fanout_retention_last_run_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000 - 60);

    // a second run finds nothing more
    expect((await job.runOnce()).deleted).toEqual({ events: 0, deliveries: 0, attempts: 0 });
  });

  it('operational events (the reserved source, no credential to give it an age of its own) go by the global age like any', async () => {
    const old = await seedEvent(t.db, ep, { source: 'webhook-fanout', age: 40 * DAY, deliveries: [{ status: 'SUCCESS' }] });
    const young = await seedEvent(t.db, ep, { source: 'webhook-fanout', age: 29 * DAY, deliveries: [{ status: 'SUCCESS' }] });
    const { job } = retentionJob(t.db, { maxAgeSeconds: 30 * DAY });
    expect((await job.runOnce()).deleted).toEqual({ events: 1, deliveries: 1, attempts: 1 });
    expect(await exists(t.db, old)).toBe(false);
    expect(await exists(t.db, young)).toBe(true);
  });

  it('unset (the default) deletes nothing, however old', async () => {
    const ancient = await seedEvent(t.db, ep, { source: 'shop', age: 3000 * DAY, deliveries: [{ status: 'SUCCESS' }] });
    const { job, metrics } = retentionJob(t.db, {});
    const run = await job.runOnce();
    expect(run).toMatchObject({ ran: true, deleted: { events: 0, deliveries: 0, attempts: 0 }, payloadsDropped: 0 });
    expect(await exists(t.db, ancient)).toBe(true);
    // the oldest row's age is reported all the same: what a dashboard shows before one turns it on
    expect(await metricValue(metrics, 'webhook_fanout_retention_oldest_row_age_seconds', { table: 'webhook_event' })).toBeGreaterThan(
      2999 * DAY,
    );
  });
});

describe('retention never deletes an undelivered event, whatever its age', () => {
  let t: TestDatabase;
  let ep: string[];
  beforeAll(async () => ({ t, ep } = await databaseWithEndpoints(2)));
  afterAll(async () => t?.destroy());

  const cases = [
    {
      name: 'an event not final (RECEIVED: its workflow has not finished)',
      event: { status: 'RECEIVED' as const, deliveries: [{ status: 'PENDING' as const }] },
    },
    { name: 'an event not final without deliveries yet (not started)', event: { status: 'RECEIVED' as const } },
    {
      name: 'a delivery PENDING (a replay or a redrive in flight)',
      event: { status: 'PARTIAL' as const, deliveries: [{ status: 'SUCCESS' as const }, { status: 'PENDING' as const }] },
    },
    {
      name: 'a delivery held for a disabled endpoint',
      event: { status: 'FAILED' as const, deliveries: [{ status: 'FAILED' as const, held: true }] },
    },
    {
      name: 'an ordered delivery that FAILED and holds its key (docs/ordering.md)',
      event: { status: 'FAILED' as const, deliveries: [{ status: 'FAILED' as const, blockingKey: true }] },
    },
    {
      name: 'a delivery settled a minute ago (its run is finishing)',
      event: { status: 'COMPLETED' as const, deliveries: [{ status: 'SUCCESS' as const, changedAgo: 60 }] },
    },
  ];

  for (const c of cases) {
    it(`keeps ${c.name}: neither deleted nor its payload dropped`, async () => {
      const kept = await seedEvent(t.db, ep, { source: 'keep', age: 400 * DAY, ...c.event });
      // a settled neighbour of the same age, to show the run did delete
      const gone = await seedEvent(t.db, ep, { source: 'keep', age: 400 * DAY, deliveries: [{ status: 'SUCCESS' }] });
      const dropped = await seedEvent(t.db, ep, { source: 'keep', age: 200 * DAY, deliveries: [{ status: 'SUCCESS' }] });
      const { job } = retentionJob(t.db, { maxAgeSeconds: 300 * DAY, payloadMaxAgeSeconds: 100 * DAY });
      const run = await job.runOnce();
      expect(run.deleted.events).toBe(1);
      expect(await exists(t.db, gone)).toBe(false);
      const row = (await t.db('webhook_event').where({ id: kept }).first()) as { payload: Buffer; payload_dropped_at: Date | null };
      expect(row.payload_dropped_at).toBeNull();
      expect(row.payload.toString()).toContain('4242');
      expect((await t.db('webhook_delivery').where({ event_id: kept })).length).toBe(c.event.deliveries?.length ?? 0);
      // the settled one of 200 days lost its payload in the same run; kept's was never touched
      expect(
        ((await t.db('webhook_event').where({ id: dropped }).first()) as { payload_dropped_at: Date | null }).payload_dropped_at,
      ).not.toBeNull();
    });
  }

  it('deletes a held event once its endpoint was enabled and the redelivery settled', async () => {
    const held = await seedEvent(t.db, ep, {
      source: 'held',
      age: 400 * DAY,
      status: 'FAILED',
      deliveries: [{ status: 'FAILED', held: true }],
    });
    const { job } = retentionJob(t.db, { maxAgeSeconds: 300 * DAY });
    await job.runOnce();
    expect(await exists(t.db, held)).toBe(true);
    // the redrive delivered it (an hour ago): settled, nothing held
    await t
      .db('webhook_delivery')
      .where({ event_id: held })
      .update({ status: 'SUCCESS', redrive_on_enable: false, updated_at: t.db.raw(`now() - interval '1 hour'`) });
    await t
      .db('webhook_event')
      .where({ id: held })
      .update({ status: 'COMPLETED', updated_at: t.db.raw(`now() - interval '1 hour'`) });
    await job.runOnce();
    expect(await exists(t.db, held)).toBe(false);
  });

  it('a replay holding the event (reopen not committed yet) keeps it: skipped, and PENDING once committed', async () => {
    const ev = await seedEvent(t.db, ep, { source: 'race', age: 400 * DAY, status: 'FAILED', deliveries: [{ status: 'FAILED' }] });
    const { job } = retentionJob(t.db, { maxAgeSeconds: 300 * DAY, payloadMaxAgeSeconds: 100 * DAY });
    // the replay path's own statement, in a transaction of its own left open
    const other = createDb({ url: t.url, poolMax: 1 });
    const trx = await other.transaction();
    try {
      const reopened = await createReplayQueries(trx as unknown as typeof other).reopenFailedOfEvent(UNSCOPED, ev);
      expect(reopened).toHaveLength(1);
      const run = await job.runOnce();
      expect(run.deleted.events).toBe(0);
      expect(run.payloadsDropped).toBe(0);
      await trx.commit();
    } finally {
      if (!trx.isCompleted()) await trx.rollback();
      await other.destroy();
    }
    const again = await job.runOnce();
    expect(again.deleted.events).toBe(0);
    expect(await exists(t.db, ev)).toBe(true);
    expect(((await t.db('webhook_delivery').where({ event_id: ev }).first()) as { status: string }).status).toBe('PENDING');
  });

  it('a reopen after the payload was dropped changes nothing: the delivery stays FAILED', async () => {
    const ev = await seedEvent(t.db, ep, { source: 'late', age: 200 * DAY, status: 'FAILED', deliveries: [{ status: 'FAILED' }] });
    const { job } = retentionJob(t.db, { payloadMaxAgeSeconds: 100 * DAY });
    expect((await job.runOnce()).payloadsDropped).toBeGreaterThanOrEqual(1);
    expect(await createReplayQueries(t.db).reopenFailedOfEvent(UNSCOPED, ev)).toEqual([]);
    expect(((await t.db('webhook_delivery').where({ event_id: ev }).first()) as { status: string }).status).toBe('FAILED');
  });
});

describe('retention: RETENTION_PAYLOAD_MAX_AGE drops payloads and headers, keeps the rest', () => {
  let t: TestDatabase;
  let ep: string[];
  beforeAll(async () => ({ t, ep } = await databaseWithEndpoints(1)));
  afterAll(async () => t?.destroy());

  it('empties payload and headers, marks the event, keeps deliveries and attempts; the next run passes it over', async () => {
    const old = await seedEvent(t.db, ep, {
      source: 'p',
      age: 10 * DAY,
      deliveries: [{ status: 'FAILED', attempts: 2 }],
      status: 'FAILED',
    });
    const young = await seedEvent(t.db, ep, { source: 'p', age: 6 * 86_400, deliveries: [{ status: 'SUCCESS' }] });
    const { job, metrics } = retentionJob(t.db, { payloadMaxAgeSeconds: 7 * DAY });
    const run = await job.runOnce();
    expect(run.payloadsDropped).toBe(1);
    expect(run.deleted.events).toBe(0);
    const row = (await t.db('webhook_event').where({ id: old }).first()) as {
      payload: Buffer;
      headers: Record<string, string>;
      payload_dropped_at: Date | null;
      status: string;
    };
    expect(row.payload.length).toBe(0);
    expect(row.headers).toEqual({});
    expect(row.payload_dropped_at).toBeInstanceOf(Date);
    expect(row.status).toBe('FAILED');
    expect(
      await t
        .db('webhook_delivery_attempt')
        .join('webhook_delivery', 'webhook_delivery.id', 'webhook_delivery_attempt.delivery_id')
        .where('webhook_delivery.event_id', old),
    ).toHaveLength(2);
    const youngRow = (await t.db('webhook_event').where({ id: young }).first()) as { payload: Buffer };
    expect(youngRow.payload.toString()).toContain('4242');
    expect(await metricValue(metrics, 'webhook_fanout_retention_payloads_dropped_total')).toBe(1);
    const payloadAge = await metricValue(metrics, 'webhook_fanout_retention_oldest_payload_age_seconds');
    expect(payloadAge).toBeGreaterThan(6 * DAY - 60);
    expect(payloadAge).toBeLessThan(7 * DAY);
    expect((await job.runOnce()).payloadsDropped).toBe(0);
  });
});

describe('retention: per-source ages (InboundCredential spec.retention)', () => {
  let t: TestDatabase;
  let ep: string[];
  beforeAll(async () => ({ t, ep } = await databaseWithEndpoints(1)));
  afterAll(async () => t?.destroy());

  const credential = (source: string, maxAge: number | null, payloadMaxAge: number | null = null) =>
    t.db('webhook_inbound_credential').insert({
      source,
      username: 'u',
      password_hash: '$2b$10$0123456789012345678901234567890123456789012345678901',
      retention_max_age_seconds: maxAge,
      retention_payload_max_age_seconds: payloadMaxAge,
    });

  it('a source kept forever, one with a shorter age, one with its own payload age, the rest on the global age', async () => {
    await credential('audit', 0);
    await credential('chatty', 2 * DAY);
    await credential('private', null, 1 * DAY);
    await credential('plain', null);
    const ids = {
      audit: await seedEvent(t.db, ep, { source: 'audit', age: 400 * DAY }),
      chattyOld: await seedEvent(t.db, ep, { source: 'chatty', age: 3 * DAY }),
      chattyNew: await seedEvent(t.db, ep, { source: 'chatty', age: 1 * DAY }),
      privateOld: await seedEvent(t.db, ep, { source: 'private', age: 2 * DAY }),
      privateAncient: await seedEvent(t.db, ep, { source: 'private', age: 40 * DAY }),
      plainMid: await seedEvent(t.db, ep, { source: 'plain', age: 3 * DAY }),
      plainOld: await seedEvent(t.db, ep, { source: 'plain', age: 40 * DAY }),
      noCredential: await seedEvent(t.db, ep, { source: 'gone', age: 40 * DAY }),
    };
    const { job } = retentionJob(t.db, { maxAgeSeconds: 30 * DAY });
    const run = await job.runOnce();
    const left = new Set((await t.db('webhook_event').select('id')).map((r: { id: string }) => r.id));
    expect(left.has(ids.audit)).toBe(true);
    expect(left.has(ids.chattyOld)).toBe(false);
    expect(left.has(ids.chattyNew)).toBe(true);
    expect(left.has(ids.privateAncient)).toBe(false);
    expect(left.has(ids.plainMid)).toBe(true);
    expect(left.has(ids.plainOld)).toBe(false);
    expect(left.has(ids.noCredential)).toBe(false);
    const dropped = (id: string) =>
      t
        .db('webhook_event')
        .where({ id })
        .first()
        .then((r: { payload_dropped_at: Date | null }) => r.payload_dropped_at !== null);
    expect(await dropped(ids.privateOld)).toBe(true);
    expect(await dropped(ids.plainMid)).toBe(false);
    expect(run.deleted.events).toBe(4);
    expect(run.payloadsDropped).toBe(1);
  });
});

describe('retention: bounded batches, one replica at a time, a bounded stop', () => {
  let t: TestDatabase;
  let ep: string[];
  beforeAll(async () => ({ t, ep } = await databaseWithEndpoints(1)));
  afterAll(async () => t?.destroy());

  it('works a backlog off in batches of batchSize, passing over the events it must keep once', async () => {
    // kept ones first in age order: a job that read from the oldest every batch would never pass them
    for (let i = 0; i < 7; i++) await seedEvent(t.db, ep, { source: 'b', age: 100 * DAY + 1000 - i, status: 'RECEIVED' });
    for (let i = 0; i < 23; i++) await seedEvent(t.db, ep, { source: 'b', age: 100 * DAY - i, deliveries: [{ status: 'SUCCESS' }] });
    const { job } = retentionJob(t.db, { maxAgeSeconds: 50 * DAY, batchSize: 5 });
    const run = await job.runOnce();
    expect(run.deleted.events).toBe(23);
    expect(run.batches).toBe(6); // 30 rows scanned 5 at a time: the sixth batch is full, the seventh finds none
    expect((await counts(t.db)).events).toBe(7);
  });

  it('skips the run while another replica holds the lock, and runs once it is free', async () => {
    const ev = await seedEvent(t.db, ep, { source: 'lock', age: 100 * DAY, deliveries: [{ status: 'SUCCESS' }] });
    const other = new pg.Client({ connectionString: t.url });
    await other.connect();
    try {
      await other.query(`SELECT pg_advisory_lock(hashtext('webhook-fanout:retention'))`);
      const { job, metrics } = retentionJob(t.db, { maxAgeSeconds: 50 * DAY });
      const skipped = await job.runOnce();
      expect(skipped.ran).toBe(false);
      expect(await exists(t.db, ev)).toBe(true);
      expect(await metricValue(metrics, 'webhook_fanout_retention_runs_total', { result: 'skipped' })).toBe(1);
      await other.query(`SELECT pg_advisory_unlock(hashtext('webhook-fanout:retention'))`);
      expect((await job.runOnce()).ran).toBe(true);
      expect(await exists(t.db, ev)).toBe(false);
    } finally {
      await other.end();
    }
  });

  it('two jobs started together: one runs, the other skips', async () => {
    for (let i = 0; i < 10; i++) await seedEvent(t.db, ep, { source: 'two', age: 100 * DAY, deliveries: [{ status: 'SUCCESS' }] });
    const a = retentionJob(t.db, { maxAgeSeconds: 50 * DAY, batchSize: 2, batchPauseMs: 50 });
    const b = retentionJob(t.db, { maxAgeSeconds: 50 * DAY, batchSize: 2, batchPauseMs: 50 });
    const [ra, rb] = await Promise.all([a.job.runOnce(), b.job.runOnce()]);
    expect([ra.ran, rb.ran].sort()).toEqual([false, true]);
    expect(ra.deleted.events + rb.deleted.events).toBe(10);
  });

  it('stop() ends a run between batches, well before its pauses add up', async () => {
    await t.db('webhook_event').delete(); // the events the tests above kept would come first
    for (let i = 0; i < 20; i++) await seedEvent(t.db, ep, { source: 'stop', age: 100 * DAY, deliveries: [{ status: 'SUCCESS' }] });
    const { job } = retentionJob(t.db, { maxAgeSeconds: 50 * DAY, batchSize: 1, batchPauseMs: 5_000, intervalMs: 3_600_000 });
    const left = async () => Number((await t.db('webhook_event').where({ source: 'stop' }).count({ n: '*' }))[0]?.n);
    job.start();
    // the first batch is done and the job rests 5 s before the next
    await expect.poll(left, { timeout: 30_000 }).toBeLessThan(20);
    const t0 = Date.now();
    await job.stop();
    expect(Date.now() - t0).toBeLessThan(4_000);
    expect(await left()).toBeGreaterThan(15);
  });
});

describe('retention: a batch that outlasts the statement timeout', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => t?.destroy());

  it('is halved for the rest of the run, and the run deletes the backlog instead of failing on it', async () => {
    const ep = await seedEndpoint(t.db);
    for (let i = 0; i < 24; i++) await seedEvent(t.db, [ep], { source: 'slow', age: 100 * DAY - i, deliveries: [{ status: 'SUCCESS' }] });
    // every deleted event costs 100 ms here: a batch of 24 takes 2.4 s, over the 1 s timeout
    await t.db.raw(`CREATE FUNCTION slow_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.1); RETURN OLD; END; $$`);
    await t.db.raw(`CREATE TRIGGER slow_delete BEFORE DELETE ON webhook_event FOR EACH ROW EXECUTE FUNCTION slow_delete()`);
    const db = createDb({ url: t.url, poolMax: 2, statementTimeoutMs: 1_000 });
    try {
      const { job, metrics } = retentionJob(db, { maxAgeSeconds: 50 * DAY, batchSize: 24 });
      const run = await job.runOnce();
      expect(run.deleted.events).toBe(24);
      expect(run.batches).toBeGreaterThan(3); // 24 timed out, 12 too (1.2 s), then batches of 6
      expect(await metricValue(metrics, 'webhook_fanout_retention_runs_total', { result: 'completed' })).toBe(1);
    } finally {
      await db.destroy();
    }
  });
});

describe('retention statements use indexes, not a scan of the tables', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    const ep = await seedEndpoint(t.db);
    // enough rows that the planner's choice is a real one
    await t.db.raw(
      `INSERT INTO webhook_event (source, external_event_id, payload, status, received_at, updated_at)
       SELECT 's' || (g % 20), g::text, '\\x7b7d'::bytea, 'COMPLETED', now() - make_interval(secs => g * 60), now() - make_interval(secs => g * 60)
         FROM generate_series(1, 50000) g`,
    );
    await t.db.raw(
      `INSERT INTO webhook_delivery (event_id, endpoint_id, status, created_at, updated_at)
       SELECT id, ?, 'SUCCESS', received_at, received_at FROM webhook_event`,
      [ep],
    );
    // a year into RETENTION_PAYLOAD_MAX_AGE: most events have lost their payload already
    await t.db.raw(
      `UPDATE webhook_event SET payload = ''::bytea, payload_dropped_at = now() WHERE received_at < now() - interval '3 days'`,
    );
    await t.db.raw('ANALYZE');
  });
  afterAll(async () => t?.destroy());

  const plan = async (sql: string, bindings: Record<string, unknown>) =>
    (await t.db.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>(`EXPLAIN ${sql}`, bindings)).rows.map((r) => r['QUERY PLAN']).join('\n');

  it('the scans of the delete and payload passes, and the oldest-row probes', async () => {
    const scan = (payload: boolean, scope: string) =>
      `SELECT e.id FROM webhook_event e WHERE e.received_at < now() - make_interval(secs => 86400)
          AND (e.received_at, e.id) > ('-infinity'::timestamptz, '00000000-0000-0000-0000-000000000000'::uuid)
          ${payload ? `AND e.payload_dropped_at IS NULL AND e.status <> 'RECEIVED'` : ''} AND ${scope}
        ORDER BY e.received_at, e.id LIMIT 500`;
    const del = await plan(scan(false, `e.source <> ALL('{s1,s2}'::text[])`), {});
    expect(del).toMatch(/Index (Only )?Scan (Backward )?using webhook_event_received_id_source_idx/);
    const payload = await plan(scan(true, `e.source <> ALL('{}'::text[])`), {});
    expect(payload).toMatch(/Index (Only )?Scan (Backward )?using webhook_event_settled_payload_kept_idx/);
    const oneSource = await plan(scan(false, `e.source = 's3'`), {});
    expect(oneSource).toMatch(/Index (Only )?Scan (Backward )?using webhook_event_source_received_idx/);
    expect(oneSource).not.toMatch(/Seq Scan/);
    const oldestDelivery = await plan('SELECT created_at FROM webhook_delivery ORDER BY created_at, id LIMIT 1', {});
    expect(oldestDelivery).toMatch(/Index (Only )?Scan (Backward )?using webhook_delivery_created_idx/);
  });

  it("the settled check finds an event's deliveries through an index", async () => {
    const p = await plan(
      `SELECT e.id FROM webhook_event e WHERE e.id = ANY(ARRAY(SELECT id FROM webhook_event LIMIT 500)) AND ${SETTLED}`,
      { grace: 900 },
    );
    // through the event's unique index, or (when nothing is PENDING or held, as here) the small
    // partial indexes of PENDING and held deliveries: never a read of the whole table
    expect(p).toMatch(/Index Scan (Backward )?(using|on) webhook_delivery_(event_endpoint_uq|status_created_idx|redrive_held_idx)/);
    expect(p).not.toMatch(/Seq Scan on webhook_delivery\b/);
  });
});

describe('retention: the client addresses proven longer ago than INGEST_PROVEN_ADDRESS_DAYS', () => {
  let t: TestDatabase;
  beforeAll(async () => (t = await createTestDatabase()));
  afterAll(async () => t?.destroy());

  const prove = (address: string, ageSeconds: number) =>
    t.db.raw(`INSERT INTO webhook_proven_address (source, address, proven_at) VALUES ('shop', ?, now() - make_interval(secs => ?))`, [
      address,
      ageSeconds,
    ]);
  const addresses = async () => ((await t.db('webhook_proven_address').orderBy('address').pluck('address')) as string[]).sort();

  it('without the setting, none goes', async () => {
    await prove('10.0.0.99', 400 * DAY);
    const { job } = retentionJob(t.db, {});
    expect((await job.runOnce()).provenAddresses).toBe(0);
    expect(await addresses()).toEqual(['10.0.0.99']);
  });

  it('deletes the older pairs in batches, keeps the younger, counts them', async () => {
    for (let i = 1; i <= 5; i++) await prove(`10.0.0.${i}`, (30 + i) * DAY);
    await prove('10.0.1.1', 29 * DAY);
    await prove('10.0.1.2', 60);
    const { job, metrics } = retentionJob(t.db, { batchSize: 2 }, { provenAddressMaxAgeSeconds: 30 * DAY });
    const run = await job.runOnce();
    expect(run.provenAddresses).toBe(6);
    expect(await addresses()).toEqual(['10.0.1.1', '10.0.1.2']);
    expect(await metricValue(metrics, 'webhook_fanout_retention_deleted_rows_total', { table: 'webhook_proven_address' })).toBe(6);
  });
});
