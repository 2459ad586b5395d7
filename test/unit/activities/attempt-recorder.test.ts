import { describe, expect, it } from 'vitest';
import { createAttemptRecorder, createPatientRecorder } from '../../../src/activities/attempt-recorder.js';
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

describe('the patient recorder (an attempt recorded through a database outage)', () => {
  const outage = transient('database_unavailable', 'connection refused');
  const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

  /** A recordAttempt that throws the given errors in turn, then settles; the waits it was made to sleep. */
  function flaky(errors: unknown[]) {
    const waits: number[] = [];
    let calls = 0;
    const recordAttempt = (): Promise<Settled | null> => {
      const err = errors[calls++];
      return err === undefined ? Promise.resolve({ autoDisabled: false }) : Promise.reject(err);
    };
    const sleep = (ms: number) => {
      waits.push(ms);
      return Promise.resolve();
    };
    return { recordAttempt, sleep, waits, calls: () => calls };
  }

  it.each([
    ['no outage: recorded at once', [], [], 1],
    ['two outages: retried after 250 and 500 ms', [outage, outage], [250, 500], 3],
    [
      'a long outage: the wait doubles up to 4 s',
      [outage, outage, outage, outage, outage, outage, outage],
      [250, 500, 1_000, 2_000, 4_000, 4_000, 4_000],
      8,
    ],
  ])('%s', async (_what, errors, waits, calls) => {
    const f = flaky(errors);
    const record = createPatientRecorder({ recordAttempt: f.recordAttempt, logger: quiet, sleep: f.sleep });
    expect(await record('a', result, {})).toEqual({ autoDisabled: false });
    expect(f.waits).toEqual(waits);
    expect(f.calls()).toBe(calls);
  });

  it('an error that is not an outage is thrown at once, not retried', async () => {
    const refused = permanent('check_violation', 'the row refused it');
    const f = flaky([refused]);
    const record = createPatientRecorder({ recordAttempt: f.recordAttempt, logger: quiet, sleep: f.sleep });
    await expect(record('a', result, {})).rejects.toBe(refused);
    expect(f.calls()).toBe(1);
  });

  it('an outage longer than retryForMs: the last error is thrown and the loss is logged', async () => {
    const warned: string[] = [];
    const f = flaky(Array.from({ length: 100 }, () => outage));
    const record = createPatientRecorder({
      recordAttempt: f.recordAttempt,
      logger: { ...quiet, warn: (...args: unknown[]) => void warned.push(String(args[1])) },
      retryForMs: 0,
      sleep: f.sleep,
    });
    await expect(record('a', result, {})).rejects.toBe(outage);
    expect(f.calls()).toBe(1);
    expect(warned).toEqual(['delivery succeeded but could not be recorded; the next attempt re-sends it']);
  });
});
