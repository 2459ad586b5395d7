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

/**
 * The run of an ordered delivery its event's run left to its key's chain (docs/ordering.md, "A
 * waiting delivery costs its run nothing"): started, with the wake-up as its first signal, only
 * when the delivery needs a run of its own (its handoff failed and is retried, was not made, or
 * its wake-up came from elsewhere). Its waiter in Postgres is this id, so whoever wakes it knows
 * to start it (signal-with-start).
 */
export const continuationWorkflowId = (eventId: string, deliveryId: string): string => `${eventId}:turn:${deliveryId}`;

/** The event and delivery of a continuation's workflow id; undefined for any other run. */
export function continuedDelivery(workflowId: string): { eventId: string; deliveryId: string } | undefined {
  const at = workflowId.indexOf(':turn:');
  if (at <= 0) return undefined;
  const eventId = workflowId.slice(0, at);
  const deliveryId = workflowId.slice(at + ':turn:'.length);
  return deliveryId === '' || deliveryId.includes(':') ? undefined : { eventId, deliveryId };
}
