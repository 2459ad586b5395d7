import { contentEvent, type ContentEvent } from '../content/event-view.js';
import type { ExpressionCache } from '../content/expression-cache.js';
import type { CandidateEvent, SequenceEndpoint, SequenceJudge } from '../db/ordering.js';
import { encodeOrderingKey } from '../domain/ordering.js';

/**
 * The sequence an endpoint puts an event in, as its ordering_key column will store it, or false
 * when its filter refuses the event (no delivery). As prepare decides it (activities/prepare.ts):
 * a filter that fails or does not compile refuses; a key that fails or gives no string is the
 * no-key sequence; without a key expression the whole endpoint is one sequence.
 */
export function sequenceOf(expressions: ExpressionCache, endpoint: SequenceEndpoint, event: CandidateEvent): string | false {
  let view: ContentEvent | undefined;
  const seen = () => (view ??= contentEvent(event));
  if (endpoint.filter !== null) {
    const filter = expressions.filter(endpoint.filter);
    if (!filter.ok) return false;
    const outcome = filter.value.evaluate(seen());
    if ('error' in outcome || !outcome.matched) return false;
  }
  if (endpoint.keyCel === null) return encodeOrderingKey('');
  const key = expressions.orderingKey(endpoint.keyCel);
  if (!key.ok) return encodeOrderingKey(null);
  const outcome = key.value.keyOf(seen());
  return encodeOrderingKey('key' in outcome ? outcome.key : null);
}

/** How many candidates are read at a time, latest first: the nearest is the usual member (one busy key). */
const BATCHES = [4, 16, 64] as const;
const LAST_BATCH = 256;

/**
 * Which earlier events not prepared yet hold an ordered delivery back (db/ordering.ts): those its
 * endpoint puts in the delivery's own sequence. Each event is judged once per endpoint (and
 * expressions) on this worker: a burst's turn checks ask about the same events again and again.
 * An event no longer there (deleted) joins nothing.
 */
export function createSequenceJudge({ expressions, max = 20_000 }: { expressions: ExpressionCache; max?: number }): SequenceJudge {
  const known = new Map<string, string | false>();
  return {
    async firstMember(endpoint, key, eventIds, load) {
      // the whole endpoint one sequence, no filter: every event joins it
      if (endpoint.filter === null && endpoint.keyCel === null) return eventIds.length > 0 ? 0 : -1;
      const tag = `${endpoint.id}\n${endpoint.keyCel ?? ''}\n${endpoint.filter ?? ''}\n`;
      for (let from = 0, b = 0; from < eventIds.length; b++) {
        const batch = eventIds.slice(from, from + (BATCHES[b] ?? LAST_BATCH));
        const missing = batch.filter((id) => !known.has(tag + id));
        if (missing.length > 0) {
          if (known.size + missing.length > max) known.clear();
          for (const e of await load(missing)) known.set(tag + e.id, sequenceOf(expressions, endpoint, e));
        }
        const i = batch.findIndex((id) => known.get(tag + id) === key);
        if (i >= 0) return from + i;
        from += batch.length;
      }
      return -1;
    },
  };
}
