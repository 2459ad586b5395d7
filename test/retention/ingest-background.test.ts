import { afterAll, describe, expect, it } from 'vitest';
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
  afterAll(async () => {
    await h?.close();
  });

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
