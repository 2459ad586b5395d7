import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createActivities,
  type DeliverInput,
  type DeliverResult,
  type FanoutActivities,
  type FinalEventStatus,
  type FinishEventInput,
  type PrepareInput,
  type PrepareResult,
} from '../../src/activities/index.js';
import { createDb, type Db } from '../../src/db/knex.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createSender, type Sender } from '../../src/delivery/sender.js';
import type { OutboundRequest, Send } from '../../src/delivery/types.js';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { addEndpoint, addEvent, uniqueSource } from './support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

// The activities one by one, in an activity context with a chosen attempt number: the edges a
// whole workflow run cannot reach deterministically (Retry-After, a lost last attempt, races).
describe('fanout activities', () => {
  let database: TestDatabase;
  let repos: Repositories;
  let metrics: Metrics;
  let sender: Sender;
  let receiver: Receiver;
  const sent: OutboundRequest[] = [];
  let sendImpl: Send;
  const backoff = { initialIntervalMs: 1_000, backoffCoefficient: 2, maximumIntervalMs: 600_000 };
  let activities: FanoutActivities;

  // each call runs in an activity context whose Info carries the given attempt number
  const env = (attempt: number) => new MockActivityEnvironment({ attempt }, { logger: new DefaultLogger('ERROR') });
  const prepare = (attempt: number, input: PrepareInput): Promise<PrepareResult> =>
    env(attempt).run(activities.prepare, input);
  const deliver = (attempt: number, input: DeliverInput): Promise<DeliverResult> =>
    env(attempt).run(activities.deliver, input);
  const finishEvent = (attempt: number, input: FinishEventInput): Promise<FinalEventStatus> =>
    env(attempt).run(activities.finishEvent, input);

  const failureOf = async (p: Promise<unknown>): Promise<ApplicationFailure> => {
    const err: unknown = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof ApplicationFailure)) throw new Error(`expected an ApplicationFailure, got ${String(err)}`);
    return err;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    repos = createRepositories(database.db);
    metrics = createMetrics({ defaultMetrics: false });
    sender = createSender({ addressPolicy: createAddressPolicy() });
    receiver = await startReceiver();
    sendImpl = sender.send;
    activities = createActivities({
      repos,
      metrics,
      backoff,
      send: (req) => {
        sent.push(req);
        return sendImpl(req);
      },
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await sender?.close();
    await database?.destroy();
  });

  async function preparedDelivery(opts: { maxAttempts?: number } = {}) {
    const source = uniqueSource();
    const endpointId = await addEndpoint(repos, { source, url: receiver.url, maxAttempts: opts.maxAttempts ?? 5 });
    const eventId = await addEvent(repos, { source });
    const plan = await prepare(1, { eventId });
    const d = plan.deliveries[0];
    if (!d) throw new Error('nothing prepared');
    return { eventId, endpointId, deliveryId: d.deliveryId };
  }

  it('prepare: idempotent on retry, carries per-endpoint settings and the global backoff', async () => {
    const source = uniqueSource();
    const a = await addEndpoint(repos, { source, url: receiver.url, maxAttempts: 7, timeoutSeconds: 3 });
    const eventId = await addEvent(repos, { source });
    const first = await prepare(1, { eventId });
    const second = await prepare(2, { eventId });
    expect(second).toEqual(first);
    expect(first).toEqual({
      deliveries: [{ deliveryId: expect.any(String), endpointId: a, maxAttempts: 7, timeoutSeconds: 3, priorAttempts: 0 }],
      backoff,
    });
    expect(await repos.deliveries.listByEvent(eventId)).toHaveLength(1);
  });

  it('prepare: a missing event or a foreign delivery id is a non-retryable failure', async () => {
    const missing = await failureOf(prepare(1, { eventId: '00000000-0000-4000-8000-000000000000' }));
    expect(missing.nonRetryable).toBe(true);
    const { deliveryId } = await preparedDelivery();
    const otherEvent = await addEvent(repos, { source: uniqueSource() });
    const foreign = await failureOf(prepare(1, { eventId: otherEvent, deliveryIds: [deliveryId] }));
    expect(foreign.nonRetryable).toBe(true);
  });

  it('deliver: Retry-After sets the next retry delay, never below the backoff and capped at its maximum', async () => {
    const { deliveryId } = await preparedDelivery();
    receiver.setScript([{ status: 503, headers: { 'retry-after': '30' } }]);
    const long = await failureOf(deliver(1, { deliveryId, maxAttempts: 5 }));
    expect(long.nonRetryable).toBe(false);
    expect(Number(long.nextRetryDelay)).toBeGreaterThanOrEqual(29_000);
    expect(Number(long.nextRetryDelay)).toBeLessThanOrEqual(30_000);

    receiver.setScript([{ status: 503, headers: { 'retry-after': '0' } }]);
    // Temporal's attempt 3 (one retry went to a database failure) is the endpoint's attempt 2
    const short = await failureOf(deliver(3, { deliveryId, maxAttempts: 5 }));
    expect(short.nextRetryDelay).toBe(2_000); // endpoint attempt 2: 1 s * 2^1

    receiver.setScript([{ status: 500 }]);
    const plain = await failureOf(deliver(4, { deliveryId, maxAttempts: 5 }));
    expect(plain.nextRetryDelay).toBe(4_000); // endpoint attempt 3, whatever Temporal's
    expect(await repos.deliveries.get(deliveryId)).toMatchObject({ status: 'PENDING', attempts: 3, lastResponseStatus: 500 });
    receiver.setScript([{ status: 200, body: 'ok' }]);
  });

  it('deliver: a settled delivery is returned as is, without a request', async () => {
    const { deliveryId } = await preparedDelivery();
    expect(await deliver(1, { deliveryId, maxAttempts: 5 })).toEqual({ status: 'SUCCESS' });
    const before = sent.length;
    expect(await deliver(2, { deliveryId, maxAttempts: 5 })).toEqual({ status: 'SUCCESS' });
    expect(sent.length).toBe(before);
    expect((await repos.deliveries.get(deliveryId))?.attempts).toBe(1);
  });

  it('deliver: an endpoint deactivated mid-retry is not called and the delivery FAILS', async () => {
    const { deliveryId, endpointId } = await preparedDelivery();
    await database.db('webhook_endpoint').where({ id: endpointId }).update({ active: false });
    const before = sent.length;
    const failure = await failureOf(deliver(2, { deliveryId, maxAttempts: 5 }));
    expect(failure.nonRetryable).toBe(true);
    expect(sent.length).toBe(before);
    expect(await repos.deliveries.get(deliveryId)).toMatchObject({ status: 'FAILED', lastError: 'endpoint is no longer active' });
  });

  it('deliver: a sender that throws is a retryable attempt, and the last one FAILS the delivery', async () => {
    const { deliveryId } = await preparedDelivery({ maxAttempts: 2 });
    sendImpl = () => Promise.reject(new Error('bug in sender'));
    try {
      const first = await failureOf(deliver(1, { deliveryId, maxAttempts: 2 }));
      expect(first.nonRetryable).toBe(false);
      expect(await repos.deliveries.get(deliveryId)).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'sender error: bug in sender' });
      const last = await failureOf(deliver(2, { deliveryId, maxAttempts: 2 }));
      expect(last.nonRetryable).toBe(true);
      expect(await repos.deliveries.get(deliveryId)).toMatchObject({ status: 'FAILED', attempts: 2 });
    } finally {
      sendImpl = sender.send;
    }
  });

  describe('with Postgres behind a connection that fails', () => {
    let proxy: TcpProxy;
    let proxiedDb: Db;
    let proxied: FanoutActivities;
    beforeAll(async () => {
      const u = new URL(database.url);
      proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port) });
      u.port = String(proxy.port);
      proxiedDb = createDb({ url: u.toString(), poolMax: 2 });
      proxied = createActivities({ repos: createRepositories(proxiedDb), metrics, backoff, send: (req) => sendImpl(req) });
    });
    afterAll(async () => {
      await proxiedDb?.destroy();
      await proxy?.close();
    });
    const deliverProxied = (attempt: number, input: DeliverInput) => env(attempt).run(proxied.deliver, input);

    it('deliver: a database failure spends no endpoint attempt and fails nothing, even on Temporal\'s last attempt', async () => {
      const { deliveryId } = await preparedDelivery({ maxAttempts: 3 });
      const calls = receiver.requests.length;
      proxy.cut();
      try {
        for (const attempt of [1, 2, 3]) {
          const failure = await failureOf(deliverProxied(attempt, { deliveryId, maxAttempts: 3 }));
          expect(failure.type).toBe('DeliveryDatabaseUnavailable');
          expect(failure.nonRetryable).toBe(false);
        }
      } finally {
        proxy.restore();
      }
      expect(receiver.requests.length).toBe(calls); // the endpoint was never called
      expect(await repos.deliveries.get(deliveryId)).toMatchObject({ status: 'PENDING', attempts: 0 });

      // Temporal's attempt 4 is the endpoint's first: a 500 is retried, not the last attempt
      receiver.setScript([{ status: 500 }]);
      const first = await failureOf(deliverProxied(4, { deliveryId, maxAttempts: 3 }));
      expect(first.nonRetryable).toBe(false);
      expect(await repos.deliveries.get(deliveryId)).toMatchObject({ status: 'PENDING', attempts: 1, lastResponseStatus: 500 });
      receiver.setScript([{ status: 200, body: 'ok' }]);
      expect(await deliverProxied(5, { deliveryId, maxAttempts: 3 })).toEqual({ status: 'SUCCESS' });
      expect(await repos.deliveries.get(deliveryId)).toMatchObject({ status: 'SUCCESS', attempts: 2 });
    });

    it('deliver: a 200 that can not be recorded at once is recorded when Postgres is back, without a second request', async () => {
      const { deliveryId } = await preparedDelivery();
      const calls = receiver.requests.length;
      // Postgres goes away while the endpoint answers, and comes back 2 s later
      receiver.setScript(() => {
        proxy.cut();
        setTimeout(() => proxy.restore(), 2_000);
        return { status: 200, body: 'ok' };
      });
      try {
        expect(await deliverProxied(1, { deliveryId, maxAttempts: 5 })).toEqual({ status: 'SUCCESS' });
      } finally {
        receiver.setScript([{ status: 200, body: 'ok' }]);
        proxy.restore();
      }
      expect(receiver.requests.length).toBe(calls + 1);
      expect(await repos.deliveries.get(deliveryId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    });
  });

  it('finishEvent: fails a delivery its run left PENDING, keeps its last response, counts the event once', async () => {
    const { eventId, deliveryId } = await preparedDelivery();
    receiver.setScript([{ status: 502, body: 'gateway' }]);
    await failureOf(deliver(1, { deliveryId, maxAttempts: 5 }));
    receiver.setScript([{ status: 200, body: 'ok' }]);

    const unsettled = [{ deliveryId, reason: 'Activity task timed out' }];
    expect(await finishEvent(1, { eventId, unsettled })).toBe('FAILED');
    expect(await repos.deliveries.get(deliveryId)).toMatchObject({
      status: 'FAILED',
      attempts: 2,
      lastResponseStatus: 502,
      lastResponseBody: 'gateway',
      lastError: 'attempt did not complete: Activity task timed out',
    });
    const counted = async () => (await metrics.eventsFinished.get()).values.find((v) => v.labels.status === 'FAILED')?.value;
    const once = await counted();
    // a retried finishEvent (or a replay's recomputation) does not count the event again
    expect(await finishEvent(2, { eventId, unsettled })).toBe('FAILED');
    expect(await counted()).toBe(once);
    expect((await repos.events.get(eventId))?.status).toBe('FAILED');
  });
});
