import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedriver, type Redriver } from '../../src/temporal/redriver.js';
import { createRedriveQueries, type RedriveQueries } from '../../src/db/redrive-queries.js';
import { createLogger } from '../../src/observability/logger.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually, sleep } from '../support/wait.js';
import { addEndpoint, addEvent, deliveryOf, startFanoutHarness, uniqueSource, type FanoutHarness } from './support/harness.js';

// Endpoint health against the real components: deliveries by a Temporal worker to real HTTP
// receivers, the failure count and the disable in Postgres, the redrive through replay runs.
describe('endpoint health: auto-disable and lossless re-enable', () => {
  let h: FanoutHarness;
  let queries: RedriveQueries;
  const receivers: Receiver[] = [];
  const redrivers: Redriver[] = [];

  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };
  const redriver = (opts: { unconfirmedAfterMs?: number } = {}) => {
    const r = createRedriver({
      queries,
      client: h.client,
      taskQueue: h.taskQueue,
      metrics: h.metrics,
      logger: createLogger({ level: 'silent' }),
      intervalMs: 100,
      ...opts,
    });
    redrivers.push(r);
    return r;
  };
  const eventIdsAt = (r: Receiver) => r.requests.map((q) => q.headers['x-webhook-event-id']);
  const metric = async (name: string, labels = '') => {
    const text = await h.metrics.registry.metrics();
    const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
    return line === undefined ? undefined : Number(line.split(' ').pop());
  };

  beforeAll(async () => {
    h = await startFanoutHarness();
    queries = createRedriveQueries(h.database.db);
  });
  afterAll(async () => {
    await Promise.all(redrivers.map((r) => r.stop()));
    await Promise.all(receivers.map((r) => r.close()));
    await h?.close();
  });

  it('disables after N FAILED deliveries in a row; the next ones fail at once without a request and are redriven once, oldest first, on enable', async () => {
    const source = uniqueSource('health');
    const flaky = await receiver([
      { status: 500, body: 'down' },
      { status: 500, body: 'down' },
      { status: 422, body: 'nope' },
    ]);
    const healthy = await receiver();
    const endpointId = await addEndpoint(h.repos, { source, url: flaky.url, maxAttempts: 1, autoDisableAfter: 3, name: 'ns/flaky' });
    await addEndpoint(h.repos, { source, url: healthy.url, name: 'ns/healthy' });

    // three deliveries in a row end FAILED (500, 500, 422): the third disables the endpoint
    const failing: string[] = [];
    for (let i = 0; i < 3; i++) {
      const eventId = await addEvent(h.repos, { source });
      failing.push(eventId);
      expect(await h.runFanout(eventId)).toBe('PARTIAL');
      const endpoint = await h.repos.endpoints.get(endpointId);
      expect(endpoint?.consecutiveFailures).toBe(i + 1);
      expect(endpoint?.disabledAt === null).toBe(i < 2);
    }
    expect(flaky.requests).toHaveLength(3);
    expect(await metric('webhook_fanout_endpoint_auto_disables_total', '{endpoint="ns/flaky"}')).toBe(1);

    // while disabled: FAILED at once with "endpoint disabled", no request reaches the receiver,
    // the other endpoint still gets everything
    flaky.setScript([{ status: 200, body: 'back' }]);
    const missed: string[] = [];
    for (let i = 0; i < 3; i++) {
      const eventId = await addEvent(h.repos, { source, payload: JSON.stringify({ n: i }) });
      missed.push(eventId);
      expect(await h.runFanout(eventId)).toBe('PARTIAL');
      const d = await deliveryOf(h.repos, eventId, endpointId);
      expect(d).toMatchObject({ status: 'FAILED', lastError: 'endpoint disabled', lastResponseStatus: null });
    }
    expect(flaky.requests).toHaveLength(3);
    expect(healthy.requests).toHaveLength(6);
    // held deliveries are not counted as failures
    expect((await h.repos.endpoints.get(endpointId))?.consecutiveFailures).toBe(3);

    // a redriver running meanwhile sees the endpoint disabled and its deliveries held, and takes
    // none of them off hold: the endpoint is not one to redrive, nothing is started
    const startedBefore = (await metric('webhook_fanout_redrive_deliveries_total')) ?? 0;
    const r = redriver();
    r.start();
    await r.pass();
    expect(await metric('webhook_fanout_endpoints_disabled')).toBeGreaterThanOrEqual(1);
    expect(await metric('webhook_fanout_deliveries_held')).toBeGreaterThanOrEqual(3);
    expect(await queries.endpointsToRedrive(100)).not.toContain(endpointId);
    for (const eventId of missed) {
      expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'FAILED', lastError: 'endpoint disabled' });
    }
    expect((await metric('webhook_fanout_redrive_deliveries_total')) ?? 0).toBe(startedBefore);
    expect(flaky.requests).toHaveLength(3);

    // enable: every held delivery is delivered exactly once, oldest first; the three that failed
    // for real stay FAILED (replayable by hand)
    expect(await h.repos.endpoints.enable(endpointId)).toEqual({ wasDisabled: true, held: 3 });
    await eventually(async () => flaky.requests.length >= 6);
    await eventually(async () => {
      const all = await Promise.all(missed.map((e) => h.repos.events.getMeta(e)));
      return all.every((e) => e?.status === 'COMPLETED');
    });
    await sleep(500);
    expect(eventIdsAt(flaky).slice(3)).toEqual(missed);
    expect(flaky.requests.slice(3).map((q) => q.body.toString())).toEqual(missed.map((_, i) => JSON.stringify({ n: i })));
    for (const eventId of missed) {
      const d = await deliveryOf(h.repos, eventId, endpointId);
      expect(d.status).toBe('SUCCESS');
    }
    for (const eventId of failing) {
      const d = await deliveryOf(h.repos, eventId, endpointId);
      expect(d.status).toBe('FAILED');
      expect(d.lastError).not.toBe('endpoint disabled');
    }
    const endpoint = await h.repos.endpoints.get(endpointId);
    expect(endpoint).toMatchObject({ disabledAt: null, consecutiveFailures: 0 });
    // enabling again is a no-op: nothing is held, so a pass has nothing to redrive or re-send
    expect(await h.repos.endpoints.enable(endpointId)).toEqual({ wasDisabled: false, held: 0 });
    const redriven = (await metric('webhook_fanout_redrive_deliveries_total')) ?? 0;
    expect(redriven).toBeGreaterThanOrEqual(startedBefore + 3);
    await r.pass();
    expect(await queries.endpointsToRedrive(100)).not.toContain(endpointId);
    expect(await metric('webhook_fanout_redrive_deliveries_total')).toBe(redriven);
    expect(flaky.requests).toHaveLength(6);
  });

  it('a SUCCESS resets the count; a threshold of 0 never disables', async () => {
    const source = uniqueSource('health');
    const r = await receiver([{ status: 500 }, { status: 200 }, { status: 500 }, { status: 500 }]);
    const endpointId = await addEndpoint(h.repos, { source, url: r.url, maxAttempts: 1, autoDisableAfter: 2 });
    const never = await receiver([{ status: 500 }]);
    const neverId = await addEndpoint(h.repos, { source: `${source}-never`, url: never.url, maxAttempts: 1, autoDisableAfter: 0 });

    const counts: number[] = [];
    for (let i = 0; i < 3; i++) {
      await h.runFanout(await addEvent(h.repos, { source }));
      counts.push((await h.repos.endpoints.get(endpointId))!.consecutiveFailures);
    }
    expect(counts).toEqual([1, 0, 1]);
    expect((await h.repos.endpoints.get(endpointId))?.disabledAt).toBeNull();
    await h.runFanout(await addEvent(h.repos, { source }));
    expect((await h.repos.endpoints.get(endpointId))?.disabledAt).not.toBeNull();

    for (let i = 0; i < 4; i++) await h.runFanout(await addEvent(h.repos, { source: `${source}-never` }));
    expect(never.requests).toHaveLength(4);
    expect(await h.repos.endpoints.get(neverId)).toMatchObject({ consecutiveFailures: 4, disabledAt: null });
  });

  it('counts concurrent failures exactly and disables once (two workers settling at the same time)', async () => {
    const source = uniqueSource('health');
    const endpointId = await addEndpoint(h.repos, { source, url: 'http://127.0.0.1:9/never', autoDisableAfter: 10 });
    const deliveries = await Promise.all(
      Array.from({ length: 30 }, async () => {
        const eventId = await addEvent(h.repos, { source });
        return (await h.repos.deliveries.prepareRun(eventId, eventId))![0]!.delivery.id;
      }),
    );
    const settled = await Promise.all(
      deliveries.map((id) =>
        h.repos.deliveries.recordAttempt(id, {
          status: 'FAILED',
          responseStatus: 500,
          responseBody: null,
          error: 'HTTP 500',
          startedAt: new Date(),
          durationMs: 5,
        }),
      ),
    );
    expect(settled.filter((s) => s?.autoDisabled)).toHaveLength(1);
    expect(await h.repos.endpoints.get(endpointId)).toMatchObject({ consecutiveFailures: 30 });
    expect((await h.repos.endpoints.get(endpointId))?.disabledAt).not.toBeNull();
  });

  it('restart-safe: a claim whose run was never started (the redriver died) is started once, also by two redrivers at once', async () => {
    const source = uniqueSource('health');
    const r = await receiver([{ status: 404 }]);
    const endpointId = await addEndpoint(h.repos, { source, url: r.url, maxAttempts: 1, autoDisableAfter: 1 });
    await h.runFanout(await addEvent(h.repos, { source }));
    expect((await h.repos.endpoints.get(endpointId))?.disabledAt).not.toBeNull();
    const missed = [await addEvent(h.repos, { source }), await addEvent(h.repos, { source })];
    for (const e of missed) await h.runFanout(e);
    r.setScript([{ status: 200 }]);
    await h.repos.endpoints.enable(endpointId);

    // what a redriver that died between its claim and the start leaves behind
    const claimed = await queries.claimNext(endpointId, (eventId) => `${eventId}:redrive:crashed`);
    expect(claimed?.eventId).toBe(missed[0]);
    expect((await deliveryOf(h.repos, missed[0]!, endpointId)).status).toBe('PENDING');
    // while that claim is in flight nothing else of the endpoint is taken (oldest first)
    expect(await queries.claimNext(endpointId, () => 'x')).toBeUndefined();

    const a = redriver({ unconfirmedAfterMs: 0 });
    const b = redriver({ unconfirmedAfterMs: 0 });
    await Promise.all([a.pass(), b.pass(), a.pass(), b.pass()]);
    a.start();
    b.start();
    await eventually(async () => r.requests.length >= 3);
    await eventually(async () => (await deliveryOf(h.repos, missed[1]!, endpointId)).status === 'SUCCESS');
    await sleep(800);
    expect(eventIdsAt(r).slice(1)).toEqual(missed);
    const run = await h.client.workflow.getHandle(`${missed[0]}:redrive:crashed`).describe();
    expect(run.status.name).toBe('COMPLETED');
  });
});
