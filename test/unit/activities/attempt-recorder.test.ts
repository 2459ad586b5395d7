import { describe, expect, it } from 'vitest';
import { createAttemptRecorder } from '../../../src/activities/attempt-recorder.js';
import type { AttemptResult, Settled } from '../../../src/db/deliveries.js';
import { permanent, transient } from '../../../src/domain/errors.js';

const result: AttemptResult = {
  status: 'SUCCESS',
  responseStatus: 200,
  responseBody: 'ok',
  error: null,
  startedAt: new Date(0),
  durationMs: 1,
};

/**
 * A repository stand-in that holds each statement until released, so a test decides what is in
 * flight; `fail` decides a statement's error from the ids in it.
 */
function statements(fail: (ids: string[]) => unknown = () => undefined) {
  const sent: string[][] = [];
  const open: Array<() => void> = [];
  return {
    sent,
    releaseAll: () => open.splice(0).forEach((release) => release()),
    deliveries: {
      recordAttempts(entries: ReadonlyArray<{ id: string }>): Promise<Array<Settled | null>> {
        const ids = entries.map((e) => e.id);
        sent.push(ids);
        return new Promise((resolve, reject) => {
          open.push(() => {
            const err = fail(ids);
            if (err === undefined) resolve(ids.map((id) => (id.startsWith('settled') ? null : { autoDisabled: id === 'disabler' })));
            else reject(err);
          });
        });
      },
    },
  };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('the attempt recorder (attempts that end together, one statement)', () => {
  it('attempts that end in the same turn go in one statement, and each caller gets its own row', async () => {
    const s = statements();
    const record = createAttemptRecorder({ deliveries: s.deliveries });
    const answers = Promise.all(['a', 'settled-b', 'disabler'].map((id) => record(id, result)));
    await turn();
    s.releaseAll();
    expect(await answers).toEqual([{ autoDisabled: false }, null, { autoDisabled: true }]);
    expect(s.sent).toEqual([['a', 'settled-b', 'disabler']]);
  });

  it('while maxInFlight statements are out, later attempts wait and leave together in the next', async () => {
    const s = statements();
    const record = createAttemptRecorder({ deliveries: s.deliveries, maxInFlight: 1 });
    const first = record('a', result);
    await turn();
    const later = ['b', 'c', 'd'].map((id) => record(id, result));
    await turn();
    expect(s.sent).toEqual([['a']]);
    s.releaseAll();
    await first;
    await turn();
    s.releaseAll();
    await Promise.all(later);
    expect(s.sent).toEqual([['a'], ['b', 'c', 'd']]);
  });

  it.each([
    { maxBatch: 2, attempts: ['a', 'b', 'c', 'd', 'e'], statements: [['a', 'b'], ['c', 'd'], ['e']] },
    { maxBatch: 50, attempts: ['a', 'b', 'a', 'c'], statements: [['a', 'b', 'c'], ['a']] },
  ])(
    'at most maxBatch ($maxBatch) attempts per statement, of distinct deliveries: $attempts',
    async ({ maxBatch, attempts, statements: expected }) => {
      const s = statements();
      const record = createAttemptRecorder({ deliveries: s.deliveries, maxInFlight: 10, maxBatch });
      const all = Promise.all(attempts.map((id) => record(id, result)));
      for (let i = 0; i < expected.length; i++) {
        await turn();
        s.releaseAll();
      }
      await all;
      expect(s.sent).toEqual(expected);
    },
  );

  it('an outage fails every attempt of the statement with it (each caller retries)', async () => {
    const outage = transient('database_unavailable', 'connection refused');
    const s = statements(() => outage);
    const record = createAttemptRecorder({ deliveries: s.deliveries });
    const answers = ['a', 'b'].map((id) => record(id, result).catch((err: unknown) => err));
    await turn();
    s.releaseAll();
    expect(await Promise.all(answers)).toEqual([outage, outage]);
    expect(s.sent).toEqual([['a', 'b']]);
  });

  it('any other error is not shared: each attempt of the statement is tried alone, and only its own error reaches it', async () => {
    const refused = permanent('event_not_found', 'the row refused it');
    const s = statements((ids) => (ids.includes('bad') ? refused : undefined));
    const record = createAttemptRecorder({ deliveries: s.deliveries });
    const answers = ['a', 'bad', 'c'].map((id) => record(id, result).catch((err: unknown) => err));
    await turn();
    s.releaseAll();
    await turn();
    s.releaseAll();
    expect(await Promise.all(answers)).toEqual([{ autoDisabled: false }, refused, { autoDisabled: false }]);
    expect(s.sent).toEqual([['a', 'bad', 'c'], ['a'], ['bad'], ['c']]);
  });
});
