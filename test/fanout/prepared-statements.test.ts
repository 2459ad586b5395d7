import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, prepared, type Db } from '../../src/db/knex.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import { createTestDatabase, refusal, type TestDatabase } from '../support/db.js';
import { addEndpoint, addEvent, uniqueSource } from './support/harness.js';
import { sleep } from '../support/wait.js';

// The delivery path's statements are named prepared statements, kept per connection (db/knex.ts
// prepared): a failure around them must behave as it did for plain statements, and a connection
// that holds them must survive what a live system does to it.
describe('prepared statements of the delivery path', () => {
  let database: TestDatabase;
  let repos: Repositories;
  const own: Db[] = [];
  const dbWith = (opts: { poolMax: number; statementTimeoutMs?: number }): { db: Db; repos: Repositories } => {
    const db = createDb({ url: database.url, ...opts });
    own.push(db);
    return { db, repos: createRepositories(db) };
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    repos = createRepositories(database.db);
  });
  afterAll(async () => {
    await Promise.all(own.map((db) => db.destroy()));
    await database?.destroy();
  });

  /** An event with one endpoint, prepared through `r`: its delivery id. */
  async function deliveryThrough(r: Repositories): Promise<{ eventId: string; deliveryId: string }> {
    const source = uniqueSource();
    await addEndpoint(repos, { source, url: 'http://127.0.0.1:9/' });
    const eventId = await addEvent(repos, { source });
    const [row] = (await r.deliveries.prepareRun(eventId, eventId)) ?? [];
    if (!row) throw new Error('nothing prepared');
    return { eventId, deliveryId: row.delivery.id };
  }

  const failed = {
    status: 'PENDING' as const,
    responseStatus: 500,
    responseBody: null,
    error: 'HTTP 500',
    startedAt: new Date(),
    durationMs: 5,
  };

  it('a migration that adds columns does not break the statements a live connection prepared', async () => {
    const { repos: live } = dbWith({ poolMax: 1 });
    const first = await deliveryThrough(live);
    expect(await live.deliveries.loadAttempt(first.deliveryId)).toBeDefined();
    await live.deliveries.recordAttempt(first.deliveryId, failed);
    await live.events.finish(first.eventId);
    for (const table of ['webhook_event', 'webhook_endpoint', 'webhook_delivery']) {
      await database.db.raw(`ALTER TABLE ${table} ADD COLUMN added_later integer`);
    }
    // the same connection (pool of one), the same prepared statements, the new schema
    const second = await deliveryThrough(live);
    expect(await live.deliveries.loadAttempt(second.deliveryId)).toMatchObject({ delivery: { id: second.deliveryId, status: 'PENDING' } });
    expect(await live.deliveries.recordAttempt(second.deliveryId, failed)).toEqual({ autoDisabled: false });
    expect(await live.events.finish(second.eventId)).toMatchObject({ status: 'PARTIAL' });
  });

  it('statement_timeout ends a prepared statement as any other, and the connection runs it again afterwards', async () => {
    const { repos: timed } = dbWith({ poolMax: 1, statementTimeoutMs: 300 });
    const { deliveryId } = await deliveryThrough(timed);
    // the row is locked elsewhere: recordAttempt waits on it until statement_timeout ends it
    const holder = await database.db.transaction();
    try {
      await holder('webhook_delivery').where({ id: deliveryId }).forUpdate();
      expect(await refusal(timed.deliveries.recordAttempt(deliveryId, failed))).toMatch(/^database_unavailable: .*statement timeout/s);
    } finally {
      await holder.rollback();
    }
    expect(await timed.deliveries.recordAttempt(deliveryId, failed)).toEqual({ autoDisabled: false });
    expect(await timed.deliveries.loadAttempt(deliveryId)).toMatchObject({ delivery: { attempts: 1 } });
  });

  it('a connection Postgres ended (a restart) is replaced, and the statements are prepared again on the new one', async () => {
    const { db, repos: ended } = dbWith({ poolMax: 2 });
    const { deliveryId } = await deliveryThrough(ended);
    await Promise.all([ended.deliveries.loadAttempt(deliveryId), ended.deliveries.loadAttempt(deliveryId)]);
    const pids = (await db.raw<{ rows: Array<{ pid: number }> }>('SELECT pg_backend_pid() AS pid')).rows.map((r) => r.pid);
    await database.db.raw(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    // once the pool has seen them end (a call on one first fails, as a plain statement would),
    // new connections prepare the statements again
    await sleep(200);
    const again = await Promise.all([ended.deliveries.loadAttempt(deliveryId), ended.deliveries.loadAttempt(deliveryId)]);
    expect(again).toMatchObject([{ delivery: { id: deliveryId } }, { delivery: { id: deliveryId } }]);
    const now = (await db.raw<{ rows: Array<{ pid: number }> }>('SELECT pg_backend_pid() AS pid')).rows.map((r) => r.pid);
    expect(now.some((p) => pids.includes(p))).toBe(false);
  });

  it('an exhausted pool times out the acquisition as for any query', async () => {
    const { db, repos: busy } = dbWith({ poolMax: 1 });
    const { deliveryId } = await deliveryThrough(busy);
    const holder = await db.transaction();
    try {
      expect(await refusal(busy.deliveries.loadAttempt(deliveryId))).toMatch(/^database_unavailable: .*Timeout acquiring a connection/s);
    } finally {
      await holder.rollback();
    }
    expect(await busy.deliveries.loadAttempt(deliveryId)).toBeDefined();
  }, 20_000);

  it('a name stands for one statement', () => {
    prepared(database.db, 'test.one', 'SELECT 1', []);
    expect(() => prepared(database.db, 'test.one', 'SELECT 2', [])).toThrow(/test.one was used for a different statement/);
  });
});
