import type { RecordedRequest } from '../support/receiver.js';
import { randomUUID } from 'node:crypto';
import { DefaultLogger } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import type { PrepareResult } from '../../src/activities/types.js';
import { signalTurn } from '../../src/temporal/signal-turn.js';
import { continuationWorkflowId } from '../../src/domain/ordering.js';
import { eventually } from '../support/wait.js';
import {
  addEndpoint,
  addEvent,
  deliveryOf,
  finishedEvents,
  orderingWakerOf,
  startFanoutHarness,
  TEST_BACKOFF,
  uniqueSource,
  type FanoutHarness,
} from './support/harness.js';
import { lostMidChain, ordered, sendKey, seqOf } from './support/ordered-key.js';
import { it } from './support/fixtures.js';

// A delivery left to its key's chain (docs/ordering.md, "A waiting delivery costs its run
// nothing") under the faults a reviewer found (issue 41). First, a worker killed between a
// handed-off attempt's record and its release(ended): the lease runs out, the waker starts the
// continuation, whose prepare keeps the ended delivery so that its turn check and release apply the
// end to its key (under Skip the next one goes, under Block the key counts as blocked, after a
// SUCCESS the claim is cleared). Each of these failed before the continuation kept it.

describe('a worker killed between a handed-off attempt and its release (detached)', () => {
  /**
   * Three events of one key: the first answered 422 (maxAttempts 1) blocks the key, the two after
   * it are left to the key's chain (their runs ended after prepare). Then the row state a worker
   * killed mid-chain leaves: the first skipped (its release ran), the second's handed-off attempt
   * recorded (`recorded`) with its claim still there, its lease run out.
   */
  async function setUp(
    h: FanoutHarness,
    url: string,
    source: string,
    recorded: 'SUCCESS' | 'FAILED',
  ): Promise<{ ids: string[]; endpointId: string; d1: string; d2: string }> {
    const endpointId = await addEndpoint(h.repos, { source, url, ordering: ordered(), maxAttempts: 1 });
    const ids = await sendKey(h, source, 3);
    await finishedEvents(h, ids.slice(0, 1), 20_000);
    const d0 = (await deliveryOf(h.repos, ids[0]!, endpointId)).id;
    const d1 = (await deliveryOf(h.repos, ids[1]!, endpointId)).id;
    const d2 = (await deliveryOf(h.repos, ids[2]!, endpointId)).id;
    await eventually(async () => (await deliveryOf(h.repos, ids[1]!, endpointId)).ordering?.waitingBehind === d0);
    await eventually(async () => (await deliveryOf(h.repos, ids[2]!, endpointId)).ordering?.waitingBehind === d1);
    const db = h.database.db;
    // both left to the key's chain: their events' runs have ended
    expect(await db('webhook_delivery').where({ id: d1 }).first('ordering_waiter')).toEqual({
      ordering_waiter: continuationWorkflowId(ids[1]!, d1),
    });
    for (const id of ids.slice(1)) await h.client.workflow.getHandle(id).result();
    // what the lost worker left: d0 released (skipped), d1's attempt recorded, the release(ended) never ran
    await db('webhook_delivery').where({ id: d0 }).update({ ordering_skipped: true, ordering_blocked_at: null });
    await lostMidChain(db, d1, recorded, "now() - interval '1 second'", {
      ordering_waiting_since: db.raw("now() - interval '11 seconds'"),
    });
    return { ids, endpointId, d1, d2 };
  }

  it('GUARANTEE: under Skip, a handed-off attempt that ended FAILED releases its key: the next delivery goes within 30 s', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('killskip');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200 }));
    const { ids, endpointId, d1, d2 } = await setUp(h, target.url, source, 'FAILED');
    // the endpoint's policy is Skip (changed after d0 blocked, to reach the state without a kill)
    await h.database.db('webhook_endpoint').where({ id: endpointId }).update({ ordering_on_failure: 'Skip' });
    const since = Date.now();
    const waker = orderingWakerOf(h);
    waker.start();
    try {
      await eventually(async () => (await h.repos.deliveries.get(d2))?.status === 'SUCCESS', {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: 'the next delivery of the key delivered',
      });
      expect(Date.now() - since).toBeLessThan(30_000);
      expect(await finishedEvents(h, ids, 10_000)).toEqual(['FAILED', 'FAILED', 'COMPLETED']);
    } finally {
      await waker.stop();
    }
    expect((await h.repos.deliveries.get(d1))?.ordering?.skipped).toBe(true);
    expect(target.requests.map(seqOf)).toEqual([0, 2]);
  });

  it('under Block, a handed-off attempt that ended FAILED blocks its key: counted as blocked once the waker recovered it', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('killblock');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200 }));
    const { ids, endpointId, d1 } = await setUp(h, target.url, source, 'FAILED');
    expect(await h.repos.ordering.blockedKeysOf(endpointId)).toBe(0);
    const waker = orderingWakerOf(h);
    waker.start();
    try {
      // the event is finished (the continuation does that) ...
      await eventually(async () => (await h.repos.events.get(ids[1]!))?.status === 'FAILED', { timeoutMs: 30_000, intervalMs: 200 });
      // ... and the key says it is blocked, as it would have had the release run
      await eventually(async () => (await h.repos.ordering.blockedKeysOf(endpointId)) === 1, {
        timeoutMs: 10_000,
        intervalMs: 200,
        what: 'the key counted blocked (ordering_blocked_at, ordering.key_blocked)',
      });
    } finally {
      await waker.stop();
    }
    const row = await h.database.db('webhook_delivery').where({ id: d1 }).first('ordering_blocked_at');
    expect(row?.ordering_blocked_at).not.toBeNull();
  });

  it('a handed-off attempt that ended SUCCESS: once the waker recovered it, its claim is cleared and no further continuation is started', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('killok');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200 }));
    const { ids, d1, d2 } = await setUp(h, target.url, source, 'SUCCESS');
    const waker = orderingWakerOf(h);
    waker.start();
    try {
      expect(await finishedEvents(h, ids, 30_000)).toEqual(['FAILED', 'COMPLETED', 'COMPLETED']);
      await eventually(async () => (await h.repos.deliveries.get(d2))?.status === 'SUCCESS', { timeoutMs: 30_000, intervalMs: 200 });
    } finally {
      await waker.stop();
    }
    const continuation = continuationWorkflowId(ids[1]!, d1);
    await h.client.workflow.getHandle(continuation).result();
    // the lost worker's claim is done with: the waker does not start the continuation again and again
    const db = h.database.db;
    expect(await db('webhook_delivery').where({ id: d1 }).first('ordering_handoff', 'ordering_waiter')).toEqual({
      ordering_handoff: null,
      ordering_waiter: null,
    });
    expect(await orderingWakerOf(h, 0).pass()).toBe(0);
  });
});

