-- migrate: no-transaction
-- Built CONCURRENTLY (as 064): a plain CREATE INDEX would hold off ingest's inserts for the build.
-- Each new index is built before the ones it replaces are dropped, so no read goes without one.

-- Fewer index entries per event (issue 36): every insert added an entry to each of nine indexes
-- of webhook_event, and prepare's or finishEvent's write that is not a HOT update to each again.
-- Each index's price per insert, and every read's plan before and after on 200 000 events:
-- docs/benchmarks.md, "The indexes of webhook_event" (npm run bench:indexes).

-- One index on (received_at, id) carrying source, in place of two: the admin listings newest
-- first (a backward scan), retention's delete pass and oldest-row probe, and the console's events
-- per source and bucket, which reads received_at and source from the index alone (057's index).
DROP INDEX CONCURRENTLY IF EXISTS webhook_event_received_id_source_idx;
CREATE INDEX CONCURRENTLY webhook_event_received_id_source_idx ON webhook_event (received_at, id) INCLUDE (source);

-- The status filter of the admin listing for the outcomes a person looks for: PARTIAL and FAILED
-- events only, so an insert (RECEIVED) and a success (COMPLETED) add no entry. RECEIVED events are
-- found through the sweeper's index (all of them, the events in flight), COMPLETED ones, most
-- events, by walking the listing's index newest first.
DROP INDEX CONCURRENTLY IF EXISTS webhook_event_unsuccessful_received_idx;
CREATE INDEX CONCURRENTLY webhook_event_unsuccessful_received_idx ON webhook_event (status, received_at, id)
  WHERE status IN ('PARTIAL', 'FAILED');

-- Retention's payload pass takes settled events only (SETTLED, db/retention-queries.ts): an
-- event enters this index when it is settled (finishEvent's write, which adds entries anyway),
-- not at its insert.
DROP INDEX CONCURRENTLY IF EXISTS webhook_event_settled_payload_kept_idx;
CREATE INDEX CONCURRENTLY webhook_event_settled_payload_kept_idx ON webhook_event (received_at, id)
  WHERE payload_dropped_at IS NULL AND status <> 'RECEIVED';

DROP INDEX CONCURRENTLY IF EXISTS webhook_event_received_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_event_received_source_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_event_status_received_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_event_payload_kept_idx;
