import { writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BACKOFF } from '../../src/config/settings.js';
import { continuationWorkflowId } from '../../src/domain/ordering.js';
import { addEndpoint, addEvent, finishedEvents, startFanoutHarness } from '../fanout/support/harness.js';
import { startReceiver } from '../support/receiver.js';
import { historyToFixture } from './support/history-fixtures.js';

// Records the histories that test/workflows/replay.test.ts replays, from real runs (Postgres,
// the Temporal dev server, real HTTP receivers, the production backoff). Not part of `npm test`
// (vitest.config.ts includes it only when asked): npm run record:histories
// Re-record after a deliberate change of the workflow's commands (behind patched() or an input
// field, docs/decisions.md), and keep the old fixtures too: histories of runs still open in
// production must replay against every later version.
const FIXTURES = new URL('../fixtures/histories/', import.meta.url);
/**
 * Appended to the fixture names, so that a new recording sits beside the older ones: the workflow
 * version these histories come from (first delivery attempt as a local activity, chosen by the
 * input's localFirstAttempt: no patch marker). Change it with the next such change. Earlier:
 * `.local-first-attempt` (chosen by patched()), and no suffix (before that).
 */
const VERSION = 'local-first-attempt-input';
/**
 * The version of the ordered shapes (docs/ordering.md): `handoff`, a run that waited and whose
 * delivery the releasing activity made (ended, or failed and retried by the run). The one
 * recorded before the handoff (`ordered-waited.before-handoff`: waited, signalled, delivered
 * itself) came from the build before it (ebca4ba) with the same scenario; the `handoff` ones (the
 * run waited, was signalled, and completed or retried) from the build before `detached` (e844e1c).
 * `detached`: the run left its waiting delivery to the key's chain and ended after prepare; the
 * retried shape's delivery was retried by its continuation (`ordered-continuation`).
 */
const ORDERED_VERSION = 'detached';
/**
 * An ordered run whose delivery went at once and whose deliver activity released the key, nothing
 * waiting behind it (DeliverResult.released): no orderingRelease marker. Its own `it` below, so
 * recording it alone (`-t 'released by its deliver'`) leaves the older ordered fixtures as they are.
 */
const RELEASED_VERSION = 'released-by-deliver';

describe('record fanout histories', () => {
  it('records a success, retries then failure, and a partial fanout', async () => {
    const h = await startFanoutHarness({ backoff: DEFAULT_BACKOFF });
    const ok = await startReceiver([{ status: 200, body: 'ok' }]);
    const down = await startReceiver([{ status: 503, body: 'down' }]);
    const gone = await startReceiver([{ status: 404, body: 'gone' }]);
    try {
      const runs: [string, string, string][] = [];
      const record = async (name: string, source: string, endpoints: { url: string; maxAttempts?: number }[], expected: string) => {
        for (const e of endpoints) await addEndpoint(h.repos, { source, ...e });
        const eventId = await addEvent(h.repos, { source, eventType: 'fixture.recorded' });
        expect(await h.runFanout(eventId)).toBe(expected);
        const history = await h.client.workflow.getHandle(eventId).fetchHistory();
        await writeFile(new URL(`${name}.${VERSION}.json`, FIXTURES), `${JSON.stringify(historyToFixture(history), null, 1)}\n`);
        runs.push([name, eventId, expected]);
      };
      await record('success', 'fixture-success', [{ url: ok.url }], 'COMPLETED');
      await record('retries-then-failure', 'fixture-retries', [{ url: down.url, maxAttempts: 3 }], 'FAILED');
      await record('partial', 'fixture-partial', [{ url: ok.url }, { url: gone.url }, { url: down.url, maxAttempts: 2 }], 'PARTIAL');
      expect(runs).toHaveLength(3);
    } finally {
      await Promise.all([ok.close(), down.close(), gone.close()]);
      await h.close();
    }
  });

  it('records an ordered run alone on its key, released by its deliver', async () => {
    const h = await startFanoutHarness({ backoff: DEFAULT_BACKOFF });
    const r = await startReceiver([{ status: 200, body: 'ok' }]);
    try {
      const source = 'fixture-ordered-alone';
      await addEndpoint(h.repos, { source, url: r.url, ordering: { key: 'event.data.key', onFailure: 'Block' }, maxAttempts: 3 });
      const eventId = await addEvent(h.repos, { source, eventType: 'fixture.recorded', payload: JSON.stringify({ key: 'k', seq: 0 }) });
      expect(await h.runFanout(eventId)).toBe('COMPLETED');
      const history = await h.client.workflow.getHandle(eventId).fetchHistory();
      const fixture = historyToFixture(history);
      expect(JSON.stringify(fixture)).not.toContain('orderingRelease');
      await writeFile(new URL(`ordered-alone.${RELEASED_VERSION}.json`, FIXTURES), `${JSON.stringify(fixture, null, 1)}\n`);
    } finally {
      await r.close();
      await h.close();
    }
  });

  it('records ordered runs that waited: handed off and ended, handed off and retried by the run', async () => {
    const h = await startFanoutHarness({ backoff: DEFAULT_BACKOFF });
    try {
      for (const shape of ['ordered-waited', 'ordered-retried']) {
        let failed = false;
        const r = await startReceiver((_n, req) => {
          const seq = (JSON.parse(req.body.toString('utf8')) as { seq: number }).seq;
          if (shape === 'ordered-retried' && seq === 1 && !failed) {
            failed = true;
            return { status: 500, body: 'down' };
          }
          // the first request is held, so that the second run is prepared and waits behind it
          return { status: 200, body: 'ok', delayMs: seq === 0 ? 1_500 : 0 };
        });
        try {
          const source = `fixture-${shape}`;
          await addEndpoint(h.repos, { source, url: r.url, ordering: { key: 'event.data.key', onFailure: 'Block' }, maxAttempts: 3 });
          const ids: string[] = [];
          for (const seq of [0, 1]) {
            ids.push(await addEvent(h.repos, { source, eventType: 'fixture.recorded', payload: JSON.stringify({ key: 'k', seq }) }));
          }
          await Promise.all(ids.map((id) => h.start(id)));
          expect(await finishedEvents(h, ids)).toEqual(['COMPLETED', 'COMPLETED']);
          const save = async (workflowId: string, name: string) => {
            const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
            await writeFile(
              new URL(`${name}.${ORDERED_VERSION}.json`, FIXTURES),
              `${JSON.stringify(historyToFixture(history), null, 1)}\n`,
            );
          };
          await save(ids[1]!, shape);
          if (shape === 'ordered-retried') {
            const d1 = await h.database.db('webhook_delivery').where({ event_id: ids[1]! }).first('id');
            await save(continuationWorkflowId(ids[1]!, (d1 as { id: string }).id), 'ordered-continuation');
          }
        } finally {
          await r.close();
        }
      }
    } finally {
      await h.close();
    }
  });
});
