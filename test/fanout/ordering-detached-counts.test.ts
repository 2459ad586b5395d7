import type { Histogram } from 'prom-client';
import { describe, expect } from 'vitest';
import { continuationWorkflowId } from '../../src/domain/ordering.js';
import { signalTurn } from '../../src/temporal/signal-turn.js';
import { startReplay } from '../../src/temporal/replay-starter.js';
import { eventually } from '../support/wait.js';
import { addEndpoint, addEvent, deliveryOf, finishedEvents, uniqueSource } from './support/harness.js';
import { HOLD_FIRST_MS, attemptsOf, ordered, sendKey, seqOf } from './support/ordered-key.js';
import { counterDelta, it } from './support/fixtures.js';

// An ordered delivery left to its key's chain (docs/ordering.md, "A waiting delivery costs its run
// nothing"): its event is finished by whoever ends its last delivery, the event's run or the
// chain, and counted once; a continuation's attempts count from the row's first. Real Postgres,
// Temporal and receivers.

/** How many observations the end-to-end histogram gained since this call. */
async function observedDelta(histogram: Histogram): Promise<() => Promise<number>> {
  const count = async () =>
    (await histogram.get()).values.filter((v) => v.metricName?.endsWith('_count')).reduce((sum, v) => sum + v.value, 0);
  const before = await count();
  return async () => (await count()) - before;
}

describe('an event whose ordered delivery was left to its key chain', () => {
  it('with a plain endpoint retrying beside it: finished once, whichever ends last, and a late continuation changes nothing', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('mixed');
    const chain = await receiver((_n, req) => ({ status: 200, delayMs: seqOf(req) === 0 ? HOLD_FIRST_MS : 0 }));
    // the plain endpoint: events 1 and 2 answered 500 twice (their runs end after the chain), event 4
    // held 3 s (the chain has ended its ordered delivery first)
    const failures = new Map<number, number>();
    const plain = await receiver((_n, req) => {
      const seq = seqOf(req);
      const failed = failures.get(seq) ?? 0;
      if ((seq === 1 || seq === 2) && failed < 2) {
        failures.set(seq, failed + 1);
        return { status: 500 };
      }
      return { status: 200, delayMs: seq === 4 ? 3_000 : 0 };
    });
    const orderedId = await addEndpoint(h.repos, { source, url: chain.url, ordering: ordered(), maxAttempts: 5 });
    await addEndpoint(h.repos, { source, url: plain.url, maxAttempts: 5 });
    const finished = await counterDelta(h.metrics.eventsFinished);
    const completed = await counterDelta(h.metrics.eventsFinished, { status: 'COMPLETED' });
    const observed = await observedDelta(h.metrics.eventEndToEnd);
    const handedOff = await counterDelta(h.metrics.orderingHandoffs, { outcome: 'ended' });
    const ids = await sendKey(h, source, 6);
    expect(await finishedEvents(h, ids, 30_000)).toEqual(ids.map(() => 'COMPLETED'));
    expect(chain.requests.map(seqOf)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await finished()).toBe(ids.length);
    expect(await completed()).toBe(ids.length);
    expect(await observed()).toBe(ids.length);
    // the ordered deliveries behind the held first one were left to the chain, which ended them
    expect(await handedOff()).toBeGreaterThanOrEqual(3);

    // a continuation started late on a delivery the chain ended (ALLOW_DUPLICATE: signal-with-start
    // after the fact) sends nothing, counts nothing and leaves the event as it is
    const d3 = await deliveryOf(h.repos, ids[3]!, orderedId);
    const late = continuationWorkflowId(ids[3]!, d3.id);
    await signalTurn(h.client, { workflowId: late, deliveryId: d3.id }, { timeoutMs: 5_000, taskQueue: h.taskQueue });
    await h.client.workflow.getHandle(late).result();
    expect(chain.requests).toHaveLength(6);
    expect(await finished()).toBe(ids.length);
    expect(await observed()).toBe(ids.length);
    expect((await h.repos.events.get(ids[3]!))?.status).toBe('COMPLETED');
    expect(await attemptsOf(h, d3.id)).toHaveLength(1);
  });

  it("a handed-off attempt that failed, then its continuation's retries: exactly maxAttempts in the attempt log, the event counted once", async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('maxatt');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 1 ? 500 : 200, delayMs: seqOf(req) === 0 ? HOLD_FIRST_MS : 0 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), maxAttempts: 3 });
    const failed = await counterDelta(h.metrics.eventsFinished, { status: 'FAILED' });
    const ids = await sendKey(h, source, 3);
    expect(await finishedEvents(h, ids.slice(0, 2), 30_000)).toEqual(['COMPLETED', 'FAILED']);
    const d1 = await deliveryOf(h.repos, ids[1]!, endpointId);
    expect(d1).toMatchObject({ status: 'FAILED', attempts: 3 });
    expect(await attemptsOf(h, d1.id)).toEqual([
      expect.objectContaining({ outcome: 'RETRYING', response_status: 500 }),
      expect.objectContaining({ outcome: 'RETRYING', response_status: 500 }),
      expect.objectContaining({ outcome: 'FAILED', response_status: 500 }),
    ]);
    expect(target.requests.map(seqOf)).toEqual([0, 1, 1, 1]);
    // the first attempt was the handoff's, the retries its continuation's (its event's run had ended)
    const continuation = h.client.workflow.getHandle(continuationWorkflowId(ids[1]!, d1.id));
    expect((await continuation.describe()).status.name).toBe('COMPLETED');
    // Block: the one behind it waits, its event not finished
    expect((await deliveryOf(h.repos, ids[2]!, endpointId)).status).toBe('PENDING');
    expect((await h.repos.events.get(ids[2]!))?.status).toBe('RECEIVED');
    expect(await failed()).toBe(1);
    expect(await h.repos.ordering.blockedKeysOf(endpointId)).toBe(1);
  });
});

