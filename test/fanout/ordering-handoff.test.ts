import { describe, expect } from 'vitest';
import { createReplayQueries } from '../../src/db/replay-queries.js';
import { startReplay } from '../../src/temporal/replay-starter.js';
import { signalTurn } from '../../src/temporal/signal-turn.js';
import { continuationWorkflowId } from '../../src/domain/ordering.js';
import { eventually } from '../support/wait.js';
import {
  addEndpoint,
  deliveryOf,
  finishedEvents,
  orderingWakerOf,
  startFanoutHarness,
  uniqueSource,
  whileRedriving,
  type FanoutHarness,
} from './support/harness.js';
import {
  HOLD_FIRST_MS,
  activitiesOf,
  attemptsOf,
  continuationOf,
  oneAtATime,
  ordered,
  sendKey,
  seqOf,
  seqsAt,
} from './support/ordered-key.js';
import { counterDelta, it } from './support/fixtures.js';

// The handoff of an ordered key (docs/ordering.md, "The handoff"): the activity that releases a
// key makes the attempt of the key's next delivery itself, through the deliver activity's code. A
// delivery that had to wait was left to its key's chain by its event's run ("A waiting delivery
// costs its run nothing"): that run ended after prepare, and a run of the delivery's own (its
// continuation, `<event>:turn:<delivery>`) is started only when the handoff did not end it (a
// retry, a limit, a wake-up from elsewhere). Real Postgres, Temporal, receivers. Which run
// delivered what is read from the histories: that is how these tests tell a handoff from a signal
// per hop.

/**
 * The events' statuses once each is final: their runs ended (a run that left its delivery to the
 * key's chain ends before it), then the last delivery's end finished the event, whoever ended it.
 */
const results = (h: FanoutHarness, ids: string[]): Promise<string[]> => finishedEvents(h, ids, 20_000);

/** Every activity that ran for a delivery: in its event's run, and in its continuation if it has one. */
async function activitiesFor(h: FanoutHarness, eventId: string, deliveryId: string): Promise<string[]> {
  const continuation = await continuationOf(h, eventId, deliveryId);
  return [...(await activitiesOf(h, eventId)), ...(continuation ? await activitiesOf(h, continuation) : [])];
}

/** No run delivered it (in its event's run or a continuation): it was handed off and ended by the releasing activity. */
const handedOffAndEnded = (activities: string[]): boolean => !activities.some((a) => a.startsWith('deliver'));
/** A delivery's activities, for handedOffAndEnded: the event's id and the endpoint's delivery. */
async function deliveryActivities(h: FanoutHarness, eventId: string, endpointId: string): Promise<string[]> {
  return activitiesFor(h, eventId, (await deliveryOf(h.repos, eventId, endpointId)).id);
}

