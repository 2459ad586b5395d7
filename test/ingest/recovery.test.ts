import { PurgeQueueCommand } from '@aws-sdk/client-sqs';
import bcrypt from 'bcrypt';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/knex.js';
import { freePort } from '../../src/dev/ports.js';
import { fileDatabase } from '../support/db.js';
import { basic, http } from '../support/http.js';
import { addCredential, startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';

const AUTH = basic('u', 'p4ss');
const post = (h: IngestHarness, body: string) =>
  http(`${h.url}/api/webhooks/shop`, { headers: { authorization: AUTH, 'content-type': 'application/json' }, body });

describe('when the topic is unavailable', () => {
  const t = fileDatabase();
  let h: IngestHarness;
  beforeAll(async () => {
    h = await startIngestHarness({ db: t.database.db, sweep: { sweepMinAgeMs: 0 } });
    await addCredential(h.repos, 'shop', 'u', 'p4ss');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('answers 503 with Retry-After, keeps the event, and the sender retry or the sweeper publishes it later', async () => {
    await h.stopTopic();
    const failed = await post(h, '{"id":"order-1","type":"order.created"}');
    expect(failed.status).toBe(503);
    expect(Number(failed.headers['retry-after'])).toBeGreaterThan(0);
    expect(failed.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(failed.json()).toMatchObject({ status: 503, code: 'publish_failed' });
    const second = await post(h, '{"id":"order-2","type":"order.created"}');
    expect(second.status).toBe(503);

    // both accepted rows are kept, unpublished
    const rows = await t.database.db('webhook_event').whereIn('external_event_id', ['order-1', 'order-2']).orderBy('external_event_id');
    expect(rows.map((r: { published_at: Date | null }) => r.published_at)).toEqual([null, null]);

    await h.restartTopic();
    // the sender retries order-1: a duplicate that re-publishes the stored event
    const retried = await post(h, '{"id":"order-1","type":"order.created"}');
    expect(retried.status).toBe(200);
    expect(retried.json()).toEqual({ eventId: rows[0].id, duplicate: true });

    // nobody retries order-2: the sweeper publishes it
    expect(await h.sweeper.sweepOnce()).toBe(1);
    expect(await h.sweeper.sweepOnce()).toBe(0);

    const queued = await h.queuedEventIds();
    expect(queued.sort()).toEqual([rows[0].id, rows[1].id].sort());
    const after = await t.database.db('webhook_event').whereIn('external_event_id', ['order-1', 'order-2']);
    expect(after.every((r: { published_at: Date | null }) => r.published_at !== null)).toBe(true);
    // each refused request counted its failed publish; a publish tried while the emulator was
    // still coming back (the sender's retry, the sweep) may add to it, and then succeeded
    const failures = Number(
      / (\d+)$/m.exec(await h.metrics.registry.getSingleMetricAsString('webhook_fanout_publish_failures_total'))?.[1],
    );
    expect(failures).toBeGreaterThanOrEqual(2);
  });
});

describe('the sweeper and events whose workflow never started', () => {
  const t = fileDatabase();
  let h: IngestHarness;
  beforeAll(async () => {
    h = await startIngestHarness({ db: t.database.db, sweep: { sweepMinAgeMs: 0, sweepUnstartedAfterMs: 60_000 } });
    await addCredential(h.repos, 'shop', 'u', 'p4ss');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('re-publishes a published event that still has no workflow after the grace period, and leaves started ones alone', async () => {
    const stuck = (await post(h, '{"id":"stuck-1"}').then((r) => r.json())) as { eventId: string };
    const started = (await post(h, '{"id":"started-1"}').then((r) => r.json())) as { eventId: string };
    await h.repos.events.setWorkflowId(started.eventId, started.eventId);
    // both messages were consumed (say the stuck one was dead-lettered while Temporal was down)
    await h.aws.sqs.send(new PurgeQueueCommand({ QueueUrl: h.topology.queueUrl }));
    expect(await h.queuedEventIds()).toEqual([]);

    expect(await h.sweeper.sweepOnce()).toBe(0); // still within the grace period
    await t.database.db('webhook_event').update({ published_at: t.database.db.raw(`now() - interval '2 minutes'`) });
    expect(await h.sweeper.sweepOnce()).toBe(1);
    expect(await h.queuedEventIds()).toEqual([stuck.eventId]);
  });
});

describe('after ingest died between storing an event and publishing it', () => {
  const t = fileDatabase();
  let h: IngestHarness;
  beforeAll(async () => {
    h = await startIngestHarness({ db: t.database.db });
    await addCredential(h.repos, 'shop', 'u', 'p4ss');
  });
  afterAll(async () => {
    await h?.close();
  });

  // what the dead process left: the row exactly as ingest inserts it, and no message
  const strand = async (externalEventId: string) => {
    const stored = await h.repos.events.insertOrGetDuplicate({
      source: 'shop',
      externalEventId,
      eventType: 'order.created',
      payload: Buffer.from(`{"id":"${externalEventId}"}`),
      contentType: 'application/json',
      headers: {},
    });
    return stored.id;
  };

  it("publishes on the sender's retry instead of answering 200 for an event that never reached the topic", async () => {
    const id = await strand('crash-1');
    expect(await h.queuedEventIds()).toEqual([]);
    const retried = await post(h, '{"id":"crash-1","type":"order.created"}');
    expect(retried.status).toBe(200);
    expect(retried.json()).toEqual({ eventId: id, duplicate: true });
    expect(await h.queuedEventIds()).toEqual([id]);

    // once a consumer started its workflow, a retry publishes nothing more
    await h.aws.sqs.send(new PurgeQueueCommand({ QueueUrl: h.topology.queueUrl }));
    await h.repos.events.setWorkflowId(id, id);
    expect((await post(h, '{"id":"crash-1","type":"order.created"}')).status).toBe(200);
    expect(await h.queuedEventIds()).toEqual([]);
  });

  it('re-publishes events nobody retries as soon as the process starts again, names them in the log and counts them', async () => {
    const id = await strand('crash-2');
    const lines: string[] = [];
    // the process coming back: its sweeper's first pass does not wait for the grace period
    const restarted = await h.startAnother({
      logger: pino({ level: 'info' }, { write: (l: string) => lines.push(l) }),
      sweep: { sweepMinAgeMs: 60_000, sweepUnstartedAfterMs: 600_000 },
    });
    await restarted.stop(); // waits for the sweeper's pass
    expect(await h.queuedEventIds()).toEqual([id]);
    expect(await h.metrics.registry.getSingleMetricAsString('webhook_fanout_unpublished_events')).toMatch(/ 1$/m);
    const logged = lines.map((l) => JSON.parse(l) as { msg: string; eventIds?: string[]; unstarted?: string[] });
    expect(logged.find((l) => l.msg === 'sweeper re-publishing events')?.unstarted).toEqual([id]);
    expect(logged.find((l) => l.msg === 'sweeper re-published events')?.eventIds).toEqual([id]);
  });
});

describe('when Postgres is unavailable', () => {
  it('answers 503 with Retry-After and no detail of the failure', async () => {
    const deadDb = createDb({ url: `postgres://postgres:secretpw@127.0.0.1:${await freePort()}/none` });
    const h = await startIngestHarness({ db: deadDb });
    try {
      const res = await post(h, '{"id":"x"}');
      expect(res.status).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.text).not.toContain('secretpw');
      expect(res.text).not.toContain('ECONNREFUSED');
    } finally {
      await h.close();
      await deadDb.destroy();
    }
  });
});

describe('credential rotation', () => {
  const t = fileDatabase();
  let h: IngestHarness;
  let now = Date.now();
  beforeAll(async () => {
    h = await startIngestHarness({ db: t.database.db, rowTtlMs: 200, now: () => now });
    await addCredential(h.repos, 'shop', 'u', 'p4ss');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('stops accepting a cached password soon after the stored hash changes', async () => {
    expect((await post(h, '{"a":1}')).status).toBe(200);
    expect((await post(h, '{"a":2}')).status).toBe(200); // served from the verified cache
    await t.database
      .db('webhook_inbound_credential')
      .where({ source: 'shop' })
      .update({ password_hash: await bcrypt.hash('new-pass', 10) });
    expect((await post(h, '{"a":3}')).status).toBe(200); // still cached: the TTL has not passed
    now += 201;
    expect((await post(h, '{"a":3}')).status).toBe(401);
    const res = await http(`${h.url}/api/webhooks/shop`, {
      headers: { authorization: basic('u', 'new-pass'), 'content-type': 'application/json' },
      body: '{"a":4}',
    });
    expect(res.status).toBe(200);
  });
});
