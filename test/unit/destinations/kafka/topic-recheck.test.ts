import { NetworkError, UserError } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import type { AttemptState } from '../../../../src/destinations/kafka/produce-batch.js';
import { createTopicRecheck, recheckOver, recheckWindowMs } from '../../../../src/destinations/kafka/topic-recheck.js';

type Producer = Parameters<typeof createTopicRecheck>[0];

/** an attempt of `timeoutMs` that began `agoMs` before `now` */
const attemptAt = (now: number, timeoutMs: number, agoMs = 0): AttemptState => ({
  abandoned: false,
  deadline: now - agoMs + timeoutMs,
  timeoutMs,
});

describe('how long an attempt looks for a topic the cluster calls unknown', () => {
  it.each([
    { timeoutMs: 30_000, windowMs: 2_000 },
    { timeoutMs: 10_000, windowMs: 2_000 },
    { timeoutMs: 4_000, windowMs: 2_000 },
    { timeoutMs: 3_000, windowMs: 1_500 },
    { timeoutMs: 1_000, windowMs: 500 },
  ])('an attempt of $timeoutMs ms: $windowMs ms', ({ timeoutMs, windowMs }) => {
    expect(recheckWindowMs(timeoutMs)).toBe(windowMs);
  });

  it.each([
    { timeoutMs: 10_000, agoMs: 0, over: false },
    { timeoutMs: 10_000, agoMs: 1_999, over: false },
    { timeoutMs: 10_000, agoMs: 2_000, over: true },
    { timeoutMs: 1_000, agoMs: 499, over: false },
    { timeoutMs: 1_000, agoMs: 500, over: true },
  ])('begun $agoMs ms ago, of $timeoutMs ms: over $over', ({ timeoutMs, agoMs, over }) => {
    expect(recheckOver(attemptAt(1_000_000, timeoutMs, agoMs), 1_000_000)).toBe(over);
  });
});

/**
 * A stand-in for the client's metadata (the real broker's paths are in
 * test/destinations/kafka.test.ts): the topic unknown for the first `unknownReads` reads, then
 * there with 3 partitions; each read's options kept.
 */
function appearingAfter(unknownReads: number, error: () => Error = () => new UserError('Unknown topic t.')) {
  const reads: { forceUpdate?: boolean }[] = [];
  const producer = {
    metadata: async (options: { forceUpdate?: boolean }) => {
      reads.push(options);
      await new Promise((r) => setTimeout(r, 2));
      if (reads.length <= unknownReads) throw error();
      return { topics: new Map([['t', { partitionsCount: 3 }]]) };
    },
  };
  return { producer: producer as unknown as Producer, reads };
}

describe('looking for a topic the cluster calls unknown', () => {
  it('reads it again, forced, until it is there; attempts waiting at once share the reads', async () => {
    const { producer, reads } = appearingAfter(3);
    const recheck = createTopicRecheck(producer, 10);
    const now = performance.now();
    const found = await Promise.all([recheck.wait('t', attemptAt(now, 10_000)), recheck.wait('t', attemptAt(now, 10_000))]);
    expect(found).toEqual([{ partitionsCount: 3 }, { partitionsCount: 3 }]);
    expect(reads).toHaveLength(4);
    expect(reads.every((r) => r.forceUpdate === true)).toBe(true);
  });

  it("a topic still unknown once a read begins after the attempt's window is final, with the reason; each attempt by its own window", async () => {
    const { producer } = appearingAfter(Number.POSITIVE_INFINITY);
    const recheck = createTopicRecheck(producer, 20);
    const started = performance.now();
    const settled: number[] = [];
    const timed = (p: Promise<unknown>) => p.then((v) => (settled.push(performance.now() - started), v));
    const [short, long] = await Promise.all([
      timed(recheck.wait('t', attemptAt(started, 400))),
      timed(recheck.wait('t', attemptAt(started, 1_000))),
    ]);
    for (const found of [short, long])
      expect(found).toMatchObject({
        failure: {
          code: 'broker_unknown_destination',
          detail: expect.stringMatching(/^Unknown topic t\. \(still unknown to the cluster's metadata \d+ ms after the attempt began\)$/),
        },
      });
    const [first = 0, second = 0] = settled;
    expect(first).toBeGreaterThanOrEqual(200);
    expect(first).toBeLessThan(400);
    expect(second).toBeGreaterThanOrEqual(500);
    expect(second).toBeLessThan(1_000);
  });

  it('another failure (the cluster unreachable) ends the look with that reason, retried', async () => {
    const { producer, reads } = appearingAfter(1, () => new NetworkError('Connection to 127.0.0.1:9092 failed.'));
    const found = await createTopicRecheck(producer, 10).wait('t', attemptAt(performance.now(), 10_000));
    expect(found).toMatchObject({ failure: { code: 'broker_unavailable' } });
    expect(reads).toHaveLength(1);
  });

  it('an attempt that ended meanwhile is settled and no read is made for it', async () => {
    const { producer, reads } = appearingAfter(Number.POSITIVE_INFINITY);
    const attempt = attemptAt(performance.now(), 10_000);
    const waiting = createTopicRecheck(producer, 30).wait('t', attempt);
    attempt.abandoned = true;
    expect(await waiting).toMatchObject({ failure: { code: 'broker_unavailable', timedOut: true } });
    expect(reads).toHaveLength(0);
  });
});
