-- The console's overview charts (GET /api/stats/timeseries, docs/console.md): time-bucketed
-- counts read from these indexes alone (index-only scans), never from the tables' rows, which
-- carry payloads and response bodies. A range of a day on millions of events reads the narrow
-- index entries of that day.

-- events received per source per bucket
CREATE INDEX webhook_event_received_source_idx ON webhook_event (received_at) INCLUDE (source);

-- deliveries by outcome, failure rate and latency (completed_at - created_at) per endpoint, per
-- bucket of the time they ended; PENDING deliveries are not in it
CREATE INDEX webhook_delivery_completed_idx ON webhook_delivery (completed_at) INCLUDE (endpoint_id, status, created_at)
  WHERE completed_at IS NOT NULL;
