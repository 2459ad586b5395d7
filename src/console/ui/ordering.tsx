import type { Delivery } from '../api/types.js';
import { to } from '../routes.js';
import { Code } from './common-components.js';

// Ordered delivery (docs/ordering.md) as the console shows it: where a delivery stands in the
// sequence of its key, and what it waits behind.

/** "waiting behind delivery <id>", the id a link to that delivery (`short`: its first 8 characters, for a table). */
export function WaitingBehind({ id, short = false }: { id: string; short?: boolean }) {
  return (
    <span class="waiting-behind">
      waiting behind delivery{' '}
      <a href={to.delivery(id)} aria-label={`waiting behind delivery ${id}`}>
        <Code>{short ? id.slice(0, 8) : id}</Code>
      </a>
    </span>
  );
}

/** A FAILED ordered delivery that still holds its key: the ones behind it wait until it is replayed or skipped. */
export const holdsItsKey = (d: Delivery): boolean => d.status === 'FAILED' && d.ordering !== null && !d.ordering.skipped;

/** The key as a person reads it: '' is the endpoint's one sequence, null the sequence of events without a key. */
export function OrderingKey({ value }: { value: string | null }) {
  if (value === null) return <span>none: its key expression failed or gave no string (the sequence of such events)</span>;
  if (value === '') return <span>the whole endpoint (one sequence)</span>;
  return <Code>{value}</Code>;
}

/**
 * Where an ordered delivery stands: waiting behind another, holding its key, skipped, or its place.
 * The position is the event's number in ingest's order, one sequence for every event: "position 5"
 * alone read as the fifth of its key.
 */
export function OrderingState({ d }: { d: Delivery & { ordering: NonNullable<Delivery['ordering']> } }) {
  const o = d.ordering;
  const place = `event #${o.position} in ingest's order`;
  if (o.waitingBehind !== null && d.status === 'PENDING') return <WaitingBehind id={o.waitingBehind} />;
  if (o.skipped) return <span>skipped: it no longer holds its key ({place})</span>;
  if (d.status === 'FAILED') return <span>holds its key: the deliveries of its key behind it wait ({place})</span>;
  return <span>{place}</span>;
}
