import { describe, expect } from 'vitest';
import { startReplay } from '../../src/temporal/replay-starter.js';
import { signalTurn } from '../../src/temporal/signal-turn.js';
import { continuationWorkflowId } from '../../src/domain/ordering.js';
import { eventually } from '../support/wait.js';
import {
  addEndpoint,
  addEvent,
  finishedEvents,
  orderingWakerOf,
  startFanoutHarness,
  uniqueSource,
  type FanoutHarness,
} from './support/harness.js';
import {
  continuationOf,
  deliveredOnce,
  heldKeyLine,
  keyOf,
  lostMidChain,
  oneAtATime,
  ordered,
  sendKey,
  seqOf,
  seqsAt,
  updateToCut,
  waitingLine,
} from './support/ordered-key.js';
import { it } from './support/fixtures.js';

// What a release that did not happen leaves on an ordered key (docs/ordering.md, "The handoff" and
// the waker), issue 41's noticed gaps: the chain's release of a handed-off delivery cut by a
// Postgres failure (H4), and a run waiting for a delivery terminated by hand. Real Postgres,
// Temporal and receivers; each test failed before its fix.

describe("the chain's release of a handed-off delivery fails (H4: its connection terminated)", () => {
  // hop 1: the chain's first handed-off delivery's release is cut; hop 2: the one after (the
  // retried activity releases its own delivery, the chain's first, and must find the stranded one
  // further down: review4's reproduction)
  it.for([1, 2])(
    'GUARANTEE: at hop %i, the retried release ends that delivery and the key goes on within seconds, not after its lease and the waker',
    async (hop, { h, receiver }) => {
      // the first request held until the test has taken its lock; the rest answered at once
      const { target, ids, ds, cut } = await heldKeyLine(h, receiver, `relcut${hop}`, hop + 2);
      const stranded = ds[hop]!;
      const next = ds[hop + 1]!;
      const db = h.database.db;
      const waker = orderingWakerOf(h);
      waker.start();
      try {
        // d0's release claims d1 and sends it (and so on down the chain); the stranded delivery's
        // release(ended) then locks the next one of the key, and waits for this transaction's lock on
        // it: its backend is terminated there (a Postgres blip in the middle of the chain), and the
        // release is retried by its activity
        const cutAt = await cut(
          async (trx) => {
            await trx('webhook_delivery').where({ id: next }).forUpdate().first('id');
          },
          hop,
          "the stranded delivery's release waiting on the next one's lock",
        );
        await deliveredOnce(h, next, 'the next delivery of the key delivered');
        const after = target.requests.find((r) => seqOf(r) === hop + 1)!;
        // the local activity's retry (1 s) ends the stranded delivery in turn and claims the next: no lease, no waker
        expect(after.startedAt - cutAt).toBeLessThan(5_000);
        expect(target.requests.map(seqOf)).toEqual(Array.from({ length: hop + 2 }, (_, i) => i));
        oneAtATime(target.requests);
        expect(await finishedEvents(h, ids, 10_000)).toEqual(ids.map(() => 'COMPLETED'));
        // ended by the retried release itself: no continuation was needed for it
        expect(await continuationOf(h, ids[hop]!, stranded)).toBeUndefined();
        expect(await db('webhook_delivery').where({ id: stranded }).first('ordering_handoff', 'ordering_waiter')).toEqual({
          ordering_handoff: null,
          ordering_waiter: null,
        });
      } finally {
        await waker.stop();
      }
    },
  );
});

describe("the chain's release of the last delivery of its key fails (its connection terminated)", () => {
  // nothing after it holds the key, so nothing leads the retried release to it: before, its event
  // stayed RECEIVED until the claim's lease ran out (25 s at a 15 s timeout) and the waker's
  // continuation finished it
  it.for([1, 2])(
    'at hop %i, the retried release ends it and finishes its event within seconds, not after its lease and the waker',
    async (hop, { h, receiver }) => {
      const { ids, ds, endpointId, target, cut } = await heldKeyLine(h, receiver, `lastcut${hop}`, hop + 1);
      const last = ds[hop]!;
      const db = h.database.db;
      // the release(ended) of the last one: its claim given up, its attempt recorded SUCCESS
      const release = await updateToCut(
        h,
        `last_${hop}`,
        endpointId,
        `OLD.id = '${last}'::uuid AND OLD.ordering_handoff = 'claimed' AND OLD.status = 'SUCCESS' AND NEW.ordering_handoff IS DISTINCT FROM 'claimed'`,
        41_003,
      );
      const waker = orderingWakerOf(h);
      waker.start();
      try {
        const cutAt = await cut(release.hold, hop, "the last delivery's release waiting on the test's lock");
        await release.drop();
        await eventually(async () => (await h.repos.events.get(ids[hop]!))?.status === 'COMPLETED', {
          timeoutMs: 40_000,
          intervalMs: 100,
          what: "the last delivery's event finished",
        });
        // the local activity's retry (1 s) ends it as the cut release would have: no lease, no waker
        expect(Date.now() - cutAt).toBeLessThan(5_000);
        expect(await finishedEvents(h, ids, 10_000)).toEqual(ids.map(() => 'COMPLETED'));
        expect(target.requests.map(seqOf)).toEqual(Array.from({ length: hop + 1 }, (_, i) => i));
        expect(await continuationOf(h, ids[hop]!, last)).toBeUndefined();
        expect(await db('webhook_delivery').where({ id: last }).first('ordering_handoff', 'ordering_waiter')).toEqual({
          ordering_handoff: null,
          ordering_waiter: null,
        });
      } finally {
        await release.drop();
        await waker.stop();
      }
    },
  );
});

