import { describe, expect, it } from 'vitest';
import { createRefusalLimiter, type Candidate, type RefusalLimiter, type RefusalLimits } from '../../../src/ingest/refusal-limiter.js';

const LIMITS: RefusalLimits = { perAddress: 2, perSource: 3, windowMs: 60_000, concurrency: 1, queue: 1 };

/** Comparisons that end when the test says (`next()`: the one that has the turn), and the order they ended in. */
function gated(limiter: RefusalLimiter) {
  const order: string[] = [];
  const gates: Array<() => void> = [];
  const compare = (name: string, candidate?: Candidate) =>
    limiter.inTurn(async () => {
      await new Promise<void>((resolve) => gates.push(resolve));
      order.push(name);
      return name;
    }, candidate);
  const next = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    gates.shift()?.();
  };
  return { order, compare, next };
}

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

  it.each([
    { name: 'nothing refused', refusals: [], ask: ['a', 's'], spares: true },
    {
      name: 'the address over its limit for other sources',
      refusals: [
        ['a', 't'],
        ['a', 'u'],
      ],
      ask: ['a', 's'],
      spares: true,
    },
    {
      name: 'the source over its limit from other addresses',
      refusals: [
        ['b', 's'],
        ['c', 's'],
        ['d', 's'],
      ],
      ask: ['a', 's'],
      spares: true,
    },
    {
      name: 'this address refused wrong usernames for this source (no guess at its password)',
      refusals: [
        ['a', 's'],
        ['a', 's'],
        ['a', 's'],
      ],
      ask: ['a', 's'],
      spares: true,
    },
    {
      name: 'this address at its limit of guesses at this source',
      refusals: [
        ['a', 's', 'candidate'],
        ['a', 's', 'candidate'],
      ],
      ask: ['a', 's'],
      spares: false,
    },
  ])('spares a candidate: $name -> $spares', ({ refusals, ask, spares }) => {
    const limiter = createRefusalLimiter(LIMITS, () => 0);
    for (const [address, source, candidate] of refusals) limiter.refused(address!, source!, candidate === 'candidate');
    expect(limiter.spares(ask[0]!, ask[1]!)).toBe(spares);
  });

  it('gives the turn to candidates first, the one with the fewest refusals for its source first, and drops the worst placed when full', async () => {
    const limiter = createRefusalLimiter({ ...LIMITS, perAddress: 100, perSource: 100, queue: 2 }, () => 0);
    // 'flood' has refused for s twice, 'busy' once, for other sources; 'clean' never
    for (let i = 0; i < 2; i++) limiter.refused('flood', 's', true);
    limiter.refused('busy', 't', true);
    const { order, compare, next } = gated(limiter);
    const running = compare('running');
    const other = compare('other');
    const flood = compare('flood', { address: 'flood', source: 's' });
    const busy = compare('busy', { address: 'busy', source: 's' });
    // the candidates' line is full (2): 'clean' is placed better than 'flood', which is dropped
    const clean = compare('clean', { address: 'clean', source: 's' });
    await expect(flood).resolves.toEqual({ limited: true, retryAfterSeconds: 1, by: 'queue' });
    // placed no better than the last: refused at once
    await expect(compare('late', { address: 'flood', source: 's' })).resolves.toEqual({ limited: true, retryAfterSeconds: 1, by: 'queue' });
    for (const p of [running, clean, busy, other]) {
      await next();
      await p;
    }
    expect(order).toEqual(['running', 'clean', 'busy', 'other']);
  });

  it("places a clean source's sender before a flood guessing at other sources' passwords, as the counts stand when the turn is handed over", async () => {
    let t = 0;
    const limiter = createRefusalLimiter({ ...LIMITS, perAddress: 100, perSource: 100, queue: 8 }, () => t);
    const { order, compare, next } = gated(limiter);
    // a flood's first tries from four fresh addresses at a decoy's password, all placed before the
    // sender arrives, when nothing had been refused yet
    const running = compare('running', { address: 'f0', source: 'decoy' });
    const flood = [1, 2, 3].map((n) => compare(`f${n}`, { address: `f${n}`, source: 'decoy' }));
    const sender = compare('sender', { address: 'sender', source: 'valid' });
    // the first try is refused: the decoy has been guessed at, the valid source never
    limiter.refused('f0', 'decoy', true);
    t = 1;
    for (const p of [running, sender, ...flood]) {
      await next();
      await p;
    }
    expect(order).toEqual(['running', 'sender', 'f1', 'f2', 'f3']);
  });
});

