-- Endpoint health (issue 13, part 3; docs/endpoint-health.md). An endpoint may be disabled after
-- auto_disable_after deliveries in a row ended FAILED (0 = never). While disabled, its deliveries
-- are FAILED at once without a request and held (redrive_on_enable) to be re-delivered, once,
-- oldest first, when it is enabled again (POST /api/endpoints/{id}/enable or the annotation
-- webhookfanout.io/enable).
ALTER TABLE webhook_endpoint
  ADD COLUMN auto_disable_after integer NOT NULL DEFAULT 0,
  -- deliveries in a row that ended FAILED; a SUCCESS resets it. Counted in the statement that
  -- settles the delivery, under the endpoint row's lock, so two workers can not lose a count.
  ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0,
  -- not NULL: disabled since then
  ADD COLUMN disabled_at timestamptz,
  -- the value of the annotation webhookfanout.io/enable last acted on (operator and dev mode)
  ADD COLUMN enable_annotation text,
  ADD CONSTRAINT webhook_endpoint_auto_disable_after_chk CHECK (auto_disable_after >= 0),
  ADD CONSTRAINT webhook_endpoint_consecutive_failures_chk CHECK (consecutive_failures >= 0);

ALTER TABLE webhook_delivery
  -- FAILED because its endpoint was disabled: re-delivered when the endpoint is enabled again
  ADD COLUMN redrive_on_enable boolean NOT NULL DEFAULT false,
  -- the replay run that re-delivers it, chosen in the statement that takes it off hold; started
  -- (again, under the same id) until redrive_started_at says the start went through
  ADD COLUMN redrive_workflow_id text,
  ADD COLUMN redrive_started_at timestamptz;
-- redrive_on_enable may stay set while a manual replay has the row PENDING: its outcome rewrites the
-- flag, and a replay that could not start puts the row back to FAILED still held, so nothing is lost.

-- the redriver's scans: held deliveries of an endpoint (taken in the order their events were
-- received); redrives in flight
CREATE INDEX webhook_delivery_redrive_held_idx ON webhook_delivery (endpoint_id) WHERE redrive_on_enable;
CREATE INDEX webhook_delivery_redrive_inflight_idx ON webhook_delivery (endpoint_id)
  WHERE redrive_workflow_id IS NOT NULL AND status = 'PENDING';
