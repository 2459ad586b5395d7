import { describe, expect } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createFanoutStarter } from '../../src/temporal/fanout-starter.js';
import { startReplay } from '../../src/temporal/replay-starter.js';
import { addEndpoint, addEvent, deliveryOf, uniqueSource } from './support/harness.js';
import { counterDelta, it } from './support/fixtures.js';

describe('starter, concurrency and replay', () => {
  it('starting the same event twice runs one fanout: already_started, one request per endpoint', async ({ h, receiver }) => {
    const source = uniqueSource();
    const a = await receiver();
    const b = await receiver();
    await addEndpoint(h.repos, { source, url: a.url });
    await addEndpoint(h.repos, { source, eventType: 't', url: b.url });
    const eventId = await addEvent(h.repos, { source, eventType: 't' });
    const started = await counterDelta(h.metrics.workflowsStarted);

    expect(await h.start(eventId)).toBe('started');
    expect(await h.start(eventId)).toBe('already_started');
    expect(await h.client.workflow.getHandle(eventId).result()).toBe('COMPLETED');
    // also after the first run closed: a redelivered queue message must not fan out again
    expect(await h.start(eventId)).toBe('already_started');

    expect(a.requests).toHaveLength(1);
    expect(b.requests).toHaveLength(1);
    expect((await h.repos.events.get(eventId))?.workflowId).toBe(eventId);
    expect(await started()).toBe(1);
  });

  it('a second start of a run whose prepare has not run leaves the event unprepared: only prepare records the run', async ({ h }) => {
    // an ordered delivery of a later event takes an event with a run recorded for one whose
    // deliveries are in place (db/ordering.ts): recorded here, the later one would go first
    const source = uniqueSource();
    const eventId = await addEvent(h.repos, { source });
    await h.database
      .db('webhook_event')
      .where({ id: eventId })
      .update({ published_at: new Date(Date.now() - 60_000) });
    // a task queue no worker polls: the run exists, its prepare does not run
    const start = createFanoutStarter({ client: h.client, taskQueue: `nobody-${randomUUID()}`, events: h.repos.events });
    expect(await start(eventId)).toBe('started');
    try {
      expect(await start(eventId)).toBe('already_started');
      const event = await h.repos.events.get(eventId);
      expect(event?.workflowId).toBeNull();
      // counted as published again: the sweeper waits its grace period before publishing it again
      expect(event?.publishedAt?.getTime()).toBeGreaterThan(Date.now() - 30_000);
    } finally {
      await h.client.workflow.getHandle(eventId).terminate('test: the run of a queue no worker polls');
    }
  });

  it('delivers to all endpoints concurrently', async ({ h, receiver }) => {
    const source = uniqueSource();
    const slow = await Promise.all([1, 2, 3].map(() => receiver([{ status: 200, delayMs: 500 }])));
    for (const r of slow) await addEndpoint(h.repos, { source, url: r.url });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('COMPLETED');

    const requests = slow.flatMap((r) => r.requests);
    expect(requests).toHaveLength(3);
    const lastStart = Math.max(...requests.map((q) => q.startedAt));
    const firstFinish = Math.min(...requests.map((q) => q.finishedAt ?? Infinity));
    // every request was in flight before any was answered
    expect(lastStart).toBeLessThan(firstFinish);
  });

  it('replay: a reopened FAILED delivery gets exactly one new attempt and the event is recomputed', async ({ h, receiver }) => {
    const source = uniqueSource();
    const ok = await receiver([{ status: 200 }]);
    const flaky = await receiver([{ status: 500, body: 'down' }]);
    const okId = await addEndpoint(h.repos, { source, url: ok.url });
    const flakyId = await addEndpoint(h.repos, { source, url: flaky.url, maxAttempts: 2 });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('PARTIAL');
    const failed = await deliveryOf(h.repos, eventId, flakyId);
    expect(failed).toMatchObject({ status: 'FAILED', attempts: 2 });

    flaky.setScript([{ status: 200, body: 'back' }]);
    expect(await h.repos.deliveries.reopenFailed(failed.id)).toBe(true);
    const { workflowId } = await startReplay(h.client, { eventId, deliveryIds: [failed.id], taskQueue: h.taskQueue });
    expect(workflowId).not.toBe(eventId);
    expect(workflowId.startsWith(`${eventId}:replay:`)).toBe(true);
    expect(await h.client.workflow.getHandle(workflowId).result()).toBe('COMPLETED');

    expect(flaky.requests).toHaveLength(3);
    expect(flaky.requests[2]?.headers['x-webhook-attempt']).toBe('1');
    expect(ok.requests).toHaveLength(1);
    expect(await deliveryOf(h.repos, eventId, flakyId)).toMatchObject({
      status: 'SUCCESS',
      attempts: 3,
      lastResponseStatus: 200,
      lastResponseBody: 'back',
      lastError: null,
    });
    expect((await deliveryOf(h.repos, eventId, okId)).attempts).toBe(1);
    expect((await h.repos.events.get(eventId))?.status).toBe('COMPLETED');
  });

  it('replay skips a delivery that is not PENDING (not reopened) and sends nothing', async ({ h, receiver }) => {
    const source = uniqueSource();
    const r = await receiver([{ status: 400 }]);
    const endpointId = await addEndpoint(h.repos, { source, url: r.url });
    const eventId = await addEvent(h.repos, { source });
    expect(await h.runFanout(eventId)).toBe('FAILED');
    const d = await deliveryOf(h.repos, eventId, endpointId);

    const { workflowId } = await startReplay(h.client, { eventId, deliveryIds: [d.id], taskQueue: h.taskQueue });
    expect(await h.client.workflow.getHandle(workflowId).result()).toBe('FAILED');
    expect(r.requests).toHaveLength(1);
  });
});
