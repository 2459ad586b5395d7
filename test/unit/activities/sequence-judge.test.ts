import { describe, expect, it } from 'vitest';
import { createSequenceJudge, sequenceOf } from '../../../src/activities/sequence-judge.js';
import { createExpressionCache } from '../../../src/content/expression-cache.js';
import type { CandidateEvent, SequenceEndpoint } from '../../../src/db/ordering.js';
import { encodeOrderingKey } from '../../../src/domain/ordering.js';

const event = (id: string, data: unknown): CandidateEvent => ({
  id,
  source: 'stripe',
  eventType: 'customer.updated',
  externalEventId: id,
  receivedAt: new Date(0),
  headers: {},
  payload: Buffer.from(typeof data === 'string' ? data : JSON.stringify(data)),
});
const endpoint = (e: Partial<SequenceEndpoint>): SequenceEndpoint => ({ id: 'ep', keyCel: null, filter: null, ...e });

describe('the sequence an endpoint puts an earlier event in (as prepare will)', () => {
  const expressions = createExpressionCache();
  it.each<{ name: string; ep: Partial<SequenceEndpoint>; data: unknown; want: string | false }>([
    { name: 'no key expression: the whole endpoint', ep: {}, data: { c: 'a' }, want: encodeOrderingKey('') },
    { name: 'its key', ep: { keyCel: 'event.data.c' }, data: { c: 'a' }, want: encodeOrderingKey('a') },
    { name: 'a key that is no string: the no-key sequence', ep: { keyCel: 'event.data.c' }, data: { c: 1 }, want: encodeOrderingKey(null) },
    { name: 'a key that fails: the no-key sequence', ep: { keyCel: 'event.data.c' }, data: {}, want: encodeOrderingKey(null) },
    {
      name: 'a body that is not JSON: the no-key sequence',
      ep: { keyCel: 'event.data.c' },
      data: 'not json',
      want: encodeOrderingKey(null),
    },
    {
      name: 'a key that does not compile: the no-key sequence',
      ep: { keyCel: 'event.data.(' },
      data: { c: 'a' },
      want: encodeOrderingKey(null),
    },
    {
      name: 'refused by its filter: none',
      ep: { keyCel: 'event.data.c', filter: 'event.data.keep' },
      data: { c: 'a', keep: false },
      want: false,
    },
    {
      name: 'accepted by its filter',
      ep: { keyCel: 'event.data.c', filter: 'event.data.keep' },
      data: { c: 'a', keep: true },
      want: encodeOrderingKey('a'),
    },
    { name: 'a filter that fails refuses', ep: { filter: 'event.data.missing.x' }, data: {}, want: false },
    { name: 'a filter that does not compile refuses', ep: { filter: 'event.data.(' }, data: {}, want: false },
  ])('$name', ({ ep, data, want }) => {
    expect(sequenceOf(expressions, endpoint(ep), event('e', data))).toBe(want);
  });
});

describe('the judge: the first earlier event (latest first) that joins the sequence', () => {
  const keyed = endpoint({ keyCel: 'event.data.c' });
  const events = new Map(
    [event('e1', { c: 'a' }), event('e2', { c: 'b' }), event('e3', { c: 'b' }), event('e4', { c: 'a' })].map((e) => [e.id, e]),
  );
  const loader = () => {
    const asked: string[][] = [];
    const load = (ids: readonly string[]) => {
      asked.push([...ids]);
      return Promise.resolve(ids.flatMap((id) => events.get(id) ?? []));
    };
    return { asked, load };
  };

  it.each<{ name: string; ep: SequenceEndpoint; key: string; ids: string[]; want: number }>([
    { name: 'none earlier', ep: keyed, key: encodeOrderingKey('a'), ids: [], want: -1 },
    { name: 'only other keys', ep: keyed, key: encodeOrderingKey('a'), ids: ['e3', 'e2'], want: -1 },
    { name: 'the latest of its key', ep: keyed, key: encodeOrderingKey('b'), ids: ['e4', 'e3', 'e2', 'e1'], want: 1 },
    { name: 'an event no longer there joins nothing', ep: keyed, key: encodeOrderingKey('a'), ids: ['gone', 'e1'], want: 1 },
    { name: 'the whole endpoint one sequence: the latest', ep: endpoint({}), key: encodeOrderingKey(''), ids: ['e3', 'e1'], want: 0 },
  ])('$name', async ({ ep, key, ids, want }) => {
    const judge = createSequenceJudge({ expressions: createExpressionCache() });
    expect(await judge.firstMember(ep, key, ids, loader().load)).toBe(want);
  });

  it('reads each event once per endpoint and expressions, the nearest first', async () => {
    const judge = createSequenceJudge({ expressions: createExpressionCache() });
    const { asked, load } = loader();
    const ids = ['e4', 'e3', 'e2', 'e1', 'gone'];
    expect(await judge.firstMember(keyed, encodeOrderingKey('x'), ids, load)).toBe(-1);
    expect(asked).toEqual([['e4', 'e3', 'e2', 'e1'], ['gone']]);
    expect(await judge.firstMember(keyed, encodeOrderingKey('a'), ids, load)).toBe(0);
    expect(asked).toHaveLength(2);
    // another key expression judges them again
    expect(await judge.firstMember({ ...keyed, keyCel: 'event.data.d' }, encodeOrderingKey('a'), ['e1'], load)).toBe(-1);
    expect(asked).toHaveLength(3);
  });
});
