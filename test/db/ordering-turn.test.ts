import { describe, expect, it } from 'vitest';
import { createSequenceJudge } from '../../src/activities/sequence-judge.js';
import { createExpressionCache } from '../../src/content/expression-cache.js';
import type { ContentRouting, OrderingKeyOf } from '../../src/db/deliveries.js';
import { encodeOrderingKey } from '../../src/domain/ordering.js';
import { eventually } from '../support/wait.js';
import { fileDatabase } from '../support/db.js';
import { addEndpoint, addEvent, uniqueSource } from '../fanout/support/harness.js';

// An ordered delivery's turn check (src/db/ordering.ts) against an earlier event's prepare that
// commits while the check runs. The check reads two things: the delivery before it that holds
// the key, and whether an earlier event is not prepared yet. Read in two statements, a prepare
// committing between them is seen by neither read as what it is (no delivery yet by the first,
// prepared by the second) and the later delivery goes first: what the full suite's load showed
// (test/api/ordering.test.ts, the skip case: the second event was sent before the first). Here the
// window is held open: a lock on webhook_event stops the check where it first reads that table,
// the earlier event is prepared under the lock, and the check goes on once it commits.

describe('an ordered turn check while an earlier event is being prepared', () => {
  const t = fileDatabase();

  it('sees the earlier delivery, or its event not prepared: never neither', async () => {
    const { db } = t.database;
    const source = uniqueSource('ordered');
    const endpointId = await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: null, onFailure: 'Block' } });
    const first = await addEvent(t.repos, { source, payload: '{"seq":1}' });
    const second = await addEvent(t.repos, { source, payload: '{"seq":2}' });
    const rows = await t.repos.deliveries.prepareRun(second, 'run-2');
    const d2 = rows?.[0]?.delivery.id;
    expect(d2).toBeDefined();

    // before: the first event is not prepared, so the second waits for it (its prepare points the
    // second at its delivery, whose end signals it)
    expect(await t.repos.ordering.turn(d2!, 'run-2')).toEqual({ turn: 'wait', behind: null, wake: 'signal' });

    const prepare = await db.transaction();
    try {
      await prepare.raw('LOCK TABLE webhook_event IN ACCESS EXCLUSIVE MODE');
      const checking = t.repos.ordering.turn(d2!, 'run-2');
      // the check has read what it reads before webhook_event and waits for the lock
      await eventually(
        async () => {
          const r = await db.raw<{ rows: Array<{ n: number }> }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          return r.rows[0]!.n > 0;
        },
        { what: 'the turn check to wait for the lock on webhook_event' },
      );
      // the first event's prepare, as prepareRun writes it: the run on the event, its delivery in its place
      await prepare.raw(`UPDATE webhook_event SET workflow_id = 'run-1' WHERE id = ?`, [first]);
      const inserted = await prepare.raw<{ rows: Array<{ id: string }> }>(
        `INSERT INTO webhook_delivery (event_id, endpoint_id, ordering_position, ordering_key)
         SELECT id, ?, position, ? FROM webhook_event WHERE id = ? RETURNING id`,
        [endpointId, encodeOrderingKey(''), first],
      );
      await prepare.commit();
      const d1 = inserted.rows[0]!.id;
      // behind the first, which holds the key: its end signals this one
      expect(await checking).toEqual({ turn: 'wait', behind: d1, wake: 'signal' });
    } finally {
      if (!prepare.isCompleted()) await prepare.rollback();
    }
  });
});