/** A receiver's answers: seq 1 refused with a 500 once; seq 0 held 1.5 s, the others `laterMs`. */
function failsSecondOnce(laterMs: number) {
  let failed = false;
  return (_n: number, req: RecordedRequest) => {
    if (seqOf(req) === 1 && !failed) {
      failed = true;
      return { status: 500 };
    }
    return { status: 200, delayMs: seqOf(req) === 0 ? 1_500 : laterMs };
  };
}

/** Two events of one ordered key; the first's run started and its delivery in place, the second's run not started. */
async function firstOfTwoStarted(h: FanoutHarness, source: string, url: string): Promise<{ e0: string; e1: string; endpointId: string }> {
  const endpointId = await addEndpoint(h.repos, { source, url, ordering: ordered(), maxAttempts: 5 });
  const e0 = await addEvent(h.repos, { source, payload: JSON.stringify({ key: 'k', seq: 0 }) });
  const e1 = await addEvent(h.repos, { source, payload: JSON.stringify({ key: 'k', seq: 1 }) });
  await h.start(e0);
  await eventually(async () => (await deliveryOf(h.repos, e0, endpointId))?.status === 'PENDING');
  return { e0, e1, endpointId };
}

// prepare retried (its first attempt's transaction committed, its completion lost:
// a worker killed, an activity timeout, or another delivery's turn check failing in the same
// Promise.all) after the first attempt left the delivery to its key's chain. The first attempt
// is run here in an activity context of the event's run's id (what the run's attempt 1 did); the
// run started afterwards makes the retry.
describe('prepare retried after it left a delivery to its key chain', () => {
  function firstPrepareOf(h: FanoutHarness) {
    const activities = createActivities({
      repos: h.repos,
      metrics: h.metrics,
      backoff: TEST_BACKOFF,
      destinations: { send: () => Promise.reject(new Error('prepare sends nothing')) },
      signalTurn: (wake) => signalTurn(h.client, wake, { timeoutMs: 5_000, taskQueue: h.taskQueue }),
      orderingHandoff: true,
    });
    return (eventId: string): Promise<PrepareResult> =>
      new MockActivityEnvironment(
        { attempt: 1, workflowExecution: { workflowId: eventId, runId: randomUUID() } },
        { logger: new DefaultLogger('ERROR') },
      ).run(activities.prepare, { eventId, takesHandoff: true, detaches: true });
  }

  it("the retry while the chain holds the delivery's claim: the event's run still ends (it is not left waiting for a signal nobody sends)", async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('prepretry');
    // d0 held so that d1 is left to the chain; d1's handed-off request held so its claim is live at the retry
    const target = await receiver((_n, req) => ({ status: 200, delayMs: seqOf(req) === 0 ? 1_500 : 4_000 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered() });
    const e0 = await addEvent(h.repos, { source, payload: JSON.stringify({ key: 'k', seq: 0 }) });
    const e1 = await addEvent(h.repos, { source, payload: JSON.stringify({ key: 'k', seq: 1 }) });
    await h.start(e0);
    await eventually(async () => (await deliveryOf(h.repos, e0, endpointId).catch(() => undefined))?.status === 'PENDING');
    const first = await firstPrepareOf(h)(e1);
    expect(first.deliveries.map((d) => d.ordering)).toEqual(['detached']);
    const d1 = (await deliveryOf(h.repos, e1, endpointId)).id;
    // the chain: d0's release claims d1 and sends it
    await eventually(async () => target.requests.some((r) => seqOf(r) === 1), { timeoutMs: 20_000 });
    expect(await h.database.db('webhook_delivery').where({ id: d1 }).first('ordering_handoff')).toEqual({ ordering_handoff: 'claimed' });
    // the run's prepare, retried
    await h.start(e1);
    // the chain ends d1 and finishes its event
    await eventually(async () => (await h.repos.events.get(e1))?.status === 'COMPLETED', { timeoutMs: 20_000 });
    const run = h.client.workflow.getHandle(e1).result();
    const ended = await Promise.race([run.then(() => 'ended'), new Promise((r) => setTimeout(() => r('still running'), 15_000))]);
    expect(ended).toBe('ended');
    expect(target.requests.map(seqOf)).toEqual([0, 1]);
  });

  it('the retry while the handed-off attempt failed and waits for its retry: the delivery is not sent before its backoff, nor by two runs at once', async ({
    receiver,
  }) => {
    const h = await startFanoutHarness({ backoff: { initialIntervalMs: 4_000, backoffCoefficient: 2, maximumIntervalMs: 8_000 } });
    try {
      const source = uniqueSource('prepretry2');
      const target = await receiver(failsSecondOnce(500));
      const { e0, e1 } = await firstOfTwoStarted(h, source, target.url);
      expect((await firstPrepareOf(h)(e1)).deliveries.map((d) => d.ordering)).toEqual(['detached']);
      // the chain: d1's handed-off attempt answered 500, its continuation started to retry it after the backoff
      await eventually(async () => target.requests.some((r) => seqOf(r) === 1 && r.finishedAt !== undefined), { timeoutMs: 20_000 });
      // the run's prepare, retried while the continuation waits out the backoff
      await h.start(e1);
      await h.client.workflow.getHandle(e1).result();
      await finishedEvents(h, [e0, e1], 30_000);
      const ones = target.requests.filter((r) => seqOf(r) === 1).sort((a, b) => a.startedAt - b.startedAt);
      // the 500, then one retry after the backoff's delay (4 s)
      expect(ones.length).toBe(2);
      expect(ones[1]!.startedAt - ones[0]!.finishedAt!).toBeGreaterThanOrEqual(3_000);
    } finally {
      await h.close();
    }
  });
});

