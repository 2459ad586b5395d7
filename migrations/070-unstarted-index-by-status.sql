-- migrate: no-transaction
-- Built CONCURRENTLY (as 064): a plain CREATE INDEX would hold off ingest's inserts for the build.

-- The sweeper's "published but never started" scan (events.findUnstarted) by the events still
-- RECEIVED instead of those without a workflow id. The index 052 made named workflow_id in its
-- predicate, and a column an index refers to keeps Postgres from updating a row in place (a HOT
-- update): prepare's one write to the event, recording its workflow id, then added an entry to
-- every index of webhook_event. Without it that write touches no index when the row's page has
-- room, about 0.2 ms of Postgres's CPU per event (docs/benchmarks.md, issue 26 continued). The
-- scan reads the RECEIVED events published before its cutoff and skips those with a workflow id
-- (an event in flight or in its retries), test/ingest/sweeper-index.test.ts.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_event_received_published_idx ON webhook_event (published_at) WHERE status = 'RECEIVED';
DROP INDEX CONCURRENTLY IF EXISTS webhook_event_unstarted_idx;