describe('createRefusalLimiter: an address proven for its source before (proven-addresses.ts) goes before those never seen', () => {
  // a flood's first tries from fresh addresses at the source whose username it knows, placed
  // before the sender: without history they rank as the sender's first request does
  const flood = ['f1', 'f2', 'f3'].map((address) => ({ name: address, address, source: 'valid' }));
  it.each([
    {
      name: 'never seen: behind the first tries placed before it',
      proven: [],
      guesses: [],
      order: ['running', 'f1', 'f2', 'f3', 'sender'],
    },
    {
      name: 'proven for its source: before them',
      proven: [['sender', 'valid']],
      guesses: [],
      order: ['running', 'sender', 'f1', 'f2', 'f3'],
    },
    {
      name: 'proven for another source only: behind them',
      proven: [['sender', 'other']],
      guesses: [],
      order: ['running', 'f1', 'f2', 'f3', 'sender'],
    },
    {
      name: 'a proven address with a wrong guess at this source: behind the fresh ones (an attacker behind a proven proxy)',
      proven: [['sender', 'valid']],
      guesses: [['sender', 'valid']],
      order: ['running', 'f1', 'f2', 'f3', 'sender'],
    },
    {
      name: 'a proven address with wrong guesses at other sources only: still before them',
      proven: [['sender', 'valid']],
      guesses: [['sender', 'other']],
      order: ['running', 'sender', 'f1', 'f2', 'f3'],
    },
  ])('$name', async ({ proven, guesses, order: expected }) => {
    const known = new Set(proven.map(([a, s]) => `${a}/${s}`));
    const limiter = createRefusalLimiter(
      { ...LIMITS, perAddress: 100, perSource: 100, queue: 8 },
      () => 0,
      (a, s) => known.has(`${a}/${s}`),
    );
    for (const [address, source] of guesses) limiter.refused(address!, source!, true);
    const { order, compare, next } = gated(limiter);
    const all = [
      compare('running', { address: 'f0', source: 'valid' }),
      ...flood.map((f) => compare(f.name, f)),
      compare('sender', { address: 'sender', source: 'valid' }),
    ];
    // one turn at a time, whoever has it
    for (let i = 0; i < all.length; i++) await next();
    await Promise.all(all);
    expect(order).toEqual(expected);
  });

  /** A line of two, full of first tries from fresh addresses (f1, f2) behind the one running, and the sender coming last. */
  const fullLine = (proven: boolean) => {
    const limiter = createRefusalLimiter(
      { ...LIMITS, perAddress: 100, perSource: 100, queue: 2 },
      () => 0,
      (a, s) => proven && a === 'sender' && s === 'valid',
    );
    const { compare, next } = gated(limiter);
    const running = compare('running', { address: 'f0', source: 'valid' });
    const waiting = flood.slice(0, 2).map((f) => compare(f.name, f));
    const sender = compare('sender', { address: 'sender', source: 'valid' });
    return { running, waiting, sender, next };
  };

  it('when the line is full, a sender never seen is refused at once (placed no better than the last come)', async () => {
    const { sender } = fullLine(false);
    await expect(sender).resolves.toEqual({ limited: true, retryAfterSeconds: 1, by: 'queue' });
  });

  it('when the line is full, a proven sender takes the place of the last first try, and the next turn', async () => {
    const { running, waiting, sender, next } = fullLine(true);
    await expect(waiting[1]).resolves.toEqual({ limited: true, retryAfterSeconds: 1, by: 'queue' });
    await next();
    await expect(running).resolves.toBe('running');
    await next();
    await expect(sender).resolves.toBe('sender');
  });
});
