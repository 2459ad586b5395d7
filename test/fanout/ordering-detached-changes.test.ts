import { describe, expect } from 'vitest';
import { startReplay } from '../../src/temporal/replay-starter.js';
import { signalTurn } from '../../src/temporal/signal-turn.js';
import { continuationWorkflowId } from '../../src/domain/ordering.js';
import type { RecordedRequest } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { addEndpoint, finishedEvents, orderingWakerOf, uniqueSource, whileRedriving, type FanoutHarness } from './support/harness.js';
import { lostMidChain, ordered, sendKey, seqOf, waitingLine } from './support/ordered-key.js';
import { it } from './support/fixtures.js';
import { createReplayQueries } from '../../src/db/replay-queries.js';

// Deliveries left to their key's chain (docs/ordering.md) while the endpoint changes under them:
// auto-disable and the redrive on enable, a timeout over the handoff's 15 s, revocation, ordering
// removed, an operator's skip; and a replay of the blocking delivery refused while the handoff that
// failed it has not released it yet (issue 41's review, R3-1: reopened under the claim, the key
// stalled for good with the replay's run left open).

/** The deliveries after the first waiting left to the chain, in a line (each behind the one before). */
async function detachedLine(h: FanoutHarness, ids: string[], endpointId: string): Promise<string[]> {
  const ds = await waitingLine(h, ids, endpointId);
  for (let i = 1; i < ds.length; i++) {
    const row = await h.database.db('webhook_delivery').where({ id: ds[i] }).first('ordering_waiter', 'ordering_detached');
    expect(row).toEqual({ ordering_waiter: continuationWorkflowId(ids[i]!, ds[i]!), ordering_detached: true });
  }
  return ds;
}

/** No run of these events (their own, their continuations) is left Running. */
async function noRunLeftOpen(h: FanoutHarness, ids: string[], ds: string[]): Promise<void> {
  const runs = [...ids, ...ids.map((id, i) => continuationWorkflowId(id, ds[i]!))];
  await eventually(
    async () => {
      for (const w of runs) {
        const status = await h.client.workflow
          .getHandle(w)
          .describe()
          .then((d) => d.status.name)
          .catch(() => 'NOT_FOUND');
        if (status === 'RUNNING') return false;
      }
      return true;
    },
    { timeoutMs: 15_000, intervalMs: 300, what: 'every run of the key closed' },
  );
}

/** The most requests in flight at once (each from its start to its answer). */
function maxInFlight(reqs: RecordedRequest[]): number {
  let max = 0;
  for (const r of reqs) {
    const open = reqs.filter((o) => o.startedAt <= r.startedAt && (o.finishedAt ?? Infinity) > r.startedAt).length;
    max = Math.max(max, open);
  }
  return max;
}

