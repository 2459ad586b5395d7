/**
 * How a delivery's sequence is written in webhook_delivery.ordering_key (migration 081,
 * docs/ordering.md): 'k' and the key, or '-' for the endpoint's sequence of events whose key
 * expression failed or gave no string. The prefix keeps the two apart (every string is a possible
 * key) in one column that one equality and one index compare. NULL: prepare has not decided yet.
 */
const KEYED = 'k';
export const NO_KEY_SEQUENCE = '-';

/** A key (null: the no-key sequence) as the column stores it. */
export const encodeOrderingKey = (key: string | null): string => (key === null ? NO_KEY_SEQUENCE : `${KEYED}${key}`);

/** The column's value as a key: null for the no-key sequence, undefined while undecided. */
export function decodeOrderingKey(stored: string | null): string | null | undefined {
  if (stored === null) return undefined;
  return stored.startsWith(KEYED) ? stored.slice(KEYED.length) : null;
}