// What holds an ordered delivery back while earlier events of its source are not prepared yet
// (events sent together race through the queue): only those its endpoint puts in its own sequence,
// judged by the endpoint's filter and key as prepare will judge them (activities/sequence-judge.ts).
// Before the judge every earlier event not prepared yet held it, on a timer of 250 ms doubling to
// 10 s, which with many keys was most of the cost of ordered delivery (docs/benchmarks.md).
describe('an ordered delivery behind earlier events not prepared yet', () => {
  const t = fileDatabase();
  const judge = createSequenceJudge({ expressions: createExpressionCache() });
  const keyOf: OrderingKeyOf = (event) => {
    const key = (JSON.parse(event.payload.toString('utf8')) as { key?: unknown }).key;
    return typeof key === 'string' ? key : null;
  };
  const acceptAll: ContentRouting = (_event, candidates) => candidates.map(() => ({ accepted: true, expectNext: true }));
  const prepare = async (eventId: string, run: string): Promise<string> => {
    const rows = await t.repos.deliveries.prepareRun(eventId, run, acceptAll, keyOf);
    const id = rows?.[0]?.delivery.id;
    if (!id) throw new Error(`no delivery for ${eventId}`);
    return id;
  };
  const behindOf = async (deliveryId: string): Promise<string | null> => {
    const row = await t.database
      .db('webhook_delivery')
      .where({ id: deliveryId })
      .first<{ ordering_behind: string | null }>('ordering_behind');
    return row?.ordering_behind ?? null;
  };

  it('waits for one of its own key, is pointed at its delivery when it is prepared, and is woken once by its end', async () => {
    const source = uniqueSource('ordered');
    await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: 'event.data.key', onFailure: 'Block' } });
    const a1 = await addEvent(t.repos, { source, payload: '{"key":"a"}' });
    const b = await addEvent(t.repos, { source, payload: '{"key":"b"}' });
    const a2 = await addEvent(t.repos, { source, payload: '{"key":"a"}' });

    // the last event prepared first: the first of its key is not prepared yet
    const d3 = await prepare(a2, 'run-3');
    expect(await t.repos.ordering.firstTurn(d3, 'run-3', judge)).toEqual({ turn: 'wait', behind: null, wake: 'signal' });
    // another key's event goes at once, though the first event is not prepared yet either
    const d2 = await prepare(b, 'run-2');
    expect(await t.repos.ordering.firstTurn(d2, 'run-2', judge)).toEqual({ turn: 'go', outOfOrder: false });

    // the first event's prepare: it goes, and the waiting delivery now waits behind it (not woken)
    const d1 = await prepare(a1, 'run-1');
    expect(await t.repos.ordering.firstTurn(d1, 'run-1', judge)).toEqual({ turn: 'go', outOfOrder: false });
    expect(await behindOf(d3)).toBe(d1);

    // its end wakes the waiting one, whose turn has come
    await t.database.db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS' });
    expect(await t.repos.ordering.release(d1)).toEqual({ holds: false, wake: { workflowId: 'run-3', deliveryId: d3 } });
    expect(await t.repos.ordering.turn(d3, 'run-3', judge)).toEqual({ turn: 'go', outOfOrder: false });
  });

  it('does not wait for an earlier event its filter refuses, nor for one of another key', async () => {
    const source = uniqueSource('ordered');
    await addEndpoint(t.repos, {
      source,
      url: 'http://127.0.0.1:9/',
      filter: 'event.data.keep',
      ordering: { key: 'event.data.key', onFailure: 'Block' },
    });
    await addEvent(t.repos, { source, payload: '{"key":"a","keep":false}' });
    await addEvent(t.repos, { source, payload: '{"key":"b","keep":true}' });
    const later = await addEvent(t.repos, { source, payload: '{"key":"a","keep":true}' });
    const d = await prepare(later, 'run-later');
    expect(await t.repos.ordering.firstTurn(d, 'run-later', judge)).toEqual({ turn: 'go', outOfOrder: false });
  });

  it('waits behind an earlier delivery of its key whose key is not decided yet', async () => {
    const source = uniqueSource('ordered');
    await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: 'event.data.key', onFailure: 'Block' } });
    const first = await addEvent(t.repos, { source, payload: '{"key":"a"}' });
    const other = await addEvent(t.repos, { source, payload: '{"key":"b"}' });
    const second = await addEvent(t.repos, { source, payload: '{"key":"a"}' });
    // prepare's statement has put both rows in place, their keys not decided yet (as between its two statements)
    const undecided: OrderingKeyOf = () => {
      throw new Error('not yet');
    };
    const rowOf = async (eventId: string, run: string) =>
      (await t.repos.deliveries.prepareRun(eventId, run, acceptAll, undecided).catch(() => undefined)) ?? [];
    await rowOf(first, 'run-1');
    await rowOf(other, 'run-other');
    const d1 = (await t.repos.deliveries.listByEvent(first))[0]!.id;
    const d3 = await prepare(second, 'run-3');
    expect(await t.repos.ordering.firstTurn(d3, 'run-3', judge)).toEqual({ turn: 'wait', behind: d1, wake: 'signal' });
  });
});