describe('the handoff of an ordered key', () => {
  it('a chain: the releasing activity delivers each next one; one request each, in order, each run ends with its status', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('chain');
    const target = await receiver((_n, req) => ({ status: 200, delayMs: seqOf(req) === 0 ? HOLD_FIRST_MS : 0 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered() });
    const ended = await counterDelta(h.metrics.orderingHandoffs, { outcome: 'ended' });
    const ids = await sendKey(h, source, 12);
    expect(await results(h, ids)).toEqual(ids.map(() => 'COMPLETED'));
    expect(seqsAt(target.requests)).toEqual(ids.map((_, seq) => seq));
    oneAtATime(target.requests);
    for (const id of ids) {
      const d = await deliveryOf(h.repos, id, endpointId);
      expect(d.status).toBe('SUCCESS');
      expect(await attemptsOf(h, d.id)).toEqual([expect.objectContaining({ outcome: 'SUCCESS', response_status: 200 })]);
    }
    // every run after the first waited behind the held request, left its delivery to the key's
    // chain and ended after prepare; the handoff ended each, and no run of its own was started
    const handed = await Promise.all(ids.slice(1).map(async (id) => handedOffAndEnded(await deliveryActivities(h, id, endpointId))));
    expect(handed.filter(Boolean).length).toBeGreaterThanOrEqual(ids.length - 2);
    expect(await ended()).toBe(handed.filter(Boolean).length);
    const continuations = await Promise.all(
      ids.slice(1).map(async (id) => continuationOf(h, id, (await deliveryOf(h.repos, id, endpointId)).id)),
    );
    expect(continuations.filter(Boolean).length).toBe(ids.length - 1 - handed.filter(Boolean).length);
    for (const id of ids.slice(1)) {
      if (!handedOffAndEnded(await deliveryActivities(h, id, endpointId))) continue;
      expect(await activitiesOf(h, id)).toEqual(['prepare']);
    }
    // the handoff's columns are cleared by the release that ended each
    const left = await h.database
      .db('webhook_delivery')
      .where({ endpoint_id: endpointId })
      .whereNotNull('ordering_handoff')
      .count('* as n');
    expect(Number(left[0]?.n)).toBe(0);
  });

  it("a handed-off attempt answered 500: the run's own retries deliver it after the backoff's delay, in order", async ({ receiver }) => {
    // a backoff long enough to tell a retry that waited from one that did not
    const h = await startFanoutHarness({ backoff: { initialIntervalMs: 1_000, backoffCoefficient: 2, maximumIntervalMs: 4_000 } });
    try {
      const source = uniqueSource('retry');
      let failedOnce = false;
      const target = await receiver((_n, req) => {
        const seq = seqOf(req);
        if (seq === 1 && !failedOnce) {
          failedOnce = true;
          return { status: 500, delayMs: 0 };
        }
        return { status: 200, delayMs: seq === 0 ? HOLD_FIRST_MS : 0 };
      });
      const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), maxAttempts: 5 });
      const handedRetries = await counterDelta(h.metrics.orderingHandoffs, { outcome: 'retry' });
      const ids = await sendKey(h, source, 4);
      expect(await results(h, ids)).toEqual(ids.map(() => 'COMPLETED'));
      expect(seqsAt(target.requests)).toEqual([0, 1, 1, 2, 3]);
      oneAtATime(target.requests);
      const [, failed, retried] = target.requests;
      expect(retried!.startedAt - failed!.finishedAt!).toBeGreaterThanOrEqual(1_000);
      const d1 = await deliveryOf(h.repos, ids[1]!, endpointId);
      expect(await attemptsOf(h, d1.id)).toEqual([
        expect.objectContaining({ outcome: 'RETRYING', response_status: 500 }),
        expect.objectContaining({ outcome: 'SUCCESS', response_status: 200 }),
      ]);
      // its first attempt was the handoff's (no local first attempt in any run); its retry by a
      // run of its own, started for it (its event's run had ended after prepare)
      expect(await activitiesOf(h, ids[1]!)).toEqual(['prepare']);
      const continuation = await continuationOf(h, ids[1]!, d1.id);
      expect(continuation).toBeDefined();
      const run1 = await activitiesOf(h, continuation!);
      expect(run1).not.toContain('deliver');
      expect(run1).toContain('deliver (activity task)');
      expect(await handedRetries()).toBe(1);
    } finally {
      await h.close();
    }
  });

  it('a 4xx under Block holds the key; a skip, then a replay of a later block, unblock it, the rest handed off in order', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('block');
    const refused = new Set([1, 3]);
    const target = await receiver((_n, req) => {
      const seq = seqOf(req);
      if (refused.has(seq)) {
        refused.delete(seq);
        return { status: 422, delayMs: 0 };
      }
      return { status: 200, delayMs: seq === 0 ? HOLD_FIRST_MS : 0 };
    });
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), maxAttempts: 3 });
    const ids = await sendKey(h, source, 6);
    // 0 delivered, 1 handed off and refused: FAILED, it holds the key; its run ends without a request of its own
    await results(h, ids.slice(0, 2));
    const d1 = await deliveryOf(h.repos, ids[1]!, endpointId);
    expect(d1.status).toBe('FAILED');
    expect(handedOffAndEnded(await deliveryActivities(h, ids[1]!, endpointId))).toBe(true);
    await eventually(async () => (await deliveryOf(h.repos, ids[2]!, endpointId)).ordering?.waitingBehind === d1.id);
    await new Promise((r) => setTimeout(r, 500));
    expect(seqsAt(target.requests)).toEqual([0, 1]);

    // skip it (as the API does): the next ones go, 3 is refused and holds the key in turn
    const skipped = await h.repos.ordering.skip(d1.id);
    if (skipped === 'not_skippable' || !skipped.wake) throw new Error('not skipped');
    await signalTurn(h.client, skipped.wake, { timeoutMs: 5_000, taskQueue: h.taskQueue });
    await results(h, ids.slice(2, 4));
    const d3 = await deliveryOf(h.repos, ids[3]!, endpointId);
    expect(d3.status).toBe('FAILED');
    expect(seqsAt(target.requests)).toEqual([0, 1, 2, 3]);

    // replay it (as the API does): it goes first, then the rest, handed off
    const replays = createReplayQueries(h.database.db);
    expect(await replays.reopenFailed(d3.id)).toBe(true);
    const replay = await startReplay(h.client, { eventId: ids[3]!, deliveryIds: [d3.id], taskQueue: h.taskQueue });
    await h.client.workflow.getHandle(replay.workflowId).result();
    expect(await results(h, ids.slice(4))).toEqual(['COMPLETED', 'COMPLETED']);
    expect(seqsAt(target.requests)).toEqual([0, 1, 2, 3, 3, 4, 5]);
    oneAtATime(target.requests);
    expect(handedOffAndEnded(await deliveryActivities(h, ids[5]!, endpointId))).toBe(true);
  });

  it('Skip: a handed-off delivery that fails releases the key, and the chain goes on', async ({ h, receiver }) => {
    const source = uniqueSource('skip');
    const target = await receiver((_n, req) => ({
      status: seqOf(req) === 1 ? 422 : 200,
      delayMs: seqOf(req) === 0 ? HOLD_FIRST_MS : 0,
    }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered('Skip'), maxAttempts: 1 });
    const ids = await sendKey(h, source, 4);
    await results(h, ids);
    expect(seqsAt(target.requests)).toEqual([0, 1, 2, 3]);
    expect(await deliveryOf(h.repos, ids[1]!, endpointId)).toMatchObject({ status: 'FAILED', ordering: { skipped: true } });
    for (const id of ids.slice(1)) expect(handedOffAndEnded(await deliveryActivities(h, id, endpointId)), id).toBe(true);
  });

  it('revoked mid-chain: the handed-off deliveries end FAILED in turn without requests', async ({ h, receiver }) => {
    const source = uniqueSource('revoked');
    const target = await receiver((_n, req) => ({ status: 200, delayMs: seqOf(req) === 0 ? HOLD_FIRST_MS : 0 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered() });
    const ids = await sendKey(h, source, 4);
    await eventually(async () => (await deliveryOf(h.repos, ids[3]!, endpointId)).ordering?.waitingBehind != null);
    await eventually(async () => target.requests.length === 1);
    await h.database.db('webhook_endpoint').where({ id: endpointId }).update({ denied_reason: 'NotAllowedBySource' });
    await results(h, ids);
    expect(seqsAt(target.requests)).toEqual([0]);
    for (const id of ids.slice(1)) {
      const d = await deliveryOf(h.repos, id, endpointId);
      expect(d.status).toBe('FAILED');
      expect(d.lastError).toContain('not allowed');
      expect(handedOffAndEnded(await deliveryActivities(h, id, endpointId)), id).toBe(true);
    }
  });

  it('disabled mid-chain: the handed-off delivery is held and holds the key; enabling resumes in order', async ({ h, receiver }) => {
    const source = uniqueSource('disabled');
    const target = await receiver((_n, req) => ({ status: 200, delayMs: seqOf(req) === 0 ? HOLD_FIRST_MS : 0 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered() });
    const ids = await sendKey(h, source, 4);
    await eventually(async () => (await deliveryOf(h.repos, ids[3]!, endpointId)).ordering?.waitingBehind != null);
    await eventually(async () => target.requests.length === 1);
    await h.database.db('webhook_endpoint').where({ id: endpointId }).update({ disabled_at: h.database.db.fn.now() });
    await results(h, ids.slice(0, 2));
    expect(await deliveryOf(h.repos, ids[1]!, endpointId)).toMatchObject({ status: 'FAILED' });
    expect(handedOffAndEnded(await deliveryActivities(h, ids[1]!, endpointId))).toBe(true);
    expect((await deliveryOf(h.repos, ids[2]!, endpointId)).status).toBe('PENDING');
    expect(seqsAt(target.requests)).toEqual([0]);

    expect(await h.repos.endpoints.enable(endpointId)).toMatchObject({ wasDisabled: true, held: 1 });
    await whileRedriving(h, async () => {
      await results(h, ids.slice(2));
      await eventually(async () => target.requests.length === 4);
    });
    expect(seqsAt(target.requests)).toEqual([0, 1, 2, 3]);
    oneAtATime(target.requests);
  });

  it('a rate-limited endpoint: a handoff the limit would make wait goes back to its run; the rate and the order hold', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('rate');
    const target = await receiver((_n, req) => ({ status: 200, delayMs: seqOf(req) === 0 ? HOLD_FIRST_MS : 0 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), rateLimitPerSecond: 4 });
    const dropped = await counterDelta(h.metrics.orderingHandoffs, { outcome: 'dropped' });
    const ids = await sendKey(h, source, 8);
    expect(await results(h, ids)).toEqual(ids.map(() => 'COMPLETED'));
    expect(seqsAt(target.requests)).toEqual(ids.map((_, seq) => seq));
    oneAtATime(target.requests);
    for (const id of ids) expect(await attemptsOf(h, (await deliveryOf(h.repos, id, endpointId)).id)).toHaveLength(1);
    // 4 a second: 8 requests take at least 1.75 s from the first to the last (a burst of 1 allowed)
    const starts = target.requests.map((r) => r.startedAt).slice(1);
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(1_400);
    // some went by the handoff, some the limit gave back to their runs (they delivered themselves)
    const handed = await Promise.all(ids.slice(1).map(async (id) => handedOffAndEnded(await deliveryActivities(h, id, endpointId))));
    expect(handed.some(Boolean)).toBe(true);
    expect(handed.some((x) => !x)).toBe(true);
    expect(await dropped()).toBeGreaterThanOrEqual(1);
  });

  it('a run of its own started while its delivery waits (a wake-up from elsewhere): the handoff that ends the delivery tells it, and it completes', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('told');
    const target = await receiver((_n, req) => ({ status: 200, delayMs: seqOf(req) === 0 ? 2_000 : 0 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered() });
    const ids = await sendKey(h, source, 2);
    const d1 = await eventually(async () => {
      const d = await deliveryOf(h.repos, ids[1]!, endpointId);
      return d.ordering?.waitingBehind != null && d;
    });
    // a wake-up while the request before it is still out starts its continuation, which finds the
    // key held and waits for a signal
    const continuation = continuationWorkflowId(ids[1]!, d1.id);
    await signalTurn(h.client, { workflowId: continuation, deliveryId: d1.id }, { timeoutMs: 5_000, taskQueue: h.taskQueue });
    await eventually(async () => (await activitiesOf(h, continuation)).includes('orderingTurn'), {
      what: 'the continuation to check its turn',
    });
    expect(seqsAt(target.requests)).toEqual([0]);
    expect(await results(h, ids)).toEqual(['COMPLETED', 'COMPLETED']);
    // the releasing activity made its attempt, and told the continuation, which completed without one of its own
    const done = await Promise.race([
      h.client.workflow.getHandle(continuation).result(),
      new Promise((r) => setTimeout(() => r('still running after 10 s'), 10_000)),
    ]);
    expect(done).toBe('COMPLETED');
    expect(handedOffAndEnded(await activitiesOf(h, continuation))).toBe(true);
    expect(seqsAt(target.requests)).toEqual([0, 1]);
  });

  it('a claim left by a lost worker: not started while its lease lives, then a run of its own delivers it within 30 s (the waker)', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('lost');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200, delayMs: 0 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), maxAttempts: 1 });
    const ids = await sendKey(h, source, 2);
    await results(h, ids.slice(0, 1));
    const d0 = await deliveryOf(h.repos, ids[0]!, endpointId);
    const d1 = await deliveryOf(h.repos, ids[1]!, endpointId);
    await eventually(async () => (await deliveryOf(h.repos, ids[1]!, endpointId)).ordering?.waitingBehind === d0.id);
    // what a worker lost mid-handoff leaves: the key released, the next delivery claimed, nobody told
    const db = h.database.db;
    await db('webhook_delivery').where({ id: d0.id }).update({ ordering_skipped: true });
    await db('webhook_delivery')
      .where({ id: d1.id })
      .update({ ordering_handoff: 'claimed', ordering_handoff_until: db.raw("now() + interval '1 hour'") });
    // a live lease: neither a signal (its turn check) nor the waker starts it
    const waker = orderingWakerOf(h, 0);
    expect(await waker.pass()).toBe(0);
    // its event's run left it to the key's chain: its waiter is its continuation, which a wake-up starts
    const continuation = continuationWorkflowId(ids[1]!, d1.id);
    expect(await db('webhook_delivery').where({ id: d1.id }).first('ordering_waiter')).toEqual({ ordering_waiter: continuation });
    await signalTurn(h.client, { workflowId: continuation, deliveryId: d1.id }, { timeoutMs: 5_000, taskQueue: h.taskQueue });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(seqsAt(target.requests)).toEqual([0]);
    expect((await deliveryOf(h.repos, ids[1]!, endpointId)).status).toBe('PENDING');

    // the lease ran out (the attempt's timeout and the margin): the waker, as the consumer runs it, gives it back to its run
    await db('webhook_delivery')
      .where({ id: d1.id })
      .update({
        ordering_handoff_until: db.raw("now() - interval '1 second'"),
        ordering_waiting_since: db.raw("now() - interval '11 seconds'"),
      });
    const since = Date.now();
    const running = orderingWakerOf(h);
    running.start();
    try {
      await h.client.workflow.getHandle(continuation).result();
    } finally {
      await running.stop();
    }
    expect(Date.now() - since).toBeLessThan(30_000);
    expect(seqsAt(target.requests)).toEqual([0, 1]);
    expect((await deliveryOf(h.repos, ids[1]!, endpointId)).status).toBe('SUCCESS');
  });

  it("a lease that runs out while the handed-off request is in flight: the run's own copy goes, and the next one starts only after both ended", async ({
    h,
    receiver,
  }) => {
    // what a stall past the lease (a paused worker) leaves: the run sends the delivery again while the
    // handoff's request is still out (at-least-once, docs/ordering.md); the handoff's end must then
    // not release the key, or the next delivery goes while that copy is in flight (review H1)
    const source = uniqueSource('lease');
    const target = await receiver((_n, req) => ({ status: 200, delayMs: seqOf(req) === 0 ? HOLD_FIRST_MS : seqOf(req) === 1 ? 4_000 : 0 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered() });
    const ids = await sendKey(h, source, 3);
    await eventually(async () => target.requests.some((r) => seqOf(r) === 1));
    const d1 = await deliveryOf(h.repos, ids[1]!, endpointId);
    const db = h.database.db;
    expect(await db('webhook_delivery').where({ id: d1.id }).first('ordering_handoff')).toEqual({ ordering_handoff: 'claimed' });
    await db('webhook_delivery')
      .where({ id: d1.id })
      .update({
        ordering_handoff_until: db.raw("now() - interval '1 second'"),
        ordering_waiting_since: db.raw("now() - interval '11 seconds'"),
      });
    expect(await orderingWakerOf(h, 0).pass()).toBeGreaterThan(0);
    await results(h, ids);
    const seen = [...target.requests].sort((a, b) => a.startedAt - b.startedAt);
    const ones = seen.filter((r) => seqOf(r) === 1);
    expect(ones.length).toBe(2);
    const two = seen.find((r) => seqOf(r) === 2);
    for (const one of ones) expect(two!.startedAt).toBeGreaterThanOrEqual(one.finishedAt ?? Infinity);
    expect(seqsAt(seen)).toEqual([0, 1, 1, 2]);
  });
});