describe("a replay of one delivery while another delivery of its event is PENDING (left to its key's chain)", () => {
  it("leaves the event's status to the delivery still PENDING: not PARTIAL meanwhile, then finished and counted once", async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('replaypend');
    // the ordered endpoint: event 0 refused (Block): it holds the key, and event 1's delivery waits behind it
    const chain = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200 }));
    // the plain endpoint (event 1's type only): its first answer refused, the replay's accepted
    const plain = await receiver((n) => ({ status: n === 0 ? 422 : 200 }));
    const orderedId = await addEndpoint(h.repos, { source, url: chain.url, ordering: ordered(), maxAttempts: 1 });
    const plainId = await addEndpoint(h.repos, { source, url: plain.url, eventType: 'both', maxAttempts: 1 });
    const e0 = await addEvent(h.repos, { source, eventType: 'one', payload: JSON.stringify({ key: 'k', seq: 0 }) });
    const e1 = await addEvent(h.repos, { source, eventType: 'both', payload: JSON.stringify({ key: 'k', seq: 1 }) });
    await h.start(e0);
    expect(await finishedEvents(h, [e0], 20_000)).toEqual(['FAILED']);
    const finished = await counterDelta(h.metrics.eventsFinished);
    const partial = await counterDelta(h.metrics.eventsFinished, { status: 'PARTIAL' });
    await h.start(e1);
    // the event's run delivers the plain one (refused) and leaves the ordered one to the chain
    expect(await h.client.workflow.getHandle(e1).result()).toBe('RECEIVED');
    const failed = await deliveryOf(h.repos, e1, plainId);
    expect(failed.status).toBe('FAILED');
    const waiting = await deliveryOf(h.repos, e1, orderedId);
    expect(waiting.status).toBe('PENDING');

    // the replay of the plain delivery succeeds while the ordered one still waits behind event 0
    expect(await h.repos.deliveries.reopenFailed(failed.id)).toBe(true);
    const replay = await startReplay(h.client, { eventId: e1, deliveryIds: [failed.id], taskQueue: h.taskQueue });
    expect(await h.client.workflow.getHandle(replay.workflowId).result()).toBe('RECEIVED');
    expect((await h.repos.deliveries.get(failed.id))?.status).toBe('SUCCESS');
    expect((await h.repos.deliveries.get(waiting.id))?.status).toBe('PENDING');
    expect(await h.repos.events.get(e1)).toMatchObject({ status: 'RECEIVED', completedAt: null });
    expect(await finished()).toBe(0);

    // the key unblocked (an operator's skip): the chain's end of the ordered one finishes the event
    const d0 = (await deliveryOf(h.repos, e0, orderedId)).id;
    const skipped = await h.repos.ordering.skip(d0);
    if (skipped === 'not_skippable') throw new Error('not skippable');
    if (skipped.wake) await signalTurn(h.client, skipped.wake, { timeoutMs: 5_000, taskQueue: h.taskQueue });
    await eventually(async () => (await h.repos.events.get(e1))?.status === 'COMPLETED', {
      timeoutMs: 20_000,
      intervalMs: 200,
      what: 'the event finished once its ordered delivery ended',
    });
    expect(chain.requests.map(seqOf)).toEqual([0, 1]);
    expect(await finished()).toBe(1);
    expect(await partial()).toBe(0);
  });
});
