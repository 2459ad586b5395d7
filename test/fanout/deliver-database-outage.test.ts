import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createActivities,
  type DeliverInput,
  type FanoutActivities,
  type PrepareInput,
  type PrepareResult,
} from '../../src/activities/index.js';
import { createDb, type Db } from '../../src/db/knex.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import type { Destinations, DestinationTarget } from '../../src/delivery/destination.js';
import type { Message } from '../../src/delivery/message.js';
import { createDestinations } from '../../src/destinations/index.js';

/** One attempt to a destination, as the deliver activity makes it. */
type Send = Destinations['send'];
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { preparedDelivery } from './support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

// The deliver activity while Postgres fails: no endpoint attempt is spent, nothing fails, and a 200
// that can not be recorded at once is recorded later without a second request. A bug is not an
// outage: it spends the endpoint's attempts and ends FAILED.
describe('deliver activity during a Postgres outage', () => {
  let database: TestDatabase;
  let repos: Repositories;
  let metrics: Metrics;
  let sender: Destinations;
  let receiver: Receiver;
  const sent: Array<{ message: Message; target: DestinationTarget }> = [];
  let sendImpl: Send;
  const backoff = { initialIntervalMs: 1_000, backoffCoefficient: 2, maximumIntervalMs: 600_000 };
  let activities: FanoutActivities;

  // each call runs in an activity context whose Info carries the given attempt number
  const env = (attempt: number) => new MockActivityEnvironment({ attempt }, { logger: new DefaultLogger('ERROR') });
  const prepare = (attempt: number, input: PrepareInput): Promise<PrepareResult> => env(attempt).run(activities.prepare, input);

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
    sender = createDestinations({ addressPolicy: createAddressPolicy() });
    receiver = await startReceiver();
    sendImpl = sender.send;
    activities = createActivities({
      repos,
      metrics,
      backoff,
      destinations: {
        send: (message, target, options) => {
          sent.push({ message, target });
          return sendImpl(message, target, options);
        },
      },
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await sender?.close();
    await database?.destroy();
  });

  const prepared = (opts: { maxAttempts?: number } = {}) => preparedDelivery({ repos, prepare, url: receiver.url }, opts);

  describe('with Postgres behind a connection that fails', () => {
    let proxy: TcpProxy;
    let proxiedDb: Db;
    let proxied: FanoutActivities;
    beforeAll(async () => {
      const u = new URL(database.url);
      proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port) });
      u.port = String(proxy.port);
      proxiedDb = createDb({ url: u.toString(), poolMax: 2 });
      proxied = createActivities({
        repos: createRepositories(proxiedDb),
        metrics,
        backoff,
        destinations: { send: (...args) => sendImpl(...args) },
      });
    });
    afterAll(async () => {
      await proxiedDb?.destroy();
      await proxy?.close();
    });
    const deliverProxied = (attempt: number, input: DeliverInput) => env(attempt).run(proxied.deliver, input);

    it("deliver: a database failure spends no endpoint attempt and fails nothing, even on Temporal's last attempt", async () => {
      const { deliveryId } = await prepared({ maxAttempts: 3 });
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
      const { deliveryId } = await prepared();
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

  describe('with a bug in the activity', () => {
    const lines: { level: number; msg: string; err?: { type: string; stack: string }; deliveryId?: string }[] = [];
    let buggy: FanoutActivities;
    beforeAll(() => {
      const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) });
      // a programming error after the request went out: counting the attempt throws a TypeError
      const deliveryAttempts = {
        inc: () => {
          throw new TypeError("Cannot read properties of undefined (reading 'labels')");
        },
      } as unknown as Metrics['deliveryAttempts'];
      buggy = createActivities({
        repos,
        backoff,
        logger,
        metrics: { ...metrics, deliveryAttempts },
        destinations: { send: (...args) => sendImpl(...args) },
      });
    });
    const deliverBuggy = (attempt: number, input: DeliverInput) => env(attempt).run(buggy.deliver, input);

    it('deliver: an internal error spends an endpoint attempt each time, is logged with its stack and ends FAILED', async () => {
      const { deliveryId } = await prepared({ maxAttempts: 3 });
      const calls = receiver.requests.length;
      for (const attempt of [1, 2]) {
        const failure = await failureOf(deliverBuggy(attempt, { deliveryId, maxAttempts: 3 }));
        expect(failure).toMatchObject({ type: 'DeliveryInternalError', nonRetryable: false });
        expect(await repos.deliveries.get(deliveryId)).toMatchObject({ status: 'PENDING', attempts: attempt });
      }
      const last = await failureOf(deliverBuggy(3, { deliveryId, maxAttempts: 3 }));
      expect(last).toMatchObject({ type: 'DeliveryInternalError', nonRetryable: true });
      const row = await repos.deliveries.get(deliveryId);
      expect(row).toMatchObject({ status: 'FAILED', attempts: 3 });
      expect(row?.lastError).toBe("internal error: Cannot read properties of undefined (reading 'labels')");
      expect(receiver.requests.length).toBe(calls + 3);

      const errors = lines.filter((l) => l.deliveryId === deliveryId && l.level === 50);
      expect(errors).toHaveLength(3);
      expect(errors[0]?.err?.type).toBe('TypeError');
      expect(errors[0]?.err?.stack).toMatch(/TypeError: Cannot read properties[\s\S]*\n\s+at /);
    });
  });
});
