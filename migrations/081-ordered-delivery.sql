-- migrate: no-transaction
-- Ordered delivery per key (issue 41; docs/ordering.md). Every statement is safe to run again
-- after a failure half-way (IF NOT EXISTS), and the indexes are built CONCURRENTLY (as 064, 076):
-- ingest's inserts and the workers' writes do not wait for them.

-- The order in which ingest accepted the events: a sequence value the insert takes in its own
-- transaction (the column's default), so a sender that waits for its 200 before the next event
-- keeps its order, and a duplicate (ON CONFLICT DO NOTHING) keeps its first. The default is set
-- after the column is added: existing events keep NULL (not ordered), and the table is not
-- rewritten.
CREATE SEQUENCE IF NOT EXISTS webhook_event_position_seq AS bigint;
ALTER TABLE webhook_event ADD COLUMN IF NOT EXISTS position bigint;
ALTER TABLE webhook_event ALTER COLUMN position SET DEFAULT nextval('webhook_event_position_seq');
ALTER SEQUENCE webhook_event_position_seq OWNED BY webhook_event.position;

-- WebhookEndpoint spec.ordering: the key's CEL (NULL: the whole endpoint is one sequence) and the
-- policy for a delivery that ends FAILED; ordering_on_failure NULL: not ordered.
ALTER TABLE webhook_endpoint ADD COLUMN IF NOT EXISTS ordering_key_cel text,
  ADD COLUMN IF NOT EXISTS ordering_on_failure text;
ALTER TABLE webhook_endpoint DROP CONSTRAINT IF EXISTS webhook_endpoint_ordering_chk;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_ordering_chk
  CHECK (ordering_on_failure IN ('Block', 'Skip') AND (ordering_key_cel IS NULL OR char_length(ordering_key_cel) BETWEEN 1 AND 4096)
         OR ordering_on_failure IS NULL AND ordering_key_cel IS NULL);

-- An ordered delivery: its event's position, its sequence (ordering_key: 'k' followed by the key,
-- '-' the sequence of the events whose key failed, NULL while prepare has not decided it), whether
-- it stopped holding its key without a SUCCESS (FAILED under Skip, skipped by an operator,
-- revoked), and while it waits for its turn: the workflow that waits, the delivery it waits
-- behind (NULL: behind an event not prepared yet) and since when; ordering_blocked_at: since when
-- it holds its key after it FAILED (the blocked keys an endpoint shows, ordering.key_blocked).
ALTER TABLE webhook_delivery ADD COLUMN IF NOT EXISTS ordering_position bigint,
  ADD COLUMN IF NOT EXISTS ordering_key text,
  ADD COLUMN IF NOT EXISTS ordering_skipped boolean NOT NULL DEFAULT false,
  ADD COLUMN IF NOT EXISTS ordering_waiter text,
  ADD COLUMN IF NOT EXISTS ordering_behind uuid,
  ADD COLUMN IF NOT EXISTS ordering_waiting_since timestamptz,
  ADD COLUMN IF NOT EXISTS ordering_blocked_at timestamptz;

-- The deliveries that hold their key, per sequence: a turn is the absence of one earlier. A row
-- leaves the index when it succeeds or is skipped, so a long key's history is not walked.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_delivery_ordering_holds_idx
  ON webhook_delivery (endpoint_id, ordering_key, ordering_position)
  WHERE ordering_position IS NOT NULL AND NOT ordering_skipped AND status <> 'SUCCESS';

-- The waiting deliveries, for the consumer's ordering waker (temporal/ordering-waker.ts).
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_delivery_ordering_waiting_idx
  ON webhook_delivery (ordering_waiting_since) WHERE ordering_waiter IS NOT NULL;

-- Events not finished yet, by position: an ordered delivery waits for the earlier ones of its
-- source not prepared yet (their keys are not known before prepare; workflow_id IS NULL is checked
-- on the row). Not a predicate on workflow_id: a column of an index's predicate makes prepare's
-- write of it a non-HOT update with an entry in every index (070 removed the last such one).
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_event_unprepared_position_idx
  ON webhook_event (source, position) WHERE status = 'RECEIVED' AND position IS NOT NULL;
