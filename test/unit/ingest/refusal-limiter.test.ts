import { describe, expect, it } from 'vitest';
import { createRefusalLimiter, type RefusalLimits } from '../../../src/ingest/refusal-limiter.js';

const LIMITS: RefusalLimits = { perAddress: 2, perSource: 3, windowMs: 60_000, concurrency: 1, queue: 1 };

describe('createRefusalLimiter: refusals per address and per source in a window, and the line of comparisons', () => {
  it.each([
    { name: 'nothing refused yet', refusals: [], ask: ['a', 's'], at: 0, answer: undefined },
    { name: 'under both limits', refusals: [['a', 's']], ask: ['a', 's'], at: 0, answer: undefined },
    {
      name: 'the address at its limit: the rest of its window',
      refusals: [
        ['a', 's'],
        ['a', 't'],
      ],
      ask: ['a', 'u'],
      at: 15_000,
      answer: { limited: true, retryAfterSeconds: 45, by: 'address' },
    },
    {
      name: 'the source at its limit, from other addresses',
      refusals: [
        ['a', 's'],
        ['b', 's'],
        ['c', 's'],
      ],
      ask: ['d', 's'],
      at: 59_500,
      answer: { limited: true, retryAfterSeconds: 1, by: 'source' },
    },
    {
      name: 'the window over: checked again',
      refusals: [
        ['a', 's'],
        ['a', 's'],
      ],
      ask: ['a', 's'],
      at: 60_000,
      answer: undefined,
    },
    {
      name: 'another address and source are not held back',
      refusals: [
        ['a', 's'],
        ['a', 's'],
      ],
      ask: ['b', 't'],
      at: 1,
      answer: undefined,
    },
  ])('$name', ({ refusals, ask, at, answer }) => {
    let now = 0;
    const limiter = createRefusalLimiter(LIMITS, () => now);
    for (const [address, source] of refusals) limiter.refused(address!, source!);
    now = at;
    expect(limiter.admit(ask[0]!, ask[1]!)).toEqual(answer);
  });

  it('runs one comparison at a time, one waiting, and answers the rest at once', async () => {
    const limiter = createRefusalLimiter(LIMITS);
    let running = 0;
    let most = 0;
    const order: string[] = [];
    const gates: Array<() => void> = [];
    const compare = (name: string) =>
      limiter.inTurn(async () => {
        running++;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => gates.push(resolve));
        order.push(name);
        running--;
        return name;
      });
    const first = compare('first');
    const second = compare('second');
    const third = await compare('third');
    expect(third).toEqual({ limited: true, retryAfterSeconds: 1, by: 'queue' });
    gates.shift()?.();
    await expect(first).resolves.toBe('first');
    // the turn went to the one waiting, not to a newcomer
    await new Promise((resolve) => setImmediate(resolve));
    gates.shift()?.();
    await expect(second).resolves.toBe('second');
    expect(order).toEqual(['first', 'second']);
    expect(most).toBe(1);
  });
});
