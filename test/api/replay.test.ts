import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReplayQueries } from '../../src/db/replay-queries.js';
import { UNSCOPED } from '../../src/db/tenant-scope.js';
import { createReplayService } from '../../src/api/replay-service.js';
import { bindStartReplay } from '../../src/api/start-replay.js';
import { isAppError } from '../../src/domain/errors.js';
import { createLogger } from '../../src/observability/logger.js';
import { addEndpoint, addEvent, deliveryOf, uniqueSource } from '../fanout/support/harness.js';
import { refusedUrl } from '../support/receiver.js';
import { startAdminHarness, type AdminHarness } from './support/admin-harness.js';
import { httpStatusOf } from '../../src/http/problem.js';
import { eventually } from '../support/wait.js';

interface Delivery {
  id: string;
  eventId: string;
  endpointId: string;
  status: string;
  attempts: number;
  lastResponseStatus: number | null;
}
interface ReplayStarted {
  eventId: string;
  workflowId: string;
  deliveryIds: string[];
}

describe('admin API: replay, end to end (Temporal worker, real receiver)', () => {
  let h: AdminHarness;
  let token: string;
  const receiver: AdminHarness['receiver'] = (...args) => h.receiver(...args);
  const runResult = (workflowId: string) => h.fanout.client.workflow.getHandle(workflowId).result();

  beforeAll(async () => {
    h = await startAdminHarness();
    token = await h.token('admin');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a FAILED delivery (5xx, max_attempts 1) is replayed once the receiver healed: one new attempt, SUCCESS, event COMPLETED', async () => {
    const source = uniqueSource('replay');
    const ok = await receiver([{ status: 200 }]);
    const flaky = await receiver([{ status: 500, body: 'down' }]);
    const okId = await addEndpoint(h.fanout.repos, { source, url: ok.url });
    const flakyId = await addEndpoint(h.fanout.repos, { source, url: flaky.url, maxAttempts: 1 });
    const eventId = await addEvent(h.fanout.repos, { source });
    expect(await h.fanout.runFanout(eventId)).toBe('PARTIAL');
    const failed = await deliveryOf(h.fanout.repos, eventId, flakyId);
    expect(failed).toMatchObject({ status: 'FAILED', attempts: 1, lastResponseStatus: 500 });

    // what an operator sees before replaying
    const before = (await h.get(`/api/events/${eventId}`, token)).json() as { status: string; deliveries: Delivery[] };
    expect(before.status).toBe('PARTIAL');
    expect(before.deliveries.find((d) => d.id === failed.id)).toMatchObject({ status: 'FAILED', eventId, endpointId: flakyId });

    flaky.setScript([{ status: 200, body: 'back' }]);
    const res = await h.post(`/api/deliveries/${failed.id}/replay`, token);
    expect(res.status, res.text).toBe(202);
    const body = res.json() as { delivery: Delivery; replay: ReplayStarted };
    expect(body.delivery).toMatchObject({ id: failed.id, eventId, endpointId: flakyId });
    expect(['PENDING', 'SUCCESS']).toContain(body.delivery.status);
    expect(body.replay.eventId).toBe(eventId);
    expect(body.replay.deliveryIds).toEqual([failed.id]);
    expect(body.replay.workflowId).not.toBe(eventId);
    expect(body.replay.workflowId.startsWith(`${eventId}:replay:`)).toBe(true);

    expect(await runResult(body.replay.workflowId)).toBe('COMPLETED');
    expect(flaky.requests).toHaveLength(2);
    expect(ok.requests).toHaveLength(1);
    const after = (await h.get(`/api/deliveries/${failed.id}`, token)).json() as Delivery;
    expect(after).toMatchObject({ status: 'SUCCESS', attempts: 2, lastResponseStatus: 200 });
    const event = (await h.get(`/api/events/${eventId}`, token)).json() as { status: string; deliveries: Delivery[] };
    expect(event.status).toBe('COMPLETED');
    expect(event.deliveries.every((d) => d.status === 'SUCCESS')).toBe(true);

    // replaying it again, or the delivery that succeeded all along: 409, nothing sent
    for (const id of [failed.id, okId && (await deliveryOf(h.fanout.repos, eventId, okId)).id]) {
      const again = await h.post(`/api/deliveries/${id}/replay`, token);
      expect(again.status).toBe(409);
      expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(again.json()).toMatchObject({ status: 409, code: 'not_replayable' });
    }
    expect(flaky.requests).toHaveLength(2);
    expect(ok.requests).toHaveLength(1);
  });

  it('a PENDING delivery is not replayable (409), an unknown one is 404', async () => {
    const source = uniqueSource('pending');
    const endpointId = await addEndpoint(h.fanout.repos, { source, url: 'http://127.0.0.1:9/never' });
    const eventId = await addEvent(h.fanout.repos, { source });
    const [pending] = (await h.fanout.repos.deliveries.prepareRun(eventId, eventId)) ?? [];
    expect(pending?.endpoint.id).toBe(endpointId);
    expect((await h.post(`/api/deliveries/${pending?.delivery.id}/replay`, token)).status).toBe(409);
    expect((await h.post('/api/deliveries/00000000-0000-4000-8000-000000000000/replay', token)).status).toBe(404);
    expect((await h.post('/api/events/00000000-0000-4000-8000-000000000000/replay', token)).status).toBe(404);
  });

  it("POST /api/events/{id}/replay replays the event's FAILED deliveries (4xx) in one run; then 409", async () => {
    const source = uniqueSource('evreplay');
    const a = await receiver([{ status: 400, body: 'bad' }]);
    const b = await receiver([{ status: 404 }]);
    const c = await receiver([{ status: 200 }]);
    const aId = await addEndpoint(h.fanout.repos, { source, url: a.url });
    const bId = await addEndpoint(h.fanout.repos, { source, url: b.url });
    await addEndpoint(h.fanout.repos, { source, url: c.url });
    const eventId = await addEvent(h.fanout.repos, { source });
    expect(await h.fanout.runFanout(eventId)).toBe('PARTIAL');

    a.setScript([{ status: 200 }]);
    b.setScript([{ status: 204 }]);
    const res = await h.post(`/api/events/${eventId}/replay`, token);
    expect(res.status, res.text).toBe(202);
    const started = res.json() as ReplayStarted;
    const failedIds = [(await deliveryOf(h.fanout.repos, eventId, aId)).id, (await deliveryOf(h.fanout.repos, eventId, bId)).id];
    expect([...started.deliveryIds].sort()).toEqual([...failedIds].sort());
    expect(await runResult(started.workflowId)).toBe('COMPLETED');
    expect([a.requests.length, b.requests.length, c.requests.length]).toEqual([2, 2, 1]);
    expect(((await h.get(`/api/events/${eventId}`, token)).json() as { status: string }).status).toBe('COMPLETED');

    const again = await h.post(`/api/events/${eventId}/replay`, token);
    expect(again.status).toBe(409);
  });

  it('bulk replay by filter: a dry run only counts; a real one is capped by limit and runs one replay per event', async () => {
    const source = uniqueSource('bulk');
    const down = await receiver([{ status: 503 }]);
    const endpointId = await addEndpoint(h.fanout.repos, { source, url: down.url, maxAttempts: 1 });
    const events: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = await addEvent(h.fanout.repos, { source });
      events.push(id);
      expect(await h.fanout.runFanout(id)).toBe('FAILED');
    }
    // a FAILED delivery of another source the filter must not touch
    const otherSource = uniqueSource('bulk-other');
    const otherEndpoint = await addEndpoint(h.fanout.repos, { source: otherSource, url: await refusedUrl(), maxAttempts: 1 });
    const otherEvent = await addEvent(h.fanout.repos, { source: otherSource });
    expect(await h.fanout.runFanout(otherEvent)).toBe('FAILED');

    const dry = await h.post('/api/deliveries/replay', token, { source, dryRun: true });
    expect(dry.status).toBe(200);
    expect(dry.json()).toMatchObject({ dryRun: true, matched: 3, replayed: 3, replays: [], failed: [] });
    expect(down.requests).toHaveLength(3);
    const stillFailed = await h.get(`/api/deliveries?source=${source}&status=FAILED`, token);
    expect((stillFailed.json() as { items: unknown[] }).items).toHaveLength(3);

    down.setScript([{ status: 200 }]);
    const capped = await h.post('/api/deliveries/replay', token, { source, endpointId, limit: 2 });
    expect(capped.status, capped.text).toBe(202);
    const result = capped.json() as { matched: number; replayed: number; limit: number; replays: ReplayStarted[]; bulkReplayId: string };
    expect(result).toMatchObject({ dryRun: false, matched: 3, replayed: 2, limit: 2, failed: [] });
    expect(result.replays).toHaveLength(2);
    for (const r of result.replays) expect(await runResult(r.workflowId)).toBe('COMPLETED');
    // its end is told as replay.completed (docs/operations-events.md), once, by the ingest's
    // sweeper, which finds every delivery it reopened settled
    expect(dry.json()).not.toHaveProperty('bulkReplayId');
    const completed = await eventually(
      async () => {
        const { rows } = await h.fanout.database.db.raw<{ rows: Array<{ payload: string; subject_namespace: string | null }> }>(
          `SELECT convert_from(payload, 'UTF8') AS payload, subject_namespace FROM webhook_event
            WHERE source = 'webhook-fanout' AND external_event_id = ?`,
          [`replay.completed:${result.bulkReplayId}`],
        );
        return rows.length > 0 ? rows : undefined;
      },
      { timeoutMs: 30_000, what: 'the bulk replay replay.completed' },
    );
    expect(completed).toHaveLength(1);
    expect(JSON.parse(completed![0]!.payload)).toMatchObject({
      type: 'replay.completed',
      subject: { kind: 'BulkReplay', uid: result.bulkReplayId, namespace: null },
      replay: { phase: 'Complete', bulk: true, started: 2, succeeded: 2, failed: 0, criteria: { source, endpointId, limit: 2 } },
    });
    // newest first: the two most recent events were replayed
    expect(result.replays.map((r) => r.eventId).sort()).toEqual(events.slice(1).sort());
    expect(down.requests).toHaveLength(5);

    const rest = await h.post('/api/deliveries/replay', token, { source });
    const restResult = rest.json() as { replayed: number; replays: ReplayStarted[]; bulkReplayId: string };
    expect(restResult.replayed).toBe(1);
    expect(restResult.bulkReplayId).not.toBe(result.bulkReplayId);
    for (const r of restResult.replays) expect(await runResult(r.workflowId)).toBe('COMPLETED');
    expect((await h.post('/api/deliveries/replay', token, { source, dryRun: true })).json()).toMatchObject({ matched: 0 });

    // the other source's FAILED delivery was left alone
    expect((await deliveryOf(h.fanout.repos, otherEvent, otherEndpoint)).status).toBe('FAILED');
  });

  it('bulk replay validates its body: limit capped at 1000, unknown fields refused', async () => {
    for (const body of [{ limit: 1001 }, { limit: 0 }, { status: 'SUCCESS' }, { dryRun: 'yes' }, { from: 'yesterday' }]) {
      const res = await h.post('/api/deliveries/replay', token, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
  });

  it('when Temporal is unreachable the replay answers 503 and the delivery stays FAILED (replayable later)', async () => {
    const source = uniqueSource('down');
    const r = await receiver([{ status: 500 }]);
    const endpointId = await addEndpoint(h.fanout.repos, { source, url: r.url, maxAttempts: 1 });
    const eventId = await addEvent(h.fanout.repos, { source });
    expect(await h.fanout.runFanout(eventId)).toBe('FAILED');
    const d = await deliveryOf(h.fanout.repos, eventId, endpointId);

    // the same service, wired to a Temporal address where nothing listens
    const deadAddress = new URL(await refusedUrl()).host;
    const connection = Connection.lazy({ address: deadAddress });
    const service = createReplayService({
      events: h.fanout.repos.events,
      replays: createReplayQueries(h.fanout.database.db),
      startReplay: bindStartReplay(() => Promise.resolve(new Client({ connection })), h.fanout.taskQueue, 2000),
      ordering: h.fanout.repos.ordering,
      signalTurn: () => Promise.resolve(),
      logger: createLogger({ level: 'silent' }),
    });
    const t0 = Date.now();
    const err = await service.replayDelivery(UNSCOPED, d.id, 'test').catch((e: unknown) => e);
    expect(isAppError(err) && httpStatusOf(err)).toBe(503);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await deliveryOf(h.fanout.repos, eventId, endpointId)).status).toBe('FAILED');
    await connection.close().catch(() => undefined);

    // and through the real API it is still replayable
    r.setScript([{ status: 200 }]);
    const res = await h.post(`/api/deliveries/${d.id}/replay`, token);
    expect(res.status).toBe(202);
    expect(await runResult((res.json() as { replay: ReplayStarted }).replay.workflowId)).toBe('COMPLETED');
  });
});
