import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../../src/kube/work-queue.js';
import { sleep } from '../../support/wait.js';

describe('WorkQueue', () => {
  it('holds a key once however often it is added', async () => {
    const q = new WorkQueue();
    expect(q.add('a')).toBe(true);
    expect(q.add('a')).toBe(false);
    q.add('b');
    expect(q.depth).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
    expect(q.depth).toBe(0);
  });

  it('never hands a key being processed to a second worker; an add meanwhile queues it again after done()', async () => {
    const q = new WorkQueue();
    q.add('a');
    const key = await q.get();
    q.add('a');
    q.add('a');
    expect(q.depth).toBe(0);
    let second: string | undefined;
    void q.get().then((k) => (second = k));
    await sleep(10);
    expect(second).toBeUndefined();
    q.done(key!);
    await sleep(0);
    expect(second).toBe('a');
  });

  it('backs off exponentially per key until forget()', () => {
    const q = new WorkQueue({ baseDelayMs: 100, maxDelayMs: 1000 });
    expect([1, 2, 3, 4, 5, 6].map(() => q.addRateLimited('a'))).toEqual([100, 200, 400, 800, 1000, 1000]);
    q.forget('a');
    expect(q.addRateLimited('a')).toBe(100);
    q.shutDown();
  });

  it('delivers a delayed add after its delay, the earliest of several', async () => {
    const q = new WorkQueue();
    q.addAfter('a', 50);
    q.addAfter('a', 5000);
    const t0 = Date.now();
    expect(await q.get()).toBe('a');
    expect(Date.now() - t0).toBeLessThan(1000);
    q.shutDown();
  });

  it('shutDown releases waiting workers', async () => {
    const q = new WorkQueue();
    const waiting = q.get();
    q.shutDown();
    expect(await waiting).toBeUndefined();
    expect(q.add('a')).toBe(false);
  });
});
