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
