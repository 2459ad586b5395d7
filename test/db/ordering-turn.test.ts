import { describe, expect, it } from 'vitest';
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

    // before: the first event is not prepared, so the second waits for it (a timer re-check)
    expect(await t.repos.ordering.turn(d2!, 'run-2')).toEqual({ turn: 'wait', behind: null, wake: 'timer' });

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
