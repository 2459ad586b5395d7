import { MultipleErrors, NetworkError, ProtocolError, UserError } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import type { AttemptState } from '../../../../src/destinations/kafka/produce-batch.js';
import {
  MISSING_MEMORY_TOPICS,
  createTopicRecheck,
  leaderWindowMs,
  recheckOver,
  recheckWindowMs,
} from '../../../../src/destinations/kafka/topic-recheck.js';

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

describe('how long an attempt waits for a partition without a leader: while its record could still be sent once one is elected', () => {
  it.each([
    { timeoutMs: 30_000, windowMs: 29_000 },
    { timeoutMs: 10_000, windowMs: 9_000 },
    { timeoutMs: 2_000, windowMs: 1_000 },
    { timeoutMs: 1_000, windowMs: 500 },
  ])('an attempt of $timeoutMs ms: $windowMs ms (all but the 1 s, or half the time, a produce is given)', ({ timeoutMs, windowMs }) => {
    expect(leaderWindowMs(timeoutMs)).toBe(windowMs);
    expect(recheckOver(attemptAt(1_000_000, timeoutMs, windowMs - 1), 1_000_000, 'leaderless')).toBe(false);
    expect(recheckOver(attemptAt(1_000_000, timeoutMs, windowMs), 1_000_000, 'leaderless')).toBe(true);
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
    const found = await Promise.all([
      recheck.wait('t', attemptAt(now, 10_000), 'unknown'),
      recheck.wait('t', attemptAt(now, 10_000), 'unknown'),
    ]);
    expect(found).toEqual([{ partitionsCount: 3 }, { partitionsCount: 3 }]);
    expect(reads).toHaveLength(4);
    expect(reads.every((r) => r.forceUpdate === true)).toBe(true);
  });

  it("a topic still unknown once a read begins after an attempt's own window is final for it, with the reason; another attempt waits out its own window (review9 BUG 2)", async () => {
    const { producer } = appearingAfter(Number.POSITIVE_INFINITY);
    const recheck = createTopicRecheck(producer, 20);
    const started = performance.now();
    const settled: number[] = [];
    const timed = (p: Promise<unknown>) => p.then((v) => (settled.push(performance.now() - started), v));
    const [short, long] = await Promise.all([
      timed(recheck.wait('t', attemptAt(started, 400), 'unknown')),
      timed(recheck.wait('t', attemptAt(started, 1_000), 'unknown')),
    ]);
    for (const found of [short, long])
      expect(found).toMatchObject({
        failure: {
          code: 'broker_unknown_destination',
          detail: expect.stringMatching(/^Unknown topic t\. \(still unknown to the cluster's metadata \d+ ms after the attempt began\)$/),
        },
      });
    // each by its own window: 200 ms, 500 ms (the long one is not remembered out of its window)
    const [first = 0, second = 0] = settled;
    expect(first).toBeGreaterThanOrEqual(200);
    expect(first).toBeLessThan(400);
    expect(second).toBeGreaterThanOrEqual(500);
    expect(second).toBeLessThan(800);
  });

  it("a topic found while one attempt's window is over and another's is not: the other is answered with it (review9 BUG 2)", async () => {
    const { producer } = appearingAfter(15);
    const recheck = createTopicRecheck(producer, 20);
    const started = performance.now();
    const [short, long] = await Promise.all([
      recheck.wait('t', attemptAt(started, 200), 'unknown'),
      recheck.wait('t', attemptAt(started, 10_000), 'unknown'),
    ]);
    expect(short).toMatchObject({ failure: { code: 'broker_unknown_destination' } });
    expect(long).toEqual({ partitionsCount: 3 });
  });

  it("a topic looked for in vain through a whole window is remembered: the next attempt is answered after one read a re-read's time after its request, until the memory ends", async () => {
    const { producer, reads } = appearingAfter(Number.POSITIVE_INFINITY);
    const recheck = createTopicRecheck(producer, 10, 300);
    const first = await recheck.wait('t', attemptAt(performance.now(), 100), 'unknown');
    expect(first).toMatchObject({ failure: { code: 'broker_unknown_destination' } });
    const readsThen = reads.length;
    const started = performance.now();
    const next = await recheck.wait('t', attemptAt(started, 10_000), 'unknown');
    expect(performance.now() - started).toBeGreaterThanOrEqual(10);
    expect(performance.now() - started).toBeLessThan(100);
    expect(next).toMatchObject({
      failure: {
        code: 'broker_unknown_destination',
        detail: expect.stringMatching(
          /^Unknown topic t\. \(unknown to the cluster's metadata for an attempt's whole window until \d+ ms before this attempt's request, to it, and to a read after it\)$/,
        ),
      },
    });
    expect(reads.length - readsThen).toBeLessThanOrEqual(2);
    // an attempt that met something else (a partition without a leader) is not failed by the memory: looked for again (here still unknown, final after its window)
    const other = createTopicRecheck(producer, 10, 300);
    await other.wait('t', attemptAt(performance.now(), 100), 'unknown');
    const leaderless = other.wait('t', attemptAt(performance.now(), 400), 'leaderless');
    expect(await leaderless).toMatchObject({ failure: { code: 'broker_unknown_destination' } });
    // the memory over: a whole window again
    await new Promise((r) => setTimeout(r, 320));
    const later = performance.now();
    await recheck.wait('t', attemptAt(later, 100), 'unknown');
    expect(performance.now() - later).toBeGreaterThanOrEqual(50);
  });

  it('the memory is bounded: beyond MISSING_MEMORY_TOPICS topics the oldest is forgotten', async () => {
    const producer = {
      metadata: async ({ topics }: { topics: string[] }) => {
        throw new UserError(`Unknown topic ${topics[0] ?? ''}.`);
      },
    } as unknown as Producer;
    const recheck = createTopicRecheck(producer, 1, 60_000);
    const missAll = (names: string[]) => Promise.all(names.map((t) => recheck.wait(t, attemptAt(performance.now(), 4), 'unknown')));
    // the probe's own window (2 s of 10) never passes before its one read: only the memory can answer it so
    const remembered = async (t: string) =>
      JSON.stringify(await recheck.wait(t, attemptAt(performance.now(), 10_000), 'unknown')).includes(
        "for an attempt's whole window until",
      );
    await missAll(['first']);
    expect(await remembered('first')).toBe(true);
    await missAll(Array.from({ length: MISSING_MEMORY_TOPICS }, (_, i) => `t-${i}`));
    expect(await remembered('first')).toBe(false);
    expect(await remembered(`t-${MISSING_MEMORY_TOPICS - 1}`)).toBe(true);
  });

  it('a topic found forgets its memory', async () => {
    let there = false;
    const producer = {
      metadata: async () => {
        if (!there) throw new UserError('Unknown topic t.');
        return { topics: new Map([['t', { partitionsCount: 1 }]]) };
      },
    } as unknown as Producer;
    const recheck = createTopicRecheck(producer, 10, 60_000);
    expect(await recheck.wait('t', attemptAt(performance.now(), 100), 'unknown')).toHaveProperty('failure');
    there = true;
    // the attempt's own request met a leaderless partition of the topic, now created: looked for, found
    expect(await recheck.wait('t', attemptAt(performance.now(), 10_000), 'leaderless')).toEqual({ partitionsCount: 1 });
  });

  it('another failure (the cluster unreachable) ends the look with that reason, retried', async () => {
    const { producer, reads } = appearingAfter(1, () => new NetworkError('Connection to 127.0.0.1:9092 failed.'));
    const found = await createTopicRecheck(producer, 10).wait('t', attemptAt(performance.now(), 10_000), 'unknown');
    expect(found).toMatchObject({ failure: { code: 'broker_unavailable' } });
    expect(reads).toHaveLength(1);
  });

  it('an attempt that ended meanwhile is settled and no read is made for it', async () => {
    const { producer, reads } = appearingAfter(Number.POSITIVE_INFINITY);
    const attempt = attemptAt(performance.now(), 10_000);
    const waiting = createTopicRecheck(producer, 30).wait('t', attempt, 'unknown');
    attempt.abandoned = true;
    expect(await waiting).toMatchObject({ failure: { code: 'broker_unavailable', timedOut: true } });
    expect(reads).toHaveLength(0);
  });
});

/** as the client answers a Metadata request whose topic has a partition without a leader */
const noLeader = () =>
  new MultipleErrors('Received response with error while executing API Metadata(v12)', [new ProtocolError('LEADER_NOT_AVAILABLE')]);

describe('waiting for a partition without a leader (an election in progress)', () => {
  it('reads the metadata again until every partition has a leader', async () => {
    const { producer, reads } = appearingAfter(4, noLeader);
    const found = await createTopicRecheck(producer, 10).wait('t', attemptAt(performance.now(), 10_000), 'leaderless');
    expect(found).toEqual({ partitionsCount: 3 });
    expect(reads).toHaveLength(5);
  });

  it('still leaderless once the attempt has only the time a produce is given: not sent, retried, with the reason; remembered', async () => {
    const { producer, reads } = appearingAfter(Number.POSITIVE_INFINITY, noLeader);
    const recheck = createTopicRecheck(producer, 20);
    const started = performance.now();
    // a 1 s attempt: it waits 500 ms (the other half is its record's send floor)
    const found = await recheck.wait('t', attemptAt(started, 1_000), 'leaderless');
    const tookMs = performance.now() - started;
    expect(found).toMatchObject({
      failure: {
        code: 'broker_unavailable',
        detail: expect.stringMatching(
          /^LEADER_NOT_AVAILABLE: .* \(no leader in the cluster's metadata \d+ ms after the attempt began; not sent\)$/,
        ),
      },
    });
    expect(tookMs).toBeGreaterThanOrEqual(500);
    expect(tookMs).toBeLessThan(1_000);
    const readsThen = reads.length;
    expect(await recheck.wait('t', attemptAt(performance.now(), 10_000), 'leaderless')).toMatchObject({
      failure: { code: 'broker_unavailable', detail: expect.stringMatching(/for it, nor for a read after it; not sent\)$/) },
    });
    expect(reads.length - readsThen).toBeLessThanOrEqual(2);
  });
});