// The handoff (docs/ordering.md, "The handoff"): the release claims the delivery it wakes when
// its run takes a handoff and its turn has come, and the turn checks of its run answer what the
// handed-off attempt left.
describe("the handoff's claim and what the turn check answers after it", () => {
  const t = fileDatabase();
  const judge = createSequenceJudge({ expressions: createExpressionCache() });
  const handoff = (workflowId: string) => ({ judge, leaseMarginMs: 10_000, workflowId, mayAttempt: () => true });

  /** Two events of one sequence prepared, the second waiting behind the first (its run takes a handoff or not). */
  async function twoWaiting(takesHandoff: boolean): Promise<{ d1: string; d2: string }> {
    const source = uniqueSource('handoff');
    await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: null, onFailure: 'Block' } });
    const e1 = await addEvent(t.repos, { source, payload: '{"seq":1}' });
    const e2 = await addEvent(t.repos, { source, payload: '{"seq":2}' });
    const d1 = (await t.repos.deliveries.prepareRun(e1, 'run-1'))![0]!.delivery.id;
    const d2 = (await t.repos.deliveries.prepareRun(e2, 'run-2'))![0]!.delivery.id;
    expect(await t.repos.ordering.firstTurn(d1, 'run-1', judge, true)).toEqual({ turn: 'go', outOfOrder: false });
    expect(await t.repos.ordering.firstTurn(d2, 'run-2', judge, takesHandoff)).toEqual({ turn: 'wait', behind: d1, wake: 'signal' });
    await t.database.db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS' });
    return { d1, d2 };
  }

  /** `count` events of one sequence prepared (run-0, run-1, ...): the first goes, each one after waits behind the one before. */
  async function line(name: string, onFailure: 'Block' | 'Skip', count: number, takesHandoff: boolean): Promise<string[]> {
    const source = uniqueSource(name);
    await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: null, onFailure } });
    const ds: string[] = [];
    for (let i = 0; i < count; i++) {
      const e = await addEvent(t.repos, { source, payload: `{"seq":${i}}` });
      ds.push((await t.repos.deliveries.prepareRun(e, `run-${i}`))![0]!.delivery.id);
    }
    expect(await t.repos.ordering.firstTurn(ds[0]!, 'run-0', judge, takesHandoff)).toEqual({ turn: 'go', outOfOrder: false });
    for (let i = 1; i < count; i++) {
      expect(await t.repos.ordering.firstTurn(ds[i]!, `run-${i}`, judge, takesHandoff)).toMatchObject({ turn: 'wait', behind: ds[i - 1] });
    }
    return ds;
  }

  /** A handed-off attempt answered 500, recorded as the deliver activity records it (its retry `retryInMs` away). */
  async function recordFailure(deliveryId: string, retryInMs: number): Promise<void> {
    const settled = await t.repos.deliveries.recordAttempt(deliveryId, {
      status: 'PENDING',
      responseStatus: 500,
      responseBody: null,
      error: 'HTTP 500',
      startedAt: new Date(),
      durationMs: 5,
      handoffRetryMs: retryInMs,
    });
    expect(settled).not.toBeNull();
  }

  /**
   * run-0 delivered ds[0]; its release claims ds[1], and for each hop past the first the handed-off
   * attempt succeeds and its release(ended) claims the next: the chain stands at ds[hop], claimed.
   */
  async function chainTo(ds: string[], hop: number): Promise<void> {
    const db = t.database.db;
    await db('webhook_delivery').where({ id: ds[0] }).update({ status: 'SUCCESS' });
    expect((await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0') })).claimed).toMatchObject({ deliveryId: ds[1] });
    for (let i = 1; i < hop; i++) {
      await db('webhook_delivery').where({ id: ds[i] }).update({ status: 'SUCCESS', attempts: 1 });
      expect((await t.repos.ordering.release(ds[i]!, { ended: true, handoff: handoff('run-0') })).claimed).toMatchObject({
        deliveryId: ds[i + 1],
      });
    }
  }

  it('claims a waiting delivery whose run takes it; its run waits while the lease lives', async () => {
    const { d1, d2 } = await twoWaiting(true);
    const released = await t.repos.ordering.release(d1, { handoff: handoff('run-1') });
    expect(released).toMatchObject({ holds: false, wake: { workflowId: 'run-2', deliveryId: d2 }, claimed: { deliveryId: d2 } });
    expect(await t.repos.ordering.turn(d2, 'run-2', judge, true)).toEqual({ turn: 'wait', behind: d1, wake: 'signal' });
    expect(await t.repos.ordering.stalled(0, 100)).not.toContainEqual(expect.objectContaining({ workflowId: 'run-2', deliveryId: d2 }));
    // a failed attempt: the run retries after the delay, its turn check says so once
    await t.repos.ordering.handoffEnd(d2, { retryInMs: 60_000 });
    const retry = await t.repos.ordering.turn(d2, 'run-2', judge, true);
    expect(retry).toMatchObject({ turn: 'go', handedOff: { retryInMs: expect.any(Number) } });
    const { retryInMs } = (retry as { handedOff: { retryInMs: number } }).handedOff;
    expect(retryInMs).toBeGreaterThan(55_000);
    expect(retryInMs).toBeLessThanOrEqual(60_000);
  });

  it("a claim whose lease ran out is not the handoff's any more: no renewal before the request, and its end wakes nobody", async () => {
    const source = uniqueSource('handoff');
    await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: null, onFailure: 'Block' } });
    const [d1, d2, d3] = await Promise.resolve().then(async () => {
      const ids: string[] = [];
      for (let i = 1; i <= 3; i++) {
        const e = await addEvent(t.repos, { source, payload: `{"seq":${i}}` });
        ids.push((await t.repos.deliveries.prepareRun(e, `run-${i}`))![0]!.delivery.id);
      }
      return ids as [string, string, string];
    });
    expect(await t.repos.ordering.firstTurn(d1, 'run-1', judge, true)).toEqual({ turn: 'go', outOfOrder: false });
    expect(await t.repos.ordering.firstTurn(d2, 'run-2', judge, true)).toEqual({ turn: 'wait', behind: d1, wake: 'signal' });
    expect(await t.repos.ordering.firstTurn(d3, 'run-3', judge, true)).toEqual({ turn: 'wait', behind: d2, wake: 'signal' });
    await t.database.db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS' });
    expect((await t.repos.ordering.release(d1, { handoff: handoff('run-1') })).claimed).toMatchObject({ deliveryId: d2 });
    // live: renewed right before the request, for the request's lease
    expect(await t.repos.ordering.renewClaim(d2, 20_000)).toBe(true);
    const renewed = await t.database
      .db('webhook_delivery')
      .where({ id: d2 })
      .first<{ until: Date }>(t.database.db.raw('ordering_handoff_until AS until'));
    expect(renewed!.until.getTime() - Date.now()).toBeGreaterThan(15_000);
    // a stall: the lease runs out, and the run's turn check takes the delivery back (it sends it itself)
    await t.database
      .db('webhook_delivery')
      .where({ id: d2 })
      .update({ ordering_handoff_until: t.database.db.raw("now() - interval '1 second'") });
    expect(await t.repos.ordering.renewClaim(d2, 20_000)).toBe(false);
    expect(await t.repos.ordering.turn(d2, 'run-2', judge, true)).toEqual({ turn: 'go', outOfOrder: false });
    expect(await t.repos.ordering.renewClaim(d2, 20_000)).toBe(false);
    // the handoff's attempt (made before the stall) ends it: that end must not release the key while
    // the run's own attempt may be in flight; the run's release does
    await t.database.db('webhook_delivery').where({ id: d2 }).update({ status: 'SUCCESS', attempts: 1 });
    expect(await t.repos.ordering.release(d2, { ended: true, handoff: handoff('run-1') })).toEqual({ holds: false });
    // the run's own release, once its attempt ended, wakes the third
    expect(await t.repos.ordering.release(d2, {})).toMatchObject({ holds: false, wake: { workflowId: 'run-3', deliveryId: d3 } });
  });

  it.each(['SUCCESS', 'FAILED'] as const)(
    'a chain whose release(ended) failed (H4): the release retried ends the handed-off delivery (%s) in turn and goes on from it',
    async (ended) => {
      const source = uniqueSource('stranded');
      await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: null, onFailure: 'Skip' } });
      const ds: string[] = [];
      for (let i = 1; i <= 3; i++) {
        const e = await addEvent(t.repos, { source, payload: `{"seq":${i}}` });
        ds.push((await t.repos.deliveries.prepareRun(e, `run-${i}`))![0]!.delivery.id);
      }
      const [d1, d2, d3] = ds as [string, string, string];
      expect(await t.repos.ordering.firstTurn(d1, 'run-1', judge, true)).toEqual({ turn: 'go', outOfOrder: false });
      expect(await t.repos.ordering.firstTurn(d2, 'run-2', judge, true)).toEqual({ turn: 'wait', behind: d1, wake: 'signal' });
      expect(await t.repos.ordering.firstTurn(d3, 'run-3', judge, true)).toEqual({ turn: 'wait', behind: d2, wake: 'signal' });
      await t.database.db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS' });
      expect((await t.repos.ordering.release(d1, { handoff: handoff('run-1') })).claimed).toMatchObject({ deliveryId: d2 });
      // the handed-off attempt recorded its end; its release(ended) failed (rolled back)
      await t.database.db('webhook_delivery').where({ id: d2 }).update({ status: ended, attempts: 1 });
      // the activity retried: d1's release again ends d2 (Skip: a FAILED one moves the key on too)
      const again = await t.repos.ordering.release(d1, { handoff: handoff('run-1') });
      expect(again).toMatchObject({
        holds: false,
        adopted: { deliveryId: d2, wake: { workflowId: 'run-2', deliveryId: d2 } },
        wake: { workflowId: 'run-3', deliveryId: d3 },
        claimed: { deliveryId: d3 },
      });
      const row = await t.database.db('webhook_delivery').where({ id: d2 }).first('ordering_handoff', 'ordering_skipped');
      expect(row).toEqual({ ordering_handoff: 'ended', ordering_skipped: ended === 'FAILED' });
      // once only: the chain's own release, should it come late, finds the claim gone and wakes nobody
      expect(await t.repos.ordering.release(d2, { ended: true, handoff: handoff('run-1') })).toEqual({ holds: false });
      expect((await t.repos.ordering.release(d1, { handoff: handoff('run-1') })).adopted).toBeUndefined();
    },
  );

  it.each(['SUCCESS', 'FAILED'] as const)(
    "a chain whose release(ended) failed at its second hop: the release retried (the chain's first delivery's) ends the handed-off delivery (%s) two hops down",
    async (ended) => {
      const source = uniqueSource('strand2');
      await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: null, onFailure: 'Skip' } });
      const ds: string[] = [];
      for (let i = 0; i <= 3; i++) {
        const e = await addEvent(t.repos, { source, payload: `{"seq":${i}}` });
        ds.push((await t.repos.deliveries.prepareRun(e, `run-${i}`))![0]!.delivery.id);
      }
      const [d0, d1, d2, d3] = ds as [string, string, string, string];
      expect(await t.repos.ordering.firstTurn(d0, 'run-0', judge, true)).toEqual({ turn: 'go', outOfOrder: false });
      for (let i = 1; i <= 3; i++) {
        expect(await t.repos.ordering.firstTurn(ds[i]!, `run-${i}`, judge, true)).toMatchObject({ turn: 'wait', behind: ds[i - 1] });
      }
      const db = t.database.db;
      // run-0 delivered d0; its release claims d1, whose handed-off attempt succeeds
      await db('webhook_delivery').where({ id: d0 }).update({ status: 'SUCCESS' });
      expect((await t.repos.ordering.release(d0, { handoff: handoff('run-0') })).claimed).toMatchObject({ deliveryId: d1 });
      await db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS', attempts: 1 });
      // the chain's release of d1 commits and claims d2, whose attempt ends it
      expect((await t.repos.ordering.release(d1, { ended: true, handoff: handoff('run-0') })).claimed).toMatchObject({ deliveryId: d2 });
      await db('webhook_delivery').where({ id: d2 }).update({ status: ended, attempts: 1 });
      // d2's release(ended) fails (rolled back): the activity is retried, and releases d0 again
      const again = await t.repos.ordering.release(d0, { handoff: handoff('run-0') });
      expect(again).toMatchObject({
        holds: false,
        adopted: { deliveryId: d2 },
        wake: { workflowId: 'run-3', deliveryId: d3 },
        claimed: { deliveryId: d3 },
      });
      // once only: the chain's own release, should it come late, finds the claim gone
      expect(await t.repos.ordering.release(d2, { ended: true, handoff: handoff('run-0') })).toEqual({ holds: false });
    },
  );

  it.for([1, 2])(
    'a chain whose release(ended) of the last delivery of its key failed (hop %i): only the retried release looks for it, and ends it',
    async (hop) => {
      const ds = await line(`lastcut${hop}`, 'Block', hop + 1, true);
      const db = t.database.db;
      await chainTo(ds, hop);
      const last = ds[hop]!;
      // its handed-off attempt succeeded; its release(ended) failed (rolled back): nothing after it
      // holds the key, so a release of d0 that is not a retry finds nothing (the common path's statements)
      await db('webhook_delivery').where({ id: last }).update({ status: 'SUCCESS', attempts: 1 });
      expect(await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0') })).toEqual({ holds: false });
      // the activity retried: d0's release looks further and ends it as the chain's release would have
      expect(await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0'), retried: true })).toEqual({
        holds: false,
        adopted: { deliveryId: last, wake: { workflowId: `run-${hop}`, deliveryId: last } },
      });
      expect(await db('webhook_delivery').where({ id: last }).first('ordering_handoff')).toEqual({ ordering_handoff: 'ended' });
      expect(await t.repos.ordering.turn(last, `run-${hop}`, judge, true)).toEqual({ turn: 'go', outOfOrder: false, handedOff: 'ended' });
      // once only: the chain's own release, should it come late, finds the claim gone; a second retry finds nothing
      expect(await t.repos.ordering.release(last, { ended: true, handoff: handoff('run-0') })).toEqual({ holds: false });
      expect(await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0'), retried: true })).toEqual({ holds: false });
    },
  );

  it('a quick release racing a turn check that records a wait behind it (no lost wake-up)', async () => {
    const source = uniqueSource('quick-release-race');
    await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: null, onFailure: 'Block' } });
    const ds: string[] = [];
    for (let i = 0; i < 2; i++) {
      const e = await addEvent(t.repos, { source, payload: `{"seq":${i}}` });
      ds.push((await t.repos.deliveries.prepareRun(e, `run-${i}`))![0]!.delivery.id);
    }
    expect(await t.repos.ordering.firstTurn(ds[0]!, 'run-0', judge, true)).toEqual({ turn: 'go', outOfOrder: false });
    const db = t.database.db;
    // d1's turn check, mid-way: its row locked, d0 read PENDING, its wait behind d0 written, not committed
    const trx = await db.transaction();
    await trx.raw('SELECT id FROM webhook_delivery WHERE id = ? FOR UPDATE', [ds[1]!]);
    await trx('webhook_delivery')
      .where({ id: ds[1] })
      .update({ ordering_waiter: 'run-1', ordering_behind: ds[0], ordering_waiting_since: trx.fn.now() });
    // d0 ends SUCCESS and is released (the quick path) meanwhile
    await db('webhook_delivery').where({ id: ds[0] }).update({ status: 'SUCCESS', attempts: 1 });
    let settled = false;
    const released = t.repos.ordering.release(ds[0]!).then((r) => ((settled = true), r));
    await new Promise((ok) => setTimeout(ok, 300));
    expect(settled).toBe(false);
    await trx.commit();
    expect(await released).toMatchObject({ holds: false, wake: { workflowId: 'run-1', deliveryId: ds[1] } });
  });

  it('a quick turn racing a turn check of the next delivery that records a wait for its event (pointed at it)', async () => {
    const source = uniqueSource('quick-go-race');
    await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: null, onFailure: 'Block' } });
    const e1 = await addEvent(t.repos, { source, payload: '{"seq":1}' });
    const e2 = await addEvent(t.repos, { source, payload: '{"seq":2}' });
    const d2 = (await t.repos.deliveries.prepareRun(e2, 'run-2'))![0]!.delivery.id;
    const db = t.database.db;
    // d2's turn check, mid-way: its row locked, e1 seen not prepared, its wait (behind null) written, not committed
    const trx = await db.transaction();
    await trx.raw('SELECT id FROM webhook_delivery WHERE id = ? FOR UPDATE', [d2]);
    await trx('webhook_delivery')
      .where({ id: d2 })
      .update({ ordering_waiter: 'run-2', ordering_behind: null, ordering_waiting_since: trx.fn.now() });
    // e1 is prepared meanwhile and its delivery's first turn asked
    const d1 = (await t.repos.deliveries.prepareRun(e1, 'run-1'))![0]!.delivery.id;
    let settled = false;
    const turn = t.repos.ordering.firstTurn(d1, 'run-1', judge, true).then((r) => ((settled = true), r));
    await new Promise((ok) => setTimeout(ok, 300));
    expect(settled).toBe(false);
    await trx.commit();
    expect(await turn).toEqual({ turn: 'go', outOfOrder: false });
    // d2 now waits behind d1, so d1's end wakes it
    expect(await db('webhook_delivery').where({ id: d2 }).first('ordering_behind')).toEqual({ ordering_behind: d1 });
    await db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS', attempts: 1 });
    expect(await t.repos.ordering.release(d1)).toMatchObject({ holds: false, wake: { workflowId: 'run-2', deliveryId: d2 } });
  });

  it('a chain whose release(ended) failed, with a later delivery of the key prepared but not waiting yet: the retried release ends the stranded one', async () => {
    const ds = await line('stranded-not-waiting', 'Block', 2, true);
    const db = t.database.db;
    await chainTo(ds, 1);
    const source = (
      await db('webhook_delivery')
        .join('webhook_event', 'webhook_event.id', 'webhook_delivery.event_id')
        .where('webhook_delivery.id', ds[0])
        .first('webhook_event.source')
    ).source as string;
    // a third event of the key, prepared (its delivery in place) but its turn not checked yet
    const e = await addEvent(t.repos, { source, payload: '{"seq":2}' });
    const d2 = (await t.repos.deliveries.prepareRun(e, 'run-2'))![0]!.delivery.id;
    // ds[1]'s handed-off attempt succeeded; its release(ended) failed (rolled back)
    await db('webhook_delivery').where({ id: ds[1] }).update({ status: 'SUCCESS', attempts: 1 });
    expect(await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0'), retried: true })).toMatchObject({
      holds: false,
      adopted: { deliveryId: ds[1] },
    });
    expect(d2).toBeTruthy();
  });

  it.for([1, 2])(
    "a chain whose handed-off attempt failed and whose handoffEnd failed (hop %i): the release retried leaves it to its run's retry at once",
    async (hop) => {
      const ds = await line(`retrycut${hop}`, 'Block', hop + 2, true);
      const db = t.database.db;
      await chainTo(ds, hop);
      const failed = ds[hop]!;
      // claimed with no attempt recorded: it may be in flight, a release leaves it to its lease
      expect((await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0'), retryInMs: 2_000 })).adopted).toBeUndefined();
      // its handed-off attempt failed (a 500) and was recorded, with its retry's time (the backoff's
      // first delay); handoffEnd's 'retry' failed (rolled back)
      await recordFailure(failed, 2_000);
      // the activity retried: d0's release again finds it and writes what handoffEnd would have
      const again = await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0'), retryInMs: 2_000 });
      expect(again).toEqual({
        holds: false,
        adopted: { deliveryId: failed, wake: { workflowId: `run-${hop}`, deliveryId: failed }, retried: true },
      });
      // its run's turn check: its retry, after the delay, counting on from the row's attempt
      const turn = await t.repos.ordering.turn(failed, `run-${hop}`, judge, true);
      expect(turn).toMatchObject({ turn: 'go', handedOff: { retryInMs: expect.any(Number) } });
      const { retryInMs } = (turn as { handedOff: { retryInMs: number } }).handedOff;
      expect(retryInMs).toBeGreaterThan(1_000);
      expect(retryInMs).toBeLessThanOrEqual(2_000);
      expect(await db('webhook_delivery').where({ id: failed }).first('status', 'attempts', 'ordering_handoff')).toEqual({
        status: 'PENDING',
        attempts: 1,
        ordering_handoff: null,
      });
      // the chain's handoffEnd, should it come late, changes nothing; the key still waits for it
      await t.repos.ordering.handoffEnd(failed, { retryInMs: 60_000 });
      expect((await db('webhook_delivery').where({ id: failed }).first('ordering_handoff'))?.ordering_handoff).toBeNull();
      expect(await t.repos.ordering.turn(ds[hop + 1]!, `run-${hop + 1}`, judge, true)).toMatchObject({ turn: 'wait', behind: failed });
    },
  );

  it('a chain whose handed-off attempt was answered with Retry-After and whose handoffEnd failed: the release retried keeps the floor its record wrote', async () => {
    const ds = await line('floorcut', 'Block', 3, true);
    await chainTo(ds, 1);
    const failed = ds[1]!;
    // the handed-off attempt's record: a 500 whose Retry-After puts its retry 60 s away (the
    // backoff's first delay is 2 s); handoffEnd's 'retry' then failed (rolled back)
    await recordFailure(failed, 60_000);
    expect((await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0'), retryInMs: 2_000 })).adopted).toMatchObject({
      deliveryId: failed,
      retried: true,
    });
    const turn = await t.repos.ordering.turn(failed, 'run-1', judge, true);
    expect(turn).toMatchObject({ turn: 'go', handedOff: { retryInMs: expect.any(Number) } });
    expect((turn as { handedOff: { retryInMs: number } }).handedOff.retryInMs).toBeGreaterThan(55_000);
  });

  it("a chain whose handed-off attempt made no request and whose handoffEnd('dropped') failed: the release retried gives it back to its run, unless its claim was renewed", async () => {
    const ds = await line('dropcut', 'Block', 3, true);
    await chainTo(ds, 1);
    const db = t.database.db;
    const d1 = ds[1]!;
    // claimed, no attempt, never renewed (a limit said wait before the request): a release that is
    // not a retry leaves it to its lease (its chain may be on its way to the request)
    expect((await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0') })).adopted).toBeUndefined();
    // the retried one gives it back to its run, as handoffEnd('dropped') would have
    expect(await t.repos.ordering.release(ds[0]!, { handoff: handoff('run-0'), retried: true })).toEqual({
      holds: false,
      adopted: { deliveryId: d1, wake: { workflowId: 'run-1', deliveryId: d1 }, dropped: true },
    });
    // a late renewal finds the claim gone: no request; the run sends it itself
    expect(await t.repos.ordering.renewClaim(d1, 20_000)).toBe(false);
    expect(await t.repos.ordering.turn(d1, 'run-1', judge, true)).toEqual({ turn: 'go', outOfOrder: false });
    expect(await db('webhook_delivery').where({ id: d1 }).first('status', 'attempts', 'ordering_handoff')).toEqual({
      status: 'PENDING',
      attempts: 0,
      ordering_handoff: null,
    });
    // renewed right before its request: it may be in flight, even a retried release leaves it to its lease
    await db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS', attempts: 1 });
    expect((await t.repos.ordering.release(d1, { handoff: handoff('run-1') })).claimed).toMatchObject({ deliveryId: ds[2] });
    expect(await t.repos.ordering.renewClaim(ds[2]!, 20_000)).toBe(true);
    expect((await t.repos.ordering.release(d1, { handoff: handoff('run-1'), retried: true })).adopted).toBeUndefined();
    expect(await db('webhook_delivery').where({ id: ds[2] }).first('ordering_handoff')).toEqual({ ordering_handoff: 'claimed' });
  });

  it('a release whose next delivery waits behind another one, while that one is released: no deadlock (the lock out of order is skipped)', async () => {
    // d0 skipped and sent again by a replay (out of order), d1 delivered since, d2 waiting behind
    // d1: d0's release locks d2 (nextHolding) and then d1 (strandedAfter, d2 waits behind it);
    // d1's release locks d1 and then d2
    const [d0, d1, d2] = (await line('lockorder', 'Skip', 3, false)) as [string, string, string];
    const db = t.database.db;
    await db('webhook_delivery').where({ id: d0 }).update({ status: 'FAILED', attempts: 1, ordering_skipped: true });
    await db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS', attempts: 1 });
    await db('webhook_delivery').where({ id: d0 }).update({ status: 'SUCCESS', attempts: 2 });
    const waiting = async (n: number) =>
      eventually(
        async () => {
          const r = await db.raw<{ rows: Array<{ n: number }> }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          return r.rows[0]!.n >= n;
        },
        { what: `${n} release(s) waiting on a row lock` },
      );
    // the test holds d2's lock: d0's release waits for it first (it has d0), then d1's (it has d1);
    // once it is let go, d0's release takes d2 and goes for d1
    const hold = await db.transaction();
    const outcomes: Array<Promise<PromiseSettledResult<unknown>>> = [];
    try {
      await hold('webhook_delivery').where({ id: d2 }).forUpdate().first('id');
      const settled = <T>(p: Promise<T>) =>
        p.then(
          (value) => ({ status: 'fulfilled' as const, value }),
          (reason: unknown) => ({ status: 'rejected' as const, reason }),
        );
      outcomes.push(settled(t.repos.ordering.release(d0, {})));
      await waiting(1);
      outcomes.push(settled(t.repos.ordering.release(d1, {})));
      await waiting(2);
      await hold.commit();
    } finally {
      if (!hold.isCompleted()) await hold.rollback();
    }
    const [ofD0, ofD1] = await Promise.all(outcomes);
    // before: one of the two was aborted with "deadlock detected" (after deadlock_timeout)
    expect(ofD0).toEqual({ status: 'fulfilled', value: { holds: false } });
    expect(ofD1).toEqual({ status: 'fulfilled', value: { holds: false, wake: { workflowId: 'run-2', deliveryId: d2 } } });
  });

  it('does not claim for a run that does not take a handoff (workflow code before it): it is only woken', async () => {
    const { d1, d2 } = await twoWaiting(false);
    const released = await t.repos.ordering.release(d1, { handoff: handoff('run-1') });
    expect(released).toEqual({ holds: false, wake: { workflowId: 'run-2', deliveryId: d2 } });
  });

  it("ended by the handoff: its run completes; a replay's run of the reopened row goes its own way and leaves it to that run", async () => {
    const { d1, d2 } = await twoWaiting(true);
    expect((await t.repos.ordering.release(d1, { handoff: handoff('run-1') })).claimed).toBeDefined();
    // the handed-off attempt ended it FAILED (a 4xx): it holds the key
    await t.database.db('webhook_delivery').where({ id: d2 }).update({ status: 'FAILED', attempts: 1 });
    expect(await t.repos.ordering.release(d2, { ended: true, handoff: handoff('run-1') })).toMatchObject({ holds: true });
    // reopened by a replay before run-2 was told
    await t.database.db('webhook_delivery').where({ id: d2 }).update({ status: 'PENDING' });
    expect(await t.repos.ordering.turn(d2, 'replay-2', judge, true)).toEqual({ turn: 'go', outOfOrder: false });
    expect(await t.repos.ordering.turn(d2, 'run-2', judge, true)).toEqual({ turn: 'go', outOfOrder: false, handedOff: 'ended' });
  });
});

// What ordering adds to a delivery on its common path (issue 41's bound: 100 keys within 1.3x the
// CPU per delivery of unordered): a delivery whose turn has come at prepare, and the release of one
// that ended with nothing to wake, are one statement each (db/ordering.ts quickGo, quickRelease);
// they were a transaction of four to six. Anything else takes the transaction, as before.
describe('the common path of an ordered delivery: one statement for its turn, one for its release', () => {
  const t = fileDatabase();
  const judge = createSequenceJudge({ expressions: createExpressionCache() });
  const keyOf: OrderingKeyOf = (event) => (JSON.parse(event.payload.toString('utf8')) as { key: string }).key;
  const acceptAll: ContentRouting = (_event, candidates) => candidates.map(() => ({ accepted: true, expectNext: true }));
  const prepare = async (eventId: string, run: string): Promise<string> => {
    const id = (await t.repos.deliveries.prepareRun(eventId, run, acceptAll, keyOf))?.[0]?.delivery.id;
    if (!id) throw new Error(`no delivery for ${eventId}`);
    return id;
  };
  /** The statements `fn` runs (BEGIN and COMMIT count: each is a round trip). */
  const statementsOf = async <T>(fn: () => Promise<T>): Promise<{ result: T; statements: number }> => {
    let statements = 0;
    const count = () => statements++;
    t.database.db.on('query', count);
    try {
      return { result: await fn(), statements };
    } finally {
      t.database.db.off('query', count);
    }
  };

  it('goes at once and releases with nothing to wake in one statement each; a wait and a wake-up take the transaction', async () => {
    const source = uniqueSource('ordered');
    await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: 'event.data.key', onFailure: 'Block' } });
    const a1 = await addEvent(t.repos, { source, payload: '{"key":"a"}' });
    const b1 = await addEvent(t.repos, { source, payload: '{"key":"b"}' });
    const a2 = await addEvent(t.repos, { source, payload: '{"key":"a"}' });

    // the first of its key: its turn has come
    const d1 = await prepare(a1, 'run-1');
    expect(await statementsOf(() => t.repos.ordering.firstTurn(d1, 'run-1', judge, true))).toEqual({
      result: { turn: 'go', outOfOrder: false },
      statements: 1,
    });
    // another key, the events before it prepared or of another key (judged, as the transaction judges them)
    const d2 = await prepare(b1, 'run-2');
    expect((await statementsOf(() => t.repos.ordering.firstTurn(d2, 'run-2', judge, true))).statements).toBe(1);
    // behind the first of its key: it waits, recorded in the transaction (the statement asked first)
    const d3 = await prepare(a2, 'run-3');
    const waits = await statementsOf(() => t.repos.ordering.firstTurn(d3, 'run-3', judge, true));
    expect(waits.result).toEqual({ turn: 'wait', behind: d1, wake: 'signal' });
    expect(waits.statements).toBeGreaterThan(1);

    // b's end: nothing waits behind it
    await t.database.db('webhook_delivery').where({ id: d2 }).update({ status: 'SUCCESS' });
    expect(await statementsOf(() => t.repos.ordering.release(d2))).toEqual({ result: { holds: false }, statements: 1 });
    // a's end: the one behind it is woken, from the transaction
    await t.database.db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS' });
    const wakes = await statementsOf(() => t.repos.ordering.release(d1));
    expect(wakes.result).toEqual({ holds: false, wake: { workflowId: 'run-3', deliveryId: d3 } });
    expect(wakes.statements).toBeGreaterThan(1);
    // a FAILED end under Block holds the key: the transaction (it writes the blocked mark)
    await t.database.db('webhook_delivery').where({ id: d3 }).update({ status: 'FAILED' });
    const holds = await statementsOf(() => t.repos.ordering.release(d3));
    expect(holds.result).toMatchObject({ holds: true });
    expect(holds.statements).toBeGreaterThan(1);
  });

  it("prepare's key, decided and not written (deferKeys), is written by the turn check's statement, whatever it answers", async () => {
    const source = uniqueSource('ordered');
    await addEndpoint(t.repos, { source, url: 'http://127.0.0.1:9/', ordering: { key: 'event.data.key', onFailure: 'Block' } });
    const a1 = await addEvent(t.repos, { source, payload: '{"key":"a"}' });
    const a2 = await addEvent(t.repos, { source, payload: '{"key":"a"}' });
    const keyOfRow = async (id: string) =>
      (await t.database.db('webhook_delivery').where({ id }).first<{ ordering_key: string | null }>('ordering_key'))?.ordering_key;
    const deferred = async (eventId: string, run: string) => {
      const row = (await t.repos.deliveries.prepareRun(eventId, run, acceptAll, keyOf, { deferKeys: true }))?.[0];
      if (!row?.keyToStore) throw new Error(`no deferred key for ${eventId}`);
      return { id: row.delivery.id, key: row.keyToStore, inMemory: row.delivery.ordering?.key };
    };

    const d1 = await deferred(a1, 'run-1');
    expect([d1.key, d1.inMemory, await keyOfRow(d1.id)]).toEqual([encodeOrderingKey('a'), 'a', null]);
    expect(await statementsOf(() => t.repos.ordering.firstTurn(d1.id, 'run-1', judge, true, { key: d1.key }))).toEqual({
      result: { turn: 'go', outOfOrder: false },
      statements: 1,
    });
    expect(await keyOfRow(d1.id)).toBe(encodeOrderingKey('a'));
    // behind it: the statement writes the key, then the transaction records the wait behind d1
    const d2 = await deferred(a2, 'run-2');
    expect(await t.repos.ordering.firstTurn(d2.id, 'run-2', judge, true, { key: d2.key })).toEqual({
      turn: 'wait',
      behind: d1.id,
      wake: 'signal',
    });
    expect(await keyOfRow(d2.id)).toBe(encodeOrderingKey('a'));
    // d1's end wakes it, as for a key written by prepareRun
    await t.database.db('webhook_delivery').where({ id: d1.id }).update({ status: 'SUCCESS' });
    expect(await t.repos.ordering.release(d1.id)).toEqual({ holds: false, wake: { workflowId: 'run-2', deliveryId: d2.id } });
  });
});
