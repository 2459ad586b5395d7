import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, test as base } from 'vitest';
import {
  createActivities,
  type DeliverInput,
  type DeliverResult,
  type FanoutActivities,
  type FinishedEventStatus,
  type FinishEventInput,
  type PrepareInput,
  type PrepareResult,
} from '../../src/activities/index.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import type { Destinations, DestinationTarget } from '../../src/delivery/destination.js';
import type { Message } from '../../src/delivery/message.js';
import { createDestinations } from '../../src/destinations/index.js';

/** One attempt to a destination, as the deliver activity makes it. */
type Send = Destinations['send'];
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { counterValue } from './support/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { addEndpoint, addEvent, preparedDelivery, uniqueSource } from './support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

// The activities one by one, in an activity context with a chosen attempt number: the edges a
// whole workflow run cannot reach deterministically (Retry-After, a lost last attempt, races).
// One database per file; every test has its own receiver, activities, sender stand-in and metrics.
interface ActivityFixtures {
  database: TestDatabase;
  sender: Destinations;
  receiver: Receiver;
  t: {
    repos: Repositories;
    metrics: Metrics;
    /** every request the activities sent in this test */
    sent: Array<{ message: Message; target: DestinationTarget }>;
    /** the activities themselves, to run in an activity environment of the test's own */
    activities: FanoutActivities;
    /** replaces the real sender for the rest of this test */
    setSend(send: Send): void;
    prepare(attempt: number, input: PrepareInput): Promise<PrepareResult>;
    deliver(attempt: number, input: DeliverInput): Promise<DeliverResult>;
    /** the delivery's first attempt as the workflow runs it: a local activity on the worker that prepared it */
    deliverFirstLocal(input: DeliverInput): Promise<DeliverResult>;
    finishEvent(attempt: number, input: FinishEventInput): Promise<FinishedEventStatus>;
    /** an endpoint on this test's receiver, an event for it, and its prepared delivery */
    preparedDelivery(opts?: { maxAttempts?: number }): Promise<{ eventId: string; endpointId: string; deliveryId: string }>;
  };
}

const backoff = { initialIntervalMs: 1_000, backoffCoefficient: 2, maximumIntervalMs: 600_000 };

const it = base.extend<ActivityFixtures>({
  database: [
    // eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern
    async ({}, use) => {
      const database = await createTestDatabase();
      try {
        await use(database);
      } finally {
        await database.destroy();
      }
    },
    { scope: 'file' },
  ],
  sender: [
    // eslint-disable-next-line no-empty-pattern -- as above
    async ({}, use) => {
      const sender = createDestinations({ addressPolicy: createAddressPolicy() });
      try {
        await use(sender);
      } finally {
        await sender.close();
      }
    },
    { scope: 'file' },
  ],
  // eslint-disable-next-line no-empty-pattern -- as above
  receiver: async ({}, use) => {
    const receiver = await startReceiver();
    try {
      await use(receiver);
    } finally {
      await receiver.close();
    }
  },
  t: async ({ database, sender, receiver }, use) => {
    const repos = createRepositories(database.db);
    const metrics = createMetrics({ defaultMetrics: false });
    const sent: Array<{ message: Message; target: DestinationTarget }> = [];
    let send: Send = sender.send;
    const activities: FanoutActivities = createActivities({
      repos,
      metrics,
      backoff,
      destinations: {
        send: (message, target, options) => {
          sent.push({ message, target });
          return send(message, target, options);
        },
      },
    });
    // each call runs in an activity context whose Info carries the given attempt number
    const env = (attempt: number) => new MockActivityEnvironment({ attempt }, { logger: new DefaultLogger('ERROR') });
    const prepare = (attempt: number, input: PrepareInput): Promise<PrepareResult> => env(attempt).run(activities.prepare, input);
    await use({
      repos,
      metrics,
      sent,
      activities,
      setSend: (s) => {
        send = s;
      },
      prepare,
      deliver: (attempt, input) => env(attempt).run(activities.deliver, input),
      deliverFirstLocal: (input) =>
        new MockActivityEnvironment({ attempt: 1, isLocal: true }, { logger: new DefaultLogger('ERROR') }).run(activities.deliver, input),
      finishEvent: (attempt, input) => env(attempt).run(activities.finishEvent, input),
      preparedDelivery: (opts = {}) => preparedDelivery({ repos, prepare, url: receiver.url }, opts),
    });
  },
});

