import { describe, expect } from 'vitest';
import { eventually } from '../support/wait.js';
import { addEndpoint, deliveryOf, finishedEvents, orderingWakerOf, uniqueSource, type FanoutHarness } from './support/harness.js';
import { continuationOf, oneAtATime, ordered, sendKey, seqOf } from './support/ordered-key.js';
import { it } from './support/fixtures.js';

// What a release that did not happen leaves on an ordered key (docs/ordering.md, "The handoff" and
// the waker), issue 41's noticed gaps: the chain's release of a handed-off delivery cut by a
// Postgres failure (H4). Real Postgres, Temporal and receivers; each test failed before its fix.

/** The deliveries of `ids` once each after the first waits behind the one before (left to the key's chain). */
async function waitingLine(h: FanoutHarness, ids: string[], endpointId: string): Promise<string[]> {
  const ds: string[] = [];
  for (const id of ids) ds.push(await eventually(async () => (await deliveryOf(h.repos, id, endpointId)).id, { what: 'prepared' }));
  for (let i = 1; i < ds.length; i++) {
    await eventually(async () => (await deliveryOf(h.repos, ids[i]!, endpointId)).ordering?.waitingBehind === ds[i - 1], {
      what: `delivery ${i} waiting behind ${i - 1}`,
    });
  }
  return ds;
}

describe("the chain's release of a handed-off delivery fails (H4: its connection terminated)", () => {
  it('GUARANTEE: the retried release ends that delivery and the key goes on within seconds, not after its lease and the waker', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource('relcut');
    let answerFirst: () => void = () => undefined;
    const firstAnswered = new Promise<void>((resolve) => (answerFirst = resolve));
    // the first request held until the test has taken its lock; the rest answered at once
    const target = await receiver(async (_n, req) => {
      if (seqOf(req) === 0) await firstAnswered;
      return { status: 200 };
    });
    // a 10 s timeout: the lease of a claim is 20 s, what the key waited before
    const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), timeoutSeconds: 10 });
    const ids = await sendKey(h, source, 3);
    const [, d1, d2] = await waitingLine(h, ids, endpointId);
    const db = h.database.db;
    const waker = orderingWakerOf(h);
    waker.start();
    try {
      // d0's release claims d1 and sends it; d1's release(ended) then locks d2 as the next of the
      // key, and waits for this transaction's lock on it: its backend is terminated there (a
      // Postgres blip in the middle of the chain), and the release is retried by its activity
      let cutAt = 0;
      await db.transaction(async (trx) => {
        const me = ((await trx.raw('SELECT pg_backend_pid() AS pid')) as { rows: Array<{ pid: number }> }).rows[0]!.pid;
        await trx('webhook_delivery').where({ id: d2 }).forUpdate().first('id');
        answerFirst();
        const blocked = await eventually(
          async () => {
            const res = (await db.raw('SELECT pid FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [me])) as {
              rows: Array<{ pid: number }>;
            };
            return res.rows.length > 0 && res.rows.map((r) => r.pid);
          },
          { timeoutMs: 20_000, intervalMs: 20, what: "d1's release waiting on d2's lock" },
        );
        expect(blocked).toHaveLength(1);
        expect(target.requests.map(seqOf)).toEqual([0, 1]);
        await db.raw('SELECT pg_terminate_backend(?)', [blocked[0]!]);
        cutAt = Date.now();
      });
      await eventually(async () => (await h.repos.deliveries.get(d2!))?.status === 'SUCCESS', {
        timeoutMs: 40_000,
        intervalMs: 100,
        what: 'the next delivery of the key delivered',
      });
      const second = target.requests.find((r) => seqOf(r) === 2)!;
      // the local activity's retry (1 s) releases d1 in turn and claims d2: no lease, no waker
      expect(second.startedAt - cutAt).toBeLessThan(5_000);
      expect(target.requests.map(seqOf)).toEqual([0, 1, 2]);
      oneAtATime(target.requests);
      expect(await finishedEvents(h, ids, 10_000)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
      // d1 was ended by the retried release itself: no continuation was needed for it
      expect(await continuationOf(h, ids[1]!, d1!)).toBeUndefined();
      expect(await db('webhook_delivery').where({ id: d1 }).first('ordering_handoff', 'ordering_waiter')).toEqual({
        ordering_handoff: null,
        ordering_waiter: null,
      });
    } finally {
      await waker.stop();
    }
  });
});
