import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadIngestConfig } from '../../src/config/config.js';
import { RETENTION_OFF } from '../../src/retention/retention-job.js';
import { fileDatabase } from '../support/db.js';
import { basic, http } from '../support/http.js';
import { addCredential, startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';
import { DAY, exists, seedEndpoint, seedEvent } from './support.js';

// The ingest process as production builds and starts it, with RETENTION_MAX_AGE set: old events
// go in the background, on the job's own schedule, while webhooks keep being accepted; an
// undelivered old event stays; stopping ingest ends the job.

describe('ingest runs retention in the background', () => {
  const t = fileDatabase();
  let h: IngestHarness | undefined;
  let short: IngestHarness | undefined;
  afterAll(async () => {
    await h?.close();
    await short?.close();
  });

  // the README's short ages, as a user tries them: with RETENTION_SETTLED_GRACE=5s the payload
  // goes after 10 s and the event after 45 s, each in its turn (under the default 15 min grace,
  // both would wait 15 min and the event go whole at once)
  it('RETENTION_PAYLOAD_MAX_AGE=10s, RETENTION_MAX_AGE=45s, RETENTION_SETTLED_GRACE=5s: the payload is dropped, then the event deleted', async () => {
    const { retention } = loadIngestConfig({
      DATABASE_URL: 'postgres://unused',
      TOPIC_ARN: 'arn:aws:sns:us-east-1:000000000000:t',
      ADMIN_API_ENABLED: 'false',
      RETENTION_PAYLOAD_MAX_AGE: '10s',
      RETENTION_MAX_AGE: '45s',
      RETENTION_SETTLED_GRACE: '5s',
      RETENTION_INTERVAL_SECONDS: '1',
    });
    const lines: Array<{ msg: string; settledGrace?: string }> = [];
    short = await startIngestHarness({
      db: t.database.db,
      retention,
      logger: pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l) as (typeof lines)[number]) }),
    });
    expect(lines.find((l) => l.settledGrace)?.msg).toBe(
      'retention on: events deleted after 45s, payloads dropped after 10s, none within 5s of its last change (RETENTION_SETTLED_GRACE)',
    );
    await addCredential(short.repos, 'short', 'short', 'short-password');
    const body = JSON.stringify({ id: 'short-1', type: 't' });
    const res = await http(`${short.url}/api/webhooks/short`, {
      headers: { authorization: basic('short', 'short-password'), 'content-type': 'application/json' },
      body,
    });
    expect(res.status, res.text).toBe(200);
    const id = (res.json() as { eventId: string }).eventId;
    const accepted = Date.now();
    // delivered: what finishEvent leaves (no endpoint matched: COMPLETED), a last change now
    await t.database.db('webhook_event').where({ id }).update({ status: 'COMPLETED', updated_at: t.database.db.fn.now() });
    const stored = async () => {
      const row = (await t.database.db('webhook_event').where({ id }).first('payload', 'payload_dropped_at')) as
        { payload: Buffer; payload_dropped_at: Date | null } | undefined;
      return row && { payloadBytes: row.payload.length, dropped: row.payload_dropped_at !== null };
    };
    try {
      expect(await stored()).toEqual({ payloadBytes: body.length, dropped: false });
      await expect.poll(stored, { timeout: 25_000, interval: 500 }).toEqual({ payloadBytes: 0, dropped: true });
      expect(Date.now() - accepted).toBeGreaterThanOrEqual(10_000);

      await expect.poll(() => exists(t.database.db, id), { timeout: 50_000, interval: 500 }).toBe(false);
      expect(Date.now() - accepted).toBeGreaterThanOrEqual(45_000);
    } finally {
      // its job would take the next test's backdated events too
      await short.close();
      short = undefined;
    }
  }, 100_000);

  it('deletes the old backlog batch after batch while webhooks are accepted, and keeps what is undelivered', async () => {
    const ep = await seedEndpoint(t.database.db);
    for (let i = 0; i < 120; i++)
      await seedEvent(t.database.db, [ep], { source: 'old', age: 100 * DAY - i, deliveries: [{ status: 'SUCCESS', attempts: 2 }] });
    const held = await seedEvent(t.database.db, [ep], {
      source: 'old',
      age: 200 * DAY,
      status: 'FAILED',
      deliveries: [{ status: 'FAILED', held: true }],
    });
    h = await startIngestHarness({
      db: t.database.db,
      retention: { ...RETENTION_OFF, maxAgeSeconds: 30 * DAY, intervalMs: 500, batchSize: 10, batchPauseMs: 20 },
    });
    await addCredential(h.repos, 'live', 'live', 'live-password');

    const accepted: string[] = [];
    const oldLeft = async () => Number((await t.database.db('webhook_event').where({ source: 'old' }).count({ n: '*' }))[0]?.n);
    // webhooks keep coming while the backlog goes
    while ((await oldLeft()) > 1 && accepted.length < 400) {
      const res = await http(`${h.url}/api/webhooks/live`, {
        headers: { authorization: basic('live', 'live-password'), 'content-type': 'application/json' },
        body: JSON.stringify({ id: `live-${accepted.length}`, type: 't' }),
      });
      expect(res.status, res.text).toBe(200);
      accepted.push((res.json() as { eventId: string }).eventId);
    }
    await expect.poll(oldLeft, { timeout: 30_000 }).toBe(1);
    expect(await exists(t.database.db, held)).toBe(true);
    expect(Number((await t.database.db('webhook_event').where({ source: 'live' }).count({ n: '*' }))[0]?.n)).toBe(accepted.length);
    const deleted = (await h.metrics.retentionDeletedRows.get()).values;
    expect(deleted.find((v) => v.labels.table === 'webhook_delivery_attempt')?.value).toBe(240);
    expect(deleted.find((v) => v.labels.table === 'webhook_event')?.value).toBe(120);
    expect((await h.metrics.retentionRuns.get()).values.find((v) => v.labels.result === 'completed')?.value).toBeGreaterThanOrEqual(1);
  });
});