const failureOf = async (p: Promise<unknown>): Promise<ApplicationFailure> => {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ApplicationFailure)) throw new Error(`expected an ApplicationFailure, got ${String(err)}`);
  return err;
};

describe('fanout activities', () => {
  it('prepare: idempotent on retry, carries per-endpoint settings and the global backoff', async ({ t, receiver }) => {
    const source = uniqueSource();
    const a = await addEndpoint(t.repos, { source, url: receiver.url, maxAttempts: 7, timeoutSeconds: 3 });
    const eventId = await addEvent(t.repos, { source });
    const first = await t.prepare(1, { eventId });
    const second = await t.prepare(2, { eventId });
    expect(second).toEqual(first);
    expect(first).toEqual({
      deliveries: [{ deliveryId: expect.any(String), endpointId: a, maxAttempts: 7, timeoutSeconds: 3, priorAttempts: 0 }],
      backoff,
    });
    expect(await t.repos.deliveries.listByEvent(eventId)).toHaveLength(1);
  });

  it('prepare: a row another run inserts meanwhile is returned too, and a settled row is not delivered again', async ({
    t,
    receiver,
    database,
  }) => {
    const source = uniqueSource();
    const a = await addEndpoint(t.repos, { source, url: receiver.url });
    const b = await addEndpoint(t.repos, { source, url: receiver.url });
    const c = await addEndpoint(t.repos, { source, url: receiver.url });
    const eventId = await addEvent(t.repos, { source });
    // another run's transaction holds b's row, not committed yet: prepare's insert waits for it
    const other = await database.db.transaction();
    const [held] = (await other('webhook_delivery').insert({ event_id: eventId, endpoint_id: b }).returning('id')) as Array<{ id: string }>;
    const prepared = t.prepare(1, { eventId });
    await expect
      .poll(
        async () =>
          (
            await database.db.raw<{ rows: unknown[] }>(
              `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rows.length,
      )
      .toBe(1);
    await other.commit();
    const first = await prepared;
    // oldest row first: b's, then those created together, in the order of their endpoints
    expect(first.deliveries.map((d) => d.endpointId)).toEqual([b, a, c]);
    expect(first.deliveries[0]?.deliveryId).toBe(held?.id);

    await database.db('webhook_delivery').where({ event_id: eventId, endpoint_id: a }).update({ status: 'SUCCESS' });
    const retried = await t.prepare(2, { eventId });
    expect(retried.deliveries).toEqual(first.deliveries.filter((d) => d.endpointId !== a));
    expect(await t.repos.deliveries.listByEvent(eventId)).toHaveLength(3);
  });

  it('prepare: records the workflow id of the run that fans the event out, and only the first one', async ({ t, receiver }) => {
    const source = uniqueSource();
    await addEndpoint(t.repos, { source, url: receiver.url });
    const eventId = await addEvent(t.repos, { source });
    const inRun = (workflowId: string) =>
      new MockActivityEnvironment({ attempt: 1, workflowExecution: { workflowId, runId: 'run' } }, { logger: new DefaultLogger('ERROR') });
    const activities = t.activities;
    await inRun(eventId).run(activities.prepare, { eventId });
    expect((await t.repos.events.get(eventId))?.workflowId).toBe(eventId);
    // a later run (e.g. a replay's own workflow id) does not overwrite it
    await inRun('another-run').run(activities.prepare, { eventId });
    expect((await t.repos.events.get(eventId))?.workflowId).toBe(eventId);
  });

  it('prepare: a missing event or a foreign delivery id is a non-retryable failure', async ({ t }) => {
    const missing = await failureOf(t.prepare(1, { eventId: '00000000-0000-4000-8000-000000000000' }));
    expect(missing.nonRetryable).toBe(true);
    const { deliveryId } = await t.preparedDelivery();
    const otherEvent = await addEvent(t.repos, { source: uniqueSource() });
    const foreign = await failureOf(t.prepare(1, { eventId: otherEvent, deliveryIds: [deliveryId] }));
    expect(foreign.nonRetryable).toBe(true);
  });

  it('deliver: Retry-After sets the next retry delay, never below the backoff and capped at its maximum', async ({
    t,
    receiver,
    database,
  }) => {
    const { deliveryId, endpointId } = await t.preparedDelivery();
    receiver.setScript([{ status: 503, headers: { 'retry-after': '30' } }]);
    const long = await failureOf(t.deliver(1, { deliveryId, maxAttempts: 5 }));
    expect(long.nonRetryable).toBe(false);
    expect(Number(long.nextRetryDelay)).toBeGreaterThanOrEqual(29_000);
    expect(Number(long.nextRetryDelay)).toBeLessThanOrEqual(30_000);

    // the 503 also paused the endpoint (docs/limits.md): an attempt within the pause sends nothing,
    // spends no endpoint attempt and waits out the rest of it
    const paused = await failureOf(t.deliver(2, { deliveryId, maxAttempts: 5 }));
    expect(paused).toMatchObject({ type: 'DeliveryDeferred', nonRetryable: false, category: 'BENIGN' });
    expect(Number(paused.nextRetryDelay)).toBeGreaterThan(25_000);
    expect(receiver.requests).toHaveLength(1);
    expect(await t.repos.deliveries.get(deliveryId)).toMatchObject({ attempts: 1 });
    // the pause is over
    await database.db('webhook_endpoint').where({ id: endpointId }).update({ paused_until: null });

    receiver.setScript([{ status: 503, headers: { 'retry-after': '0' } }]);
    // Temporal's attempt 3 (one retry went to a database failure) is the endpoint's attempt 2
    const short = await failureOf(t.deliver(3, { deliveryId, maxAttempts: 5 }));
    expect(short.nextRetryDelay).toBe(2_000); // endpoint attempt 2: 1 s * 2^1

    receiver.setScript([{ status: 500 }]);
    const plain = await failureOf(t.deliver(4, { deliveryId, maxAttempts: 5 }));
    expect(plain.nextRetryDelay).toBe(4_000); // endpoint attempt 3, whatever Temporal's
    expect(await t.repos.deliveries.get(deliveryId)).toMatchObject({ status: 'PENDING', attempts: 3, lastResponseStatus: 500 });
  });

  it.for<[string, { rateLimitPerSecond?: number; maxConcurrency?: number }, number]>([
    // limits -> statements one successful attempt sends to Postgres
    ['no limits: no round trip more than before the feature (load, record)', {}, 2],
    ['a rate limit: one more (admission)', { rateLimitPerSecond: 100 }, 3],
    ['a concurrency limit: two more (admission, giving the slot back)', { maxConcurrency: 5 }, 4],
  ])('deliver, %s', async ([, limits, statements], { t, database }) => {
    const { deliveryId, endpointId } = await t.preparedDelivery();
    await database
      .db('webhook_endpoint')
      .where({ id: endpointId })
      .update({ rate_limit_per_second: limits.rateLimitPerSecond ?? null, max_concurrency: limits.maxConcurrency ?? null });
    const seen: string[] = [];
    const count = (q: { sql: string }) => seen.push(q.sql);
    database.db.on('query', count);
    try {
      expect(await t.deliver(1, { deliveryId, maxAttempts: 5 })).toEqual({ status: 'SUCCESS' });
    } finally {
      database.db.off('query', count);
    }
    expect(seen, seen.join('\n')).toHaveLength(statements);
  });

  it('deliver, the first attempt as a local activity right after prepare: one statement (record), the rows come from prepare', async ({
    t,
    database,
    receiver,
  }) => {
    const { deliveryId } = await t.preparedDelivery();
    const seen: string[] = [];
    const count = (q: { sql: string }) => seen.push(q.sql);
    database.db.on('query', count);
    try {
      expect(await t.deliverFirstLocal({ deliveryId, maxAttempts: 5 })).toEqual({ status: 'SUCCESS' });
    } finally {
      database.db.off('query', count);
    }
    expect(seen, seen.join('\n')).toHaveLength(1);
    // what was sent is what a loaded attempt sends: the event's body to the endpoint's URL
    expect(receiver.requests.at(-1)?.body.toString()).toBe(JSON.stringify({ hello: 'world' }));
    expect(await t.repos.deliveries.get(deliveryId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
  });

  it('deliver: the rows prepare handed over serve one attempt only; the next local one reads them fresh', async ({ t, database }) => {
    const { deliveryId, endpointId } = await t.preparedDelivery();
    t.setSend(() => Promise.resolve({ kind: 'retryable', status: 503, body: '', error: 'HTTP 503', durationMs: 1, statusClass: '5xx' }));
    await failureOf(t.deliverFirstLocal({ deliveryId, maxAttempts: 5 }));
    // changed after the first attempt: a later attempt must see it
    await database.db('webhook_endpoint').where({ id: endpointId }).update({ active: false });
    const before = t.sent.length;
    const failure = await failureOf(t.deliverFirstLocal({ deliveryId, maxAttempts: 5 }));
    expect(failure.nonRetryable).toBe(true);
    expect(t.sent.length).toBe(before);
    expect(await t.repos.deliveries.get(deliveryId)).toMatchObject({ status: 'FAILED', lastError: 'endpoint is no longer active' });
  });

  it('prepare and finishEvent: one statement each, whatever the number of endpoints', async ({ t, receiver, database }) => {
    const source = uniqueSource();
    for (let i = 0; i < 3; i++) await addEndpoint(t.repos, { source, url: receiver.url });
    const eventId = await addEvent(t.repos, { source });
    const seen: string[] = [];
    const count = (q: { sql: string }) => seen.push(q.sql);
    database.db.on('query', count);
    try {
      expect((await t.prepare(1, { eventId })).deliveries).toHaveLength(3);
      expect(seen).toHaveLength(1);
      expect(await t.finishEvent(1, { eventId })).toBe('PARTIAL'); // all three still PENDING
      expect(seen).toHaveLength(2);
    } finally {
      database.db.off('query', count);
    }
  });

  it("deliver: the first attempts of an event's endpoints that end together are recorded by one statement", async ({
    t,
    receiver,
    database,
  }) => {
    const source = uniqueSource();
    for (let i = 0; i < 10; i++) await addEndpoint(t.repos, { source, url: receiver.url });
    const eventId = await addEvent(t.repos, { source });
    const { deliveries } = await t.prepare(1, { eventId });
    // the receiver's answers come over ten sockets at their own pace; answered at once, the ten
    // attempts end in the same turn of the event loop, as they do when a receiver is quick
    t.setSend(() => Promise.resolve({ kind: 'success', status: 200, body: 'ok', durationMs: 1, statusClass: '2xx' }));
    const seen: string[] = [];
    const count = (q: { sql: string }) => seen.push(q.sql);
    database.db.on('query', count);
    try {
      const results = await Promise.all(deliveries.map((d) => t.deliverFirstLocal({ deliveryId: d.deliveryId, maxAttempts: 5 })));
      expect(results).toEqual(deliveries.map(() => ({ status: 'SUCCESS' })));
    } finally {
      database.db.off('query', count);
    }
    expect(seen, seen.join('\n')).toHaveLength(1);
    for (const d of await t.repos.deliveries.listByEvent(eventId)) expect(d).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    const logged = await database.db('webhook_delivery_attempt').whereIn(
      'delivery_id',
      deliveries.map((d) => d.deliveryId),
    );
    expect(logged.map((l) => [l.attempt, l.outcome])).toEqual(deliveries.map(() => [1, 'SUCCESS']));
  });

  it("deliver: the attempt log records the broker's receipt of a publish, recorded alone or with others", async ({
    t,
    receiver,
    database,
  }) => {
    const source = uniqueSource();
    for (let i = 0; i < 4; i++) await addEndpoint(t.repos, { source, url: receiver.url });
    const eventId = await addEvent(t.repos, { source });
    const { deliveries } = await t.prepare(1, { eventId });
    const [first, ...rest] = deliveries;
    // a destination that answers like a broker: no HTTP status, a receipt naming the message
    t.setSend((message) =>
      Promise.resolve({
        kind: 'success',
        status: null,
        body: 'acknowledged',
        durationMs: 1,
        statusClass: '2xx',
        receipt: { messageId: `m-${message.meta.deliveryId}`, partition: 2, offset: '41', sequence: '7' },
      }),
    );
    // the first alone (the single statement), the others together (the batch's)
    expect(await t.deliver(1, { deliveryId: first!.deliveryId, maxAttempts: 5 })).toEqual({ status: 'SUCCESS' });
    await Promise.all(rest.map((d) => t.deliverFirstLocal({ deliveryId: d.deliveryId, maxAttempts: 5 })));
    const logged = await database.db('webhook_delivery_attempt').whereIn(
      'delivery_id',
      deliveries.map((d) => d.deliveryId),
    );
    expect(
      logged
        .map((l: { delivery_id: string; receipt: unknown; response_status: unknown }) => [l.delivery_id, l.receipt, l.response_status])
        .sort(),
    ).toEqual(
      deliveries.map((d) => [d.deliveryId, { messageId: `m-${d.deliveryId}`, partition: 2, offset: '41', sequence: '7' }, null]).sort(),
    );
  });

  it('deliver: an HTTP attempt records no receipt', async ({ t, database }) => {
    const { deliveryId } = await t.preparedDelivery();
    expect(await t.deliver(1, { deliveryId, maxAttempts: 5 })).toEqual({ status: 'SUCCESS' });
    const [logged] = await database.db('webhook_delivery_attempt').where({ delivery_id: deliveryId });
    expect(logged).toMatchObject({ outcome: 'SUCCESS', response_status: 200, receipt: null });
  });

  it('deliver: a settled delivery is returned as is, without a request', async ({ t }) => {
    const { deliveryId } = await t.preparedDelivery();
    expect(await t.deliver(1, { deliveryId, maxAttempts: 5 })).toEqual({ status: 'SUCCESS' });
    const before = t.sent.length;
    expect(await t.deliver(2, { deliveryId, maxAttempts: 5 })).toEqual({ status: 'SUCCESS' });
    expect(t.sent.length).toBe(before);
    expect((await t.repos.deliveries.get(deliveryId))?.attempts).toBe(1);
  });

  it('deliver: an endpoint deactivated mid-retry is not called and the delivery FAILS', async ({ t, database }) => {
    const { deliveryId, endpointId } = await t.preparedDelivery();
    await database.db('webhook_endpoint').where({ id: endpointId }).update({ active: false });
    const before = t.sent.length;
    const failure = await failureOf(t.deliver(2, { deliveryId, maxAttempts: 5 }));
    expect(failure.nonRetryable).toBe(true);
    expect(t.sent.length).toBe(before);
    expect(await t.repos.deliveries.get(deliveryId)).toMatchObject({ status: 'FAILED', lastError: 'endpoint is no longer active' });
  });

  it('deliver: a sender that throws is a retryable attempt, and the last one FAILS the delivery', async ({ t }) => {
    const { deliveryId } = await t.preparedDelivery({ maxAttempts: 2 });
    t.setSend(() => Promise.reject(new Error('bug in sender')));
    const first = await failureOf(t.deliver(1, { deliveryId, maxAttempts: 2 }));
    expect(first.nonRetryable).toBe(false);
    expect(await t.repos.deliveries.get(deliveryId)).toMatchObject({
      status: 'PENDING',
      attempts: 1,
      lastError: 'sender error: bug in sender',
    });
    const last = await failureOf(t.deliver(2, { deliveryId, maxAttempts: 2 }));
    expect(last.nonRetryable).toBe(true);
    expect(await t.repos.deliveries.get(deliveryId)).toMatchObject({ status: 'FAILED', attempts: 2 });
  });

  it('finishEvent: fails a delivery its run left PENDING, keeps its last response, counts the event once', async ({ t, receiver }) => {
    const { eventId, deliveryId } = await t.preparedDelivery();
    receiver.setScript([{ status: 502, body: 'gateway' }]);
    await failureOf(t.deliver(1, { deliveryId, maxAttempts: 5 }));

    const unsettled = [{ deliveryId, reason: 'Activity task timed out' }];
    expect(await t.finishEvent(1, { eventId, unsettled })).toBe('FAILED');
    expect(await t.repos.deliveries.get(deliveryId)).toMatchObject({
      status: 'FAILED',
      attempts: 2,
      lastResponseStatus: 502,
      lastResponseBody: 'gateway',
      lastError: 'attempt did not complete: Activity task timed out',
    });
    // counted once; a retried finishEvent (or a replay's recomputation) does not count it again
    expect(await counterValue(t.metrics.eventsFinished, { status: 'FAILED' })).toBe(1);
    expect(await t.finishEvent(2, { eventId, unsettled })).toBe('FAILED');
    expect(await counterValue(t.metrics.eventsFinished)).toBe(1);
    expect((await t.repos.events.get(eventId))?.status).toBe('FAILED');
  });
});