describe("the chain's handoffEnd of a failed handed-off attempt fails (its connection terminated)", () => {
  // the attempt failed (a 500) and was recorded; the 'retry' for its run's turn check is the
  // statement cut. A trigger of the test's own (only on this endpoint's rows, only that change)
  // makes it wait on an advisory lock the test holds, and the test terminates its backend there.
  it.for([1, 2])(
    'GUARANTEE: at hop %i, the retried release leaves the failed delivery to its run, which retries it within seconds, not after its lease and the waker',
    async (hop, { h, receiver }) => {
      let failedOnce = false;
      // the first request held until the line is in place; the handed-off one at `hop` fails once
      const { target, ids, ds, endpointId, cut } = await heldKeyLine(h, receiver, `retrycut${hop}`, hop + 2, (req) => {
        if (seqOf(req) === hop && !failedOnce) {
          failedOnce = true;
          return { status: 500 };
        }
        return { status: 200 };
      });
      const failed = ds[hop]!;
      const db = h.database.db;
      const handoffEnd = await updateToCut(
        h,
        `handoff_end_${hop}`,
        endpointId,
        "OLD.ordering_handoff = 'claimed' AND NEW.ordering_handoff = 'retry'",
        41_002,
      );
      const waker = orderingWakerOf(h);
      waker.start();
      try {
        const cutAt = await cut(handoffEnd.hold, hop, "the failed delivery's handoffEnd waiting on the test's lock");
        await handoffEnd.drop();
        await deliveredOnce(h, failed, 'the failed delivery retried and delivered');
        const retried = target.requests.filter((r) => seqOf(r) === hop)[1]!;
        // the local activity's retry (1 s) writes the 'retry' and signals its run: no lease, no waker
        expect(retried.startedAt - cutAt).toBeLessThan(5_000);
        await finishedEvents(h, ids, 20_000);
        const seqs = Array.from({ length: hop + 2 }, (_, i) => i);
        expect(target.requests.map(seqOf)).toEqual([...seqs.slice(0, hop + 1), hop, hop + 1]);
        oneAtATime(target.requests);
        expect(await finishedEvents(h, ids, 10_000)).toEqual(ids.map(() => 'COMPLETED'));
        // two attempts, the row counting both (the failed one and its retry)
        expect(await db('webhook_delivery').where({ id: failed }).first('attempts', 'ordering_handoff')).toEqual({
          attempts: 2,
          ordering_handoff: null,
        });
      } finally {
        await handoffEnd.drop();
        await waker.stop();
      }
    },
  );
});

describe("the chain's handoffEnd of a handed-off attempt answered with Retry-After fails", () => {
  // the retry's time (Retry-After as a floor on the backoff's delay) was known only to the chain's
  // 'retry'; the retried release wrote the backoff's first delay instead, and the run retried
  // sooner than the receiver asked. Its own harness: the file's caps a delay at 500 ms.
  it('GUARANTEE: the run retries it no sooner than the receiver asked', async ({ receiver }) => {
    const h = await startFanoutHarness({ backoff: { initialIntervalMs: 50, backoffCoefficient: 2, maximumIntervalMs: 20_000 } });
    try {
      let failedOnce = false;
      const { target, ids, ds, endpointId, cut } = await heldKeyLine(h, receiver, 'floorcut', 3, (req) => {
        if (seqOf(req) === 1 && !failedOnce) {
          failedOnce = true;
          return { status: 500, headers: { 'retry-after': '5' } };
        }
        return { status: 200 };
      });
      const failed = ds[1]!;
      const handoffEnd = await updateToCut(
        h,
        'handoff_end_floor',
        endpointId,
        "OLD.ordering_handoff = 'claimed' AND NEW.ordering_handoff = 'retry'",
        41_004,
      );
      const waker = orderingWakerOf(h);
      waker.start();
      try {
        await cut(handoffEnd.hold, 1, "the failed delivery's handoffEnd waiting on the test's lock");
        await handoffEnd.drop();
        await deliveredOnce(h, failed, 'the failed delivery retried and delivered');
        const [answered, retried] = target.requests.filter((r) => seqOf(r) === 1);
        // Retry-After: 5 from the 500's answer (the backoff's first delay is 50 ms)
        expect(retried!.startedAt - answered!.finishedAt!).toBeGreaterThanOrEqual(4_900);
        expect(retried!.startedAt - answered!.finishedAt!).toBeLessThan(15_000);
        expect(await finishedEvents(h, ids, 20_000)).toEqual(ids.map(() => 'COMPLETED'));
        expect(target.requests.map(seqOf)).toEqual([0, 1, 1, 2]);
        oneAtATime(target.requests);
      } finally {
        await handoffEnd.drop();
        await waker.stop();
      }
    } finally {
      await h.close();
    }
  });
});