describe('deliveries left to their key chain while their endpoint changes', () => {
  it('auto-disable then re-enable: a detached delivery held by the chain is redriven and the key resumes in order', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('r3dis');
    const target = await receiver((_n, req) => (seqOf(req) === 0 && _n === 0 ? { status: 500, delayMs: 1500 } : { status: 200 }));
    const endpointId = await addEndpoint(h.repos, {
      source,
      url: target.url,
      ordering: ordered('Skip'),
      maxAttempts: 1,
      autoDisableAfter: 1,
    });
    const ids = await sendKey(h, source, 3);
    const ds = await detachedLine(h, ids, endpointId);
    // d0 fails and disables the endpoint; Skip moves on: d1 meets the disabled endpoint, is held, holds the key
    await eventually(async () => (await h.repos.deliveries.get(ds[1]!))?.status === 'FAILED', {
      timeoutMs: 20_000,
      what: 'd1 held',
    });
    expect(target.requests.map(seqOf)).toEqual([0]);
    expect((await h.repos.deliveries.get(ds[2]!))?.status).toBe('PENDING');
    // re-enable: the redrive sends d1, then d2 follows
    await h.database.db('webhook_endpoint').where({ id: endpointId }).update({ disabled_at: null, consecutive_failures: 0 });
    await whileRedriving(h, async () => {
      await eventually(async () => (await h.repos.deliveries.get(ds[2]!))?.status === 'SUCCESS', {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: 'd2 delivered after the redrive',
      });
    });
    expect(target.requests.map(seqOf)).toEqual([0, 1, 2]);
    // d1's event was FAILED while d1 was held; the redrive's run finishes it again after its release
    // (and d2's chain in it): read once right after d2's SUCCESS, it could still say FAILED
    await eventually(async () => (await finishedEvents(h, ids, 10_000)).join() === 'FAILED,COMPLETED,COMPLETED', {
      timeoutMs: 10_000,
      intervalMs: 100,
      what: "d1's event finished again by the redrive's run",
    }).catch(() => undefined);
    expect(await finishedEvents(h, ids, 10_000)).toEqual(['FAILED', 'COMPLETED', 'COMPLETED']);
    await noRunLeftOpen(h, ids, ds);
  });

  it('a timeout raised over 15 s while deliveries are detached: each is woken (not handed off), in order, one at a time', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('r3tmo');
    const hold = 1200;
    const target = await receiver(() => ({ status: 200, delayMs: hold }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), timeoutSeconds: 5 });
    const ids = await sendKey(h, source, 3);
    const ds = await detachedLine(h, ids, endpointId);
    await h.database.db('webhook_endpoint').where({ id: endpointId }).update({ timeout_seconds: 20 });
    const since = Date.now();
    await eventually(async () => (await h.repos.deliveries.get(ds[2]!))?.status === 'SUCCESS', {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: 'the key delivered',
    });
    expect(Date.now() - since).toBeLessThan(30_000);
    expect(target.requests.map(seqOf)).toEqual([0, 1, 2]);
    expect(maxInFlight(target.requests)).toBe(1);
    expect(await finishedEvents(h, ids, 10_000)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
    await noRunLeftOpen(h, ids, ds);
  });

  it('revocation while detached deliveries wait behind a blocked key: they end FAILED without requests within 30 s', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('r3rev');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), maxAttempts: 1 });
    const ids = await sendKey(h, source, 3);
    const ds = await detachedLine(h, ids, endpointId);
    await finishedEvents(h, ids.slice(0, 1), 20_000);
    await h.database.db('webhook_endpoint').where({ id: endpointId }).update({ denied_reason: 'NotAllowedBySource' });
    const since = Date.now();
    const waker = orderingWakerOf(h);
    waker.start();
    try {
      await eventually(
        async () => (await Promise.all(ds.slice(1).map((d) => h.repos.deliveries.get(d)))).every((d) => d?.status === 'FAILED'),
        { timeoutMs: 30_000, intervalMs: 200, what: 'the waiting deliveries ended' },
      );
      expect(Date.now() - since).toBeLessThan(30_000);
    } finally {
      await waker.stop();
    }
    expect(target.requests.map(seqOf)).toEqual([0]);
    expect(await finishedEvents(h, ids, 10_000)).toEqual(['FAILED', 'FAILED', 'FAILED']);
    await noRunLeftOpen(h, ids, ds);
  });

  it('ordering removed while deliveries wait detached behind a blocked key: they are delivered within 30 s, no run left open', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('r3unord');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), maxAttempts: 1 });
    const ids = await sendKey(h, source, 3);
    const ds = await detachedLine(h, ids, endpointId);
    await finishedEvents(h, ids.slice(0, 1), 20_000);
    await h.database.db('webhook_endpoint').where({ id: endpointId }).update({ ordering_on_failure: null, ordering_key_cel: null });
    const since = Date.now();
    const waker = orderingWakerOf(h);
    waker.start();
    try {
      await eventually(
        async () => (await Promise.all(ds.slice(1).map((d) => h.repos.deliveries.get(d)))).every((d) => d?.status === 'SUCCESS'),
        { timeoutMs: 30_000, intervalMs: 200, what: 'the waiting deliveries delivered' },
      );
      expect(Date.now() - since).toBeLessThan(30_000);
    } finally {
      await waker.stop();
    }
    expect(target.requests.map(seqOf).sort()).toEqual([0, 1, 2]);
    expect(await finishedEvents(h, ids, 10_000)).toEqual(['FAILED', 'COMPLETED', 'COMPLETED']);
    await noRunLeftOpen(h, ids, ds);
  });

  it("an operator's skip of the blocking delivery: the detached ones go in order, one at a time, each event finished once", async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('r3skip');
    const hold = 600;
    const target = await receiver((_n, req) => (seqOf(req) === 0 ? { status: 422 } : { status: 200, delayMs: hold }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), maxAttempts: 1 });
    const ids = await sendKey(h, source, 4);
    const ds = await detachedLine(h, ids, endpointId);
    await finishedEvents(h, ids.slice(0, 1), 20_000);
    const skipped = await h.repos.ordering.skip(ds[0]!);
    if (skipped === 'not_skippable') throw new Error('not skippable');
    if (skipped.wake) await signalTurn(h.client, skipped.wake, { timeoutMs: 5_000, taskQueue: h.taskQueue });
    await eventually(async () => (await h.repos.deliveries.get(ds[3]!))?.status === 'SUCCESS', {
      timeoutMs: 30_000,
      intervalMs: 200,
      what: 'the key delivered after the skip',
    });
    expect(target.requests.map(seqOf)).toEqual([0, 1, 2, 3]);
    expect(maxInFlight(target.requests)).toBe(1);
    expect(await finishedEvents(h, ids, 10_000)).toEqual(['FAILED', 'COMPLETED', 'COMPLETED', 'COMPLETED']);
    await noRunLeftOpen(h, ids, ds);
  });

  it('a replay of the blocking delivery is refused while the handoff that failed it still claims it, and goes once the release ran', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('r3fix');
    const target = await receiver((_n, req) => ({ status: seqOf(req) === 0 ? 422 : 200 }));
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), maxAttempts: 1 });
    const ids = await sendKey(h, source, 3);
    const ds = await detachedLine(h, ids, endpointId);
    await finishedEvents(h, ids.slice(0, 1), 20_000);
    for (const id of ids.slice(1)) await h.client.workflow.getHandle(id).result();
    const db = h.database.db;
    await db('webhook_delivery').where({ id: ds[0] }).update({ ordering_skipped: true, ordering_blocked_at: null });
    await lostMidChain(db, ds[1]!, 'FAILED', "now() + interval '20 seconds'");
    expect(await h.repos.deliveries.reopenFailed(ds[1]!)).toBe(false);
    // the admin API's and the operator's reopen too
    expect(await createReplayQueries(db).reopenFailed(ds[1]!)).toBe(false);
    const released = await h.repos.ordering.release(ds[1]!, { ended: true });
    expect(released.holds).toBe(true);
    expect(released.finished?.event).toMatchObject({ status: 'FAILED' });
    expect(await h.repos.ordering.blockedKeysOf(endpointId)).toBe(1);
    expect(await h.repos.deliveries.reopenFailed(ds[1]!)).toBe(true);
    const replay = await startReplay(h.client, { eventId: ids[1]!, deliveryIds: [ds[1]!], taskQueue: h.taskQueue });
    await eventually(async () => (await h.repos.deliveries.get(ds[2]!))?.status === 'SUCCESS', {
      timeoutMs: 30_000,
      intervalMs: 300,
      what: 'the replayed delivery and the next one of the key delivered',
    });
    expect(target.requests.map(seqOf)).toEqual([0, 1, 2]);
    await h.client.workflow.getHandle(replay.workflowId).result();
    expect(await finishedEvents(h, ids, 10_000)).toEqual(['FAILED', 'COMPLETED', 'COMPLETED']);
    await noRunLeftOpen(h, ids, ds);
  });
});
