-- migrate: no-transaction
-- Built CONCURRENTLY: on a database of a year of events a plain CREATE INDEX would hold off every
-- insert (ingest answers 503) for as long as the build takes. Outside a transaction, one
-- statement at a time; a build that failed half-way leaves an INVALID index, dropped first here
-- when the migration runs again.

-- The payload pass (RETENTION_PAYLOAD_MAX_AGE) walks the events that still carry a payload, oldest
-- first. Without it each pass would read again, from the oldest row, every event whose payload is
-- already gone: a year of rows to find the few hours that became due. The delete pass walks
-- webhook_event_received_idx; the deliveries of an event are found through
-- webhook_delivery_event_endpoint_uq and their attempts through the attempt log's primary key.
DROP INDEX CONCURRENTLY IF EXISTS webhook_event_payload_kept_idx;
CREATE INDEX CONCURRENTLY webhook_event_payload_kept_idx ON webhook_event (received_at, id) WHERE payload_dropped_at IS NULL;
