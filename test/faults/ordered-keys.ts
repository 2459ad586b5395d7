import type { ServerResponse } from 'node:http';
import { expect } from 'vitest';
import type { Db } from '../../src/db/knex.js';
import type { Repositories } from '../../src/db/repositories.js';
import { addEndpoint } from '../fanout/support/harness.js';
import { startReceiver, type Receiver, type RecordedRequest } from '../support/receiver.js';

/**
 * An ordered endpoint (docs/ordering.md) in a fault run: the receiver behind it, and what a user of
 * ordering checks once the faults are over. The senders put `key` and `seq` in each event's body
 * and send a key's events one after another, each after the 200 of the one before, so each key has
 * an order to keep: the order of `accepted`.
 */

export interface KeyedBody {
  key: string;
  seq: number;
}
export const keyedBodyOf = (r: RecordedRequest): KeyedBody => JSON.parse(r.body.toString('utf8')) as KeyedBody;

/** per key, the accepted events in the order their sender sent them */
export type AcceptedByKey = Map<string, Array<{ seq: number; eventId: string }>>;

export interface OrderedEndpoint {
  endpointId: string;
  receiver: Receiver;
  /** the status each request was answered with (none: its client went away first) */
  answered: Map<RecordedRequest, number>;
}

/**
 * An endpoint of source `shop` (events of `eventType`, or all) ordered by `event.data.key` (Block),
 * and its receiver: it answers 500
 * to a seeded pseudo-random share `failRate` of the requests (a failing run can be read again), 200
 * to the others, and a request whose client was killed ends when its connection closes. Enough
 * attempts that the 500s never use a delivery's up (a FAILED delivery would block its key).
 */
export async function addOrderedEndpoint(
  repos: Repositories,
  name: string,
  failRate: number,
  eventType: string | null = null,
): Promise<OrderedEndpoint> {
  let state = 41;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  const answered = new Map<RecordedRequest, number>();
  const receiver = await startReceiver({
    handler: (rec: RecordedRequest, res: ServerResponse) => {
      res.on('close', () => {
        rec.finishedAt ??= Date.now();
      });
      const status = random() < failRate ? 500 : 200;
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(status === 200 ? 'ok' : 'down');
        rec.finishedAt = Date.now();
        answered.set(rec, status);
      }, 5);
    },
  });
  const endpointId = await addEndpoint(repos, {
    source: 'shop',
    url: receiver.url,
    name,
    eventType,
    maxAttempts: 30,
    timeoutSeconds: 5,
    ordering: { key: 'event.data.key', onFailure: 'Block' },
  });
  return { endpointId, receiver, answered };
}

/**
 * For the ordered endpoint, every accepted event delivered (its delivery SUCCESS), one SUCCESS per
 * delivery in the attempt log (a re-sent request, its worker killed before it recorded the answer,
 * is at-least-once at the receiver, never a second SUCCESS), and per key at the receiver: the
 * requests never go back, one in flight at a time, and the 200s, once each, in the order accepted.
 * Returns how many events and requests there were, and how many 200s were sent again.
 */
export async function expectKeysInOrder(
  db: Db,
  { endpointId, receiver, answered }: OrderedEndpoint,
  accepted: AcceptedByKey,
): Promise<{ events: number; requests: number; resent: number }> {
  const ids = [...accepted.values()].flatMap((list) => list.map((a) => a.eventId));
  const deliveries = await db('webhook_delivery').where('endpoint_id', endpointId).whereIn('event_id', ids).select('id', 'status');
  expect(deliveries.filter((d: { status: string }) => d.status !== 'SUCCESS')).toEqual([]);
  expect(deliveries).toHaveLength(ids.length);
  const twice = await db('webhook_delivery_attempt as a')
    .join('webhook_delivery as d', 'd.id', 'a.delivery_id')
    .where('d.endpoint_id', endpointId)
    .whereIn('d.event_id', ids)
    .where('a.outcome', 'SUCCESS')
    .groupBy('a.delivery_id')
    .havingRaw('count(*) > 1')
    .select('a.delivery_id');
  expect(twice).toEqual([]);

  let resent = 0;
  for (const [key, sent] of accepted) {
    const requests = receiver.requests.filter((r) => keyedBodyOf(r).key === key).sort((a, b) => a.startedAt - b.startedAt);
    for (let i = 1; i < requests.length; i++) {
      const previous = requests[i - 1]!;
      const current = requests[i]!;
      const [was, is] = [keyedBodyOf(previous).seq, keyedBodyOf(current).seq];
      expect(is, `${key}: went back from ${was} to ${is}`).toBeGreaterThanOrEqual(was);
      expect(current.startedAt, `${key}: seq ${is} began while ${was} was in flight`).toBeGreaterThanOrEqual(
        previous.finishedAt ?? Infinity,
      );
    }
    const ok = requests.filter((r) => answered.get(r) === 200).map((r) => keyedBodyOf(r).seq);
    const once = ok.filter((seq, i) => i === 0 || ok[i - 1] !== seq);
    resent += ok.length - once.length;
    expect(once, key).toEqual(sent.map((a) => a.seq));
  }
  return { events: ids.length, requests: receiver.requests.length, resent };
}