describe("the chain's handoffEnd('dropped') of a handed-off attempt that made no request fails", () => {
  // the claim, its attempt deferred by the endpoint's Retry-After pause before any request, and the
  // statement that gives the delivery back to its run cut: a claimed row with no attempt could be a
  // request in flight, so the key waited for the lease (25 s) and the waker. The claim is marked
  // renewed right before a request (migration 093): never renewed, no request was made.
  it('the retried release gives the delivery back to its run within seconds, which sends it once the pause ends', async ({ receiver }) => {
    const h = await startFanoutHarness({ backoff: { initialIntervalMs: 50, backoffCoefficient: 2, maximumIntervalMs: 20_000 } });
    try {
      const { source, target, ids, ds, endpointId, cut } = await heldKeyLine(h, receiver, 'dropcut', 2, (req) =>
        keyOf(req) === 'x' && target.requests.filter((r) => keyOf(r) === 'x').length === 1
          ? { status: 503, headers: { 'retry-after': '8' } }
          : { status: 200 },
      );
      const d1 = ds[1]!;
      // an event of another key answered 503 with Retry-After: 8 pauses the endpoint
      const other = await addEvent(h.repos, { source, payload: JSON.stringify({ key: 'x', seq: 100 }) });
      await h.start(other);
      await eventually(async () => target.requests.some((r) => keyOf(r) === 'x' && r.finishedAt !== undefined), {
        what: 'the pause asked',
      });
      const dropped = await updateToCut(
        h,
        'handoff_dropped',
        endpointId,
        "OLD.ordering_handoff = 'claimed' AND NEW.ordering_handoff IS NULL AND OLD.attempts = 0",
        41_005,
      );
      const waker = orderingWakerOf(h);
      waker.start();
      try {
        const cutAt = await cut(dropped.hold, 0, "the deferred delivery's handoffEnd waiting on the test's lock");
        await dropped.drop();
        // given back to its run by the local activity's retry (1 s), not after the claim's lease
        await eventually(
          async () => (await h.database.db('webhook_delivery').where({ id: d1 }).first('ordering_handoff'))?.ordering_handoff !== 'claimed',
          {
            timeoutMs: 40_000,
            intervalMs: 100,
            what: 'the claim given back',
          },
        );
        expect(Date.now() - cutAt).toBeLessThan(5_000);
        await deliveredOnce(h, d1, 'the deferred delivery sent once the pause ended');
        expect(await finishedEvents(h, [...ids, other], 30_000)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
        expect(seqsAt(target.requests.filter((r) => keyOf(r) === 'k'))).toEqual([0, 1]);
        oneAtATime(target.requests.filter((r) => keyOf(r) === 'k'));
      } finally {
        await dropped.drop();
        await waker.stop();
      }
    } finally {
      await h.close();
    }
  });
});

describe('a run waiting for an ordered delivery, terminated by hand', () => {
  /**
   * Three events of one key, the first refused (422, Block, maxAttempts 1): it blocks the key, the
   * two after it wait, left to the key's chain. Then a run of its own waits for d1, as a replay's
   * run or a run waiting on a timer does (its id, not a continuation's, is d1's waiter), and is
   * terminated by hand (the client's terminate, as `temporal workflow terminate`).
   */
  async function terminatedWaiter(
    h: FanoutHarness,
    url: string,
    source: string,
    onFailure: 'Block' | 'Skip',
  ): Promise<{ ids: string[]; ds: string[]; endpointId: string; waiter: string }> {
    const endpointId = await addEndpoint(h.repos, { source, url, ordering: ordered(onFailure), maxAttempts: 1 });
    const ids = await sendKey(h, source, 3);
    const ds = await waitingLine(h, ids, endpointId);
    const { workflowId: waiter } = await startReplay(h.client, { eventId: ids[1]!, deliveryIds: [ds[1]!], taskQueue: h.taskQueue });
    await eventually(async () => {
      const row = await h.database.db('webhook_delivery').where({ id: ds[1] }).first('ordering_waiter', 'ordering_handoff');
      return row?.ordering_waiter === waiter && row.ordering_handoff === 'accepts';
    });
    await h.client.workflow.getHandle(waiter).terminate('terminated by hand (test)');
    return { ids, ds, endpointId, waiter };
  }

  it("while a handoff claims its delivery (the claim's worker lost): the waker clears the lapsed claim, and the delivery can be replayed again", async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('termclaim');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200 }));
    const { ids, ds, endpointId } = await terminatedWaiter(h, target.url, source, 'Block');
    await finishedEvents(h, ids.slice(0, 1), 20_000);
    const [d0, d1, d2] = ds as [string, string, string];
    // what a worker lost mid-chain leaves (a process can not be killed in this harness): d0 released
    // (an operator's skip), d1 claimed by the chain and its handed-off attempt recorded (422,
    // FAILED), its release never run, the claim's lease run out
    const db = h.database.db;
    await db('webhook_delivery').where({ id: d0 }).update({ ordering_skipped: true, ordering_blocked_at: null });
    await lostMidChain(db, d1, 'FAILED', "now() - interval '1 second'", {
      ordering_waiting_since: db.raw("now() - interval '11 seconds'"),
    });
    // a replay is refused while the claim is there (0a2a39e)
    expect(await h.repos.deliveries.reopenFailed(d1)).toBe(false);
    const waker = orderingWakerOf(h);
    waker.start();
    try {
      // the terminated run can not be told: the delivery's continuation applies the attempt's end
      // to the key (Block: blocked) and clears the claim
      await eventually(async () => (await db('webhook_delivery').where({ id: d1 }).first('ordering_handoff'))?.ordering_handoff === null, {
        timeoutMs: 25_000,
        intervalMs: 200,
        what: "the lapsed claim of the terminated run's delivery cleared",
      });
      await eventually(async () => (await h.repos.ordering.blockedKeysOf(endpointId)) === 1, { timeoutMs: 10_000, intervalMs: 200 });
      expect(await continuationOf(h, ids[1]!, d1)).toBe(continuationWorkflowId(ids[1]!, d1));
      // the way out of a blocked key works again: the replay sends d1, then the key goes on
      expect(await h.repos.deliveries.reopenFailed(d1)).toBe(true);
      const replay = await startReplay(h.client, { eventId: ids[1]!, deliveryIds: [d1], taskQueue: h.taskQueue });
      await deliveredOnce(h, d2, 'the replayed delivery and the next one of the key delivered', 30_000);
      await h.client.workflow.getHandle(replay.workflowId).result();
    } finally {
      await waker.stop();
    }
    expect(target.requests.map(seqOf)).toEqual([0, 1, 2]);
    oneAtATime(target.requests);
    expect(await finishedEvents(h, ids, 10_000)).toEqual(['FAILED', 'COMPLETED', 'COMPLETED']);
  });

  it('while its delivery waits behind a blocked one: once the key is skipped past, the waker has its continuation deliver it (in order, within 30 s)', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('termwait');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200 }));
    const { ids, ds } = await terminatedWaiter(h, target.url, source, 'Block');
    await finishedEvents(h, ids.slice(0, 1), 20_000);
    const [d0, d1, d2] = ds as [string, string, string];
    const waker = orderingWakerOf(h);
    waker.start();
    try {
      // the operator's skip wakes d1's waiter: the terminated run, which can not be told
      const skipped = await h.repos.ordering.skip(d0);
      if (skipped === 'not_skippable') throw new Error('not skippable');
      const since = Date.now();
      await expect(signalTurn(h.client, skipped.wake!, { timeoutMs: 5_000, taskQueue: h.taskQueue })).rejects.toThrow();
      await deliveredOnce(h, d2, 'the key delivered after the skip', 35_000);
      expect(Date.now() - since).toBeLessThan(30_000);
    } finally {
      await waker.stop();
    }
    expect((await h.repos.deliveries.get(d1))?.status).toBe('SUCCESS');
    expect(target.requests.map(seqOf)).toEqual([0, 1, 2]);
    oneAtATime(target.requests);
    expect(await finishedEvents(h, ids, 10_000)).toEqual(['FAILED', 'COMPLETED', 'COMPLETED']);
  });
});
