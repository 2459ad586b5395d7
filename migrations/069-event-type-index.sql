-- migrate: no-transaction
-- Built CONCURRENTLY (as 064): a plain CREATE INDEX would hold off ingest's inserts for the build.

-- The admin API's type filters: GET /api/deliveries?eventType= (the console's bulk replay dry run)
-- and GET /api/events?type=. Without it Postgres reads every event to find a type's few (a
-- sequential scan of webhook_event, test/api/listing.test.ts's EXPLAIN); with it, the type's
-- events newest first, and their deliveries through webhook_delivery_event_endpoint_uq.
DROP INDEX CONCURRENTLY IF EXISTS webhook_event_type_received_idx;
CREATE INDEX CONCURRENTLY webhook_event_type_received_idx ON webhook_event (event_type, received_at DESC, id DESC);
