import { describe, expect } from 'vitest';
import type { EndpointOrdering } from '../../src/domain/records.js';
import type { RecordedRequest, Receiver } from '../support/receiver.js';
import { addEndpoint, addEvent, uniqueSource, type FanoutHarness } from './support/harness.js';
import { it } from './support/fixtures.js';

// Ordered delivery per key (docs/ordering.md) on real Postgres and Temporal, the worker as
// cmd/worker.ts builds it, real HTTP receivers.

interface Sent {
  key: string;
  seq: number;
}

const sentOf = (r: RecordedRequest): Sent => JSON.parse(r.body.toString('utf8')) as Sent;

/** Events `{key, seq}` stored one after another (each its position), the runs started in reverse order. */
async function sendInOrder(h: FanoutHarness, source: string, events: Sent[]): Promise<string[]> {
  const ids: string[] = [];
  for (const e of events) ids.push(await addEvent(h.repos, { source, payload: JSON.stringify(e) }));
  // the order the runs start in is not the order: the positions are
  await Promise.all([...ids].reverse().map((id) => h.start(id)));
  return ids;
}

/**
 * Per key: the requests in the order they arrived never go back in seq (a retry repeats the
 * same), each starts after the one before it was answered, and the last success of each seq is
 * in order. Returns the seqs that succeeded per key.
 */
function checkPerKey(requests: RecordedRequest[], ok: (r: RecordedRequest) => boolean): Map<string, number[]> {
  const byKey = new Map<string, RecordedRequest[]>();
  for (const r of requests) {
    const { key } = sentOf(r);
    byKey.set(key, [...(byKey.get(key) ?? []), r]);
  }
  const succeeded = new Map<string, number[]>();
  for (const [key, list] of byKey) {
    const sorted = [...list].sort((a, b) => a.startedAt - b.startedAt);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!;
      const cur = sorted[i]!;
      expect(sentOf(cur).seq, `key ${key}: seq went back`).toBeGreaterThanOrEqual(sentOf(prev).seq);
      expect(cur.startedAt, `key ${key}: two requests in flight`).toBeGreaterThanOrEqual(prev.finishedAt ?? Infinity);
    }
    succeeded.set(
      key,
      sorted.filter(ok).map((r) => sentOf(r).seq),
    );
  }
  return succeeded;
}

const ordered = (key: string | null, onFailure: EndpointOrdering['onFailure'] = 'Block'): EndpointOrdering => ({ key, onFailure });

describe('ordered delivery per key', () => {
  it('interleaved keys with random 500s arrive in exact per-key order, one request per key in flight', async ({ h, receiver }) => {
    const source = uniqueSource('order');
    const { target, succeeded: ok } = await flaky(receiver, 0.3);
    await addEndpoint(h.repos, { source, url: target.url, ordering: ordered('event.data.key'), maxAttempts: 40 });
    const keys = ['a', 'b', 'c', 'd'];
    const events = Array.from({ length: 80 }, (_, i) => ({ key: keys[i % keys.length]!, seq: i }));
    const ids = await sendInOrder(h, source, events);
    await Promise.all(ids.map((id) => h.client.workflow.getHandle(id).result()));
    const succeeded = checkPerKey(target.requests, ok);
    for (const key of keys) {
      expect(succeeded.get(key)).toEqual(events.filter((e) => e.key === key).map((e) => e.seq));
    }
  });
});

/**
 * A receiver that answers 500 to a share of the requests (a seeded pseudo-random sequence, so a
 * failing run can be read again) after a few milliseconds, 200 to the rest.
 */
async function flaky(
  receiver: (script: (n: number, req: RecordedRequest) => { status: number; delayMs: number }) => Promise<Receiver>,
  failRate: number,
): Promise<{ target: Receiver; succeeded: (r: RecordedRequest) => boolean }> {
  let seed = 41;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const answered = new Map<RecordedRequest, number>();
  const target = await receiver((_n, req) => {
    const status = random() < failRate ? 500 : 200;
    answered.set(req, status);
    return { status, delayMs: 2 };
  });
  return { target, succeeded: (r) => answered.get(r) === 200 };
}
