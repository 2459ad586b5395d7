import type { Counter } from 'prom-client';
import { test as base } from 'vitest';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { startFanoutHarness, type FanoutHarness } from './harness.js';

export interface FanoutFixtures {
  /** the file's harness (database, worker, client), started on first use and closed after the file */
  h: FanoutHarness;
  /** starts a real HTTP receiver that is closed after the test */
  receiver: (...args: Parameters<typeof startReceiver>) => Promise<Receiver>;
}

/**
 * test/fanout's `it`: the harness is shared by a file (one worker and database per file keeps
 * the suite fast); everything a test observes (receivers, sources, events, metric deltas) is its
 * own, so no test depends on another's leftovers.
 */
export const it = base.extend<FanoutFixtures>({
  h: [
    // eslint-disable-next-line no-empty-pattern -- vitest reads the fixtures a fixture needs from this pattern
    async ({}, use) => {
      const h = await startFanoutHarness();
      try {
        await use(h);
      } finally {
        await h.close();
      }
    },
    { scope: 'file' },
  ],
  // eslint-disable-next-line no-empty-pattern -- as above
  receiver: async ({}, use) => {
    const started: Receiver[] = [];
    await use(async (...args) => {
      const r = await startReceiver(...args);
      started.push(r);
      return r;
    });
    await Promise.all(started.map((r) => r.close()));
  },
});

/** The sum of a counter's series whose labels include `labels`. */
export async function counterValue(counter: Counter, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await counter.get();
  return values.filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want)).reduce((sum, v) => sum + v.value, 0);
}

/**
 * How much a counter grew since this call: a test asserts its own increments, not `>= N` on a
 * registry the other tests of the file also count into.
 */
export async function counterDelta(counter: Counter, labels: Record<string, string> = {}): Promise<() => Promise<number>> {
  const before = await counterValue(counter, labels);
  return async () => (await counterValue(counter, labels)) - before;
}
