-- The attempt log: one row per attempt of every delivery, append-only. webhook_delivery keeps the
-- latest state (attempts, last_*); this keeps the history an operator opens first: when each attempt
-- ran, how long it took, what the endpoint answered (first 4 KiB), and what came of it.
CREATE TABLE webhook_delivery_attempt (
  delivery_id     uuid NOT NULL REFERENCES webhook_delivery (id) ON DELETE CASCADE,
  attempt         integer NOT NULL,
  outcome         text NOT NULL,
  started_at      timestamptz NOT NULL,
  duration_ms     integer,
  response_status integer,
  response_body   text,
  error           text,
  PRIMARY KEY (delivery_id, attempt),
  CONSTRAINT webhook_delivery_attempt_outcome_chk CHECK (outcome IN ('SUCCESS', 'FAILED', 'RETRYING')),
  CONSTRAINT webhook_delivery_attempt_attempt_chk CHECK (attempt >= 1),
  CONSTRAINT webhook_delivery_attempt_duration_chk CHECK (duration_ms IS NULL OR duration_ms >= 0)
);

-- Append-only: a recorded attempt is history. Rows go only with their delivery (ON DELETE CASCADE).
CREATE FUNCTION webhook_delivery_attempt_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'webhook_delivery_attempt is append-only';
END;
$$;
CREATE TRIGGER webhook_delivery_attempt_no_update BEFORE UPDATE ON webhook_delivery_attempt
  FOR EACH ROW EXECUTE FUNCTION webhook_delivery_attempt_append_only();