describe('prepare retried while the continuation sends the delivery', () => {
  it('one request of the key in flight at a time: the retried prepare does not send the delivery its continuation is sending', async ({
    receiver,
  }) => {
    const h = await startFanoutHarness({ backoff: { initialIntervalMs: 500, backoffCoefficient: 2, maximumIntervalMs: 1_000 } });
    try {
      const source = uniqueSource('prepretry3');
      const target = await receiver(failsSecondOnce(4_000));
      const { e0, e1 } = await firstOfTwoStarted(h, source, target.url);
      const activities = createActivities({
        repos: h.repos,
        metrics: h.metrics,
        backoff: TEST_BACKOFF,
        destinations: { send: () => Promise.reject(new Error('prepare sends nothing')) },
        signalTurn: (wake) => signalTurn(h.client, wake, { timeoutMs: 5_000, taskQueue: h.taskQueue }),
        orderingHandoff: true,
      });
      const first: PrepareResult = await new MockActivityEnvironment(
        { attempt: 1, workflowExecution: { workflowId: e1, runId: randomUUID() } },
        { logger: new DefaultLogger('ERROR') },
      ).run(activities.prepare, { eventId: e1, takesHandoff: true, detaches: true });
      expect(first.deliveries.map((d) => d.ordering)).toEqual(['detached']);
      // the handoff's attempt answered 500; the continuation's retry is in flight (held 4 s)
      await eventually(async () => target.requests.filter((r) => seqOf(r) === 1).length === 2, { timeoutMs: 20_000 });
      // the run's prepare, retried now
      await h.start(e1);
      await h.client.workflow.getHandle(e1).result();
      await finishedEvents(h, [e0, e1], 30_000);
      const ones = target.requests.filter((r) => seqOf(r) === 1).sort((a, b) => a.startedAt - b.startedAt);
      for (let i = 1; i < ones.length; i++) expect(ones[i]!.startedAt).toBeGreaterThanOrEqual(ones[i - 1]!.finishedAt ?? Infinity);
      expect(ones).toHaveLength(2);
    } finally {
      await h.close();
    }
  });
});

