import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createDb, type Db } from '../../src/db/knex.js';
import { migrateLatest } from '../../src/db/migrate.js';
import { DAY, retentionJob, seedEndpoint, seedEvent } from './support.js';

const MIGRATIONS = new URL('../../migrations/', import.meta.url);

// An upgrade of a database that holds data: the schema as it was before retention (every
// migration before 063), rows in every table retention touches, then `migrate` as the chart's
// pre-upgrade hook runs it.

describe('migrations 063-064 on a database with data', () => {
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
    db = createDb({ url: adminUrl().replace(/\/postgres$/, `/${name}`), poolMax: 5 });
    before = await mkdtemp(path.join(tmpdir(), 'migrations-'));
    for (const f of await readdir(MIGRATIONS)) if (f.endsWith('.sql') && f < '063') await cp(new URL(f, MIGRATIONS), path.join(before, f));
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

  it('keeps every row, adds the columns empty and a valid index, and retention works on the upgraded rows', async () => {
    const cols = await db.raw<{ rows: unknown[] }>(
      `SELECT 1 FROM information_schema.columns WHERE table_name = 'webhook_event' AND column_name = 'payload_dropped_at'`,
    );
    expect(cols.rows).toHaveLength(0);
    // today's data: a credential, an endpoint, events in every status with deliveries and attempts
    await db('webhook_inbound_credential').insert({
      source: 'shop',
      username: 'u',
      password_hash: '$2b$10$0123456789012345678901234567890123456789012345678901',
    });
    const ep = await seedEndpoint(db, 'shop');
    // seedEvent writes only columns that exist before 063
    const old = await seedEvent(db, [ep], {
      source: 'shop',
      age: 100 * DAY,
      status: 'FAILED',
      deliveries: [{ status: 'FAILED', attempts: 3 }],
    });
    const held = await seedEvent(db, [ep], {
      source: 'shop',
      age: 100 * DAY,
      status: 'FAILED',
      deliveries: [{ status: 'FAILED', held: true }],
    });
    const recent = await seedEvent(db, [ep], { source: 'shop', age: 60, status: 'RECEIVED', deliveries: [{ status: 'PENDING' }] });
    const snapshot = async () => ({
      events: await db('webhook_event').select('id', 'payload', 'headers', 'status').orderBy('id'),
      deliveries: await db('webhook_delivery').select('id', 'status', 'redrive_on_enable').orderBy('id'),
      attempts: await db('webhook_delivery_attempt').select('delivery_id', 'attempt').orderBy(['delivery_id', 'attempt']),
    });
    const rowsBefore = await snapshot();

    const applied = await migrateLatest(db);
    expect(applied.slice(0, 2)).toEqual(['063-retention-columns.sql', '064-retention-indexes.sql']);
    expect(await snapshot()).toEqual(rowsBefore);
    expect(await db('webhook_event').whereNotNull('payload_dropped_at').count({ n: '*' })).toEqual([{ n: 0 }]);
    expect(await db('webhook_inbound_credential').first('retention_max_age_seconds', 'retention_payload_max_age_seconds')).toEqual({
      retention_max_age_seconds: null,
      retention_payload_max_age_seconds: null,
    });
    // built concurrently and valid (an INVALID index is what a failed CONCURRENTLY build leaves);
    // 076 replaced 064's index by one of the settled events only
    const idx = await db.raw<{ rows: Array<{ valid: boolean }> }>(
      `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'webhook_event_settled_payload_kept_idx'`,
    );
    expect(idx.rows).toEqual([{ valid: true }]);
    expect(await migrateLatest(db)).toEqual([]);

    const { job } = retentionJob(db, { maxAgeSeconds: 30 * DAY });
    const run = await job.runOnce();
    expect(run.deleted).toEqual({ events: 1, deliveries: 1, attempts: 3 });
    const left = (await db('webhook_event').select('id')).map((r: { id: string }) => r.id).sort();
    expect(left).toEqual([held, recent].sort());
    expect(left).not.toContain(old);
  });
});
