import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { fillEvents, planReads, type ReadPlan } from '../../bench/index-plans.js';
import { createDb, type Db } from '../../src/db/knex.js';
import { migrateLatest } from '../../src/db/migrate.js';

const MIGRATIONS = new URL('../../migrations/', import.meta.url);

// Migration 076 (issue 36): fewer indexes on webhook_event, each read still through one. An
// upgrade of a database that holds events (the schema as 075 left it), then every read of
// webhook_event that an index is there for, as the code makes it, EXPLAIN ANALYZE'd.

/** What webhook_event's indexes are after 076, and whether each is valid (a failed CONCURRENTLY build leaves an invalid one). */
async function eventIndexes(db: Db): Promise<Array<{ name: string; valid: boolean }>> {
  const res = await db.raw<{ rows: Array<{ name: string; valid: boolean }> }>(
    `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'webhook_event'::regclass ORDER BY 1`,
  );
  return res.rows;
}

describe('migration 076 on a database with events', () => {
  let db: Db;
  let name: string;
  let before: string;
  const adminUrl = () => inject('pgAdminUrl');

  beforeAll(async () => {
    name = `t_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    db = createDb({ url: adminUrl().replace(/\/postgres$/, `/${name}`), poolMax: 4, statementTimeoutMs: 0 });
    before = await mkdtemp(path.join(tmpdir(), 'migrations-'));
    for (const f of await readdir(MIGRATIONS)) if (f.endsWith('.sql') && f < '076') await cp(new URL(f, MIGRATIONS), path.join(before, f));
    await migrateLatest(db, before);
  });
  afterAll(async () => {
    await db?.destroy();
    await rm(before, { recursive: true, force: true });
    const c = new pg.Client({ connectionString: adminUrl() });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });

  let plans: Map<string, ReadPlan>;

  it("keeps every row, leaves nine valid indexes in place of ten (six of them written by an insert, from nine), and running it again changes nothing; 081 adds ordering's tenth", async () => {
    await fillEvents(db, 50_000);
    const rows = async () =>
      db.raw<{ rows: Array<{ n: number; digest: string }> }>(
        `SELECT count(*)::int AS n, md5(string_agg(id::text || status || coalesce(payload_dropped_at::text, ''), ',' ORDER BY id)) AS digest FROM webhook_event`,
      );
    const rowsBefore = (await rows()).rows;
    expect((await eventIndexes(db)).map((i) => i.name)).toContain('webhook_event_status_received_idx');

    expect((await migrateLatest(db))[0]).toBe('076-event-indexes-merged.sql');
    expect((await rows()).rows).toEqual(rowsBefore);
    expect(await eventIndexes(db)).toEqual(
      [
        'webhook_event_pkey',
        'webhook_event_received_id_source_idx',
        'webhook_event_received_published_idx',
        'webhook_event_settled_payload_kept_idx',
        'webhook_event_source_external_id_uq',
        'webhook_event_source_received_idx',
        'webhook_event_type_received_idx',
        // migration 081 (ordered delivery): the events not finished yet by position, written by an insert
        'webhook_event_unprepared_position_idx',
        'webhook_event_unpublished_idx',
        'webhook_event_unsuccessful_received_idx',
      ].map((n) => ({ name: n, valid: true })),
    );
    expect(await migrateLatest(db)).toEqual([]);

    await db.raw('VACUUM ANALYZE webhook_event');
    plans = new Map((await planReads(db)).map((p) => [p.read, p]));
    console.log([...plans.values()].map((p) => `${p.read}: ${p.scans.join('; ')} (${p.rowsRead} rows)`).join('\n'));
  }, 300_000);

  it.each([
    ['GET /api/events (newest first)', 'webhook_event_received_id_source_idx', 100],
    // one source in eight: walking the events newest first finds a page as soon as its own index
    ['GET /api/events?source=', /webhook_event_(source_received|received_id_source)_idx/, 1_000],
    ['GET /api/events?status=FAILED', 'webhook_event_unsuccessful_received_idx', 100],
    ['GET /api/events?status=PARTIAL', 'webhook_event_unsuccessful_received_idx', 100],
    ['GET /api/events?type= (rare)', 'webhook_event_type_received_idx', 100],
    ['GET /api/events?source=&externalId=', 'webhook_event_source_external_id_uq', 10],
    ['stats: events per source, last day, 15m', 'webhook_event_received_id_source_idx', 5_000],
    ['retention: payload pass (3 d)', 'webhook_event_settled_payload_kept_idx', 1_000],
    ['retention: delete pass (14 d, all but one source)', 'webhook_event_received_id_source_idx', 1_000],
    ['sweeper: published, never started', 'webhook_event_received_published_idx', 1_000],
  ] as Array<[string, string | RegExp, number]>)('%s reads through %s, at most %i rows', (read, index, most) => {
    const p = plans.get(read);
    expect(p, read).toBeDefined();
    expect(p?.scans.join('; ')).toMatch(index);
    expect(p?.rowsRead ?? Infinity).toBeLessThanOrEqual(most);
  });

  it('no read of webhook_event scans the table (but a month of a month-long table), and none reads more than a fraction of it', () => {
    for (const p of plans.values()) {
      // the console's month in day buckets is every event of this month-long table: read whole, as it must be
      if (p.read.startsWith('stats: events per source, 30 days')) continue;
      expect(p.scans, p.read).not.toContain('Seq Scan');
      expect(p.rowsRead, `${p.read}: ${p.scans.join('; ')}`).toBeLessThan(12_000);
    }
  });
});