// a continuation started before its delivery's turn (a wake-up from the waker, a
// skip, a consumer of the release before) checks its turn, must wait, and records itself as the
// waiter, with 'accepts': its id is the continuation id. The key's chain then claims the delivery
// and ends it, and release(ended) takes the row for one no run waits for (waiter = continuation
// id): it must still signal the continuation (ordering_detached says whether a run waits).
describe('a continuation waiting for its turn when the chain ends its delivery', () => {
  it('the continuation ends once the handoff ended its delivery', async ({ h, receiver }) => {
    const source = uniqueSource('contwait');
    const target = await receiver((_n, req) => ({ status: 200, delayMs: seqOf(req) === 0 ? 3_000 : 0 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered() });
    const ids = await sendKey(h, source, 2);
    const d0 = await eventually(async () => (await deliveryOf(h.repos, ids[0]!, endpointId).catch(() => undefined))?.id);
    await eventually(async () => (await deliveryOf(h.repos, ids[1]!, endpointId).catch(() => undefined))?.ordering?.waitingBehind === d0);
    const d1 = (await deliveryOf(h.repos, ids[1]!, endpointId)).id;
    const continuation = continuationWorkflowId(ids[1]!, d1);
    // an early wake-up (as the waker sends one for a delivery that waited 10 s behind an event not
    // prepared yet): the continuation starts, its turn has not come, it waits
    await signalTurn(h.client, { workflowId: continuation, deliveryId: d1 }, { timeoutMs: 5_000, taskQueue: h.taskQueue });
    await eventually(async () => {
      const row = await h.database.db('webhook_delivery').where({ id: d1 }).first('ordering_waiter', 'ordering_handoff');
      return row?.ordering_waiter === continuation && row.ordering_handoff === 'accepts';
    });
    // d0's request may not have reached the receiver yet (its run's first attempt on a loaded machine)
    await eventually(async () => target.requests.length > 0, { what: "d0's request at the receiver" });
    expect(target.requests.map(seqOf)).toEqual([0]);
    // d0 ends: the chain claims d1, sends it, ends it, finishes its event
    await eventually(async () => (await h.repos.events.get(ids[1]!))?.status === 'COMPLETED', { timeoutMs: 20_000 });
    expect(target.requests.map(seqOf)).toEqual([0, 1]);
    const run = h.client.workflow.getHandle(continuation).result();
    const ended = await Promise.race([run.then(() => 'ended'), new Promise((r) => setTimeout(() => r('still running'), 15_000))]);
    expect(ended).toBe('ended');
  });
});
