-- Retention (issue 24; docs/deploy.md "Retention"). Columns only: nullable, no default, so each
-- ADD COLUMN is a catalog change that rewrites nothing, however large the tables are.

-- Set when the retention job dropped the event's payload and headers (RETENTION_PAYLOAD_MAX_AGE):
-- the event, its deliveries and their attempts stay; payload is then empty and headers '{}'. A
-- replay of such an event is refused (409 payload_dropped): there is nothing left to send.
ALTER TABLE webhook_event ADD COLUMN payload_dropped_at timestamptz;

-- A source's own ages (InboundCredential spec.retention), in seconds: NULL = the global setting
-- (RETENTION_MAX_AGE / RETENTION_PAYLOAD_MAX_AGE), 0 = keep forever whatever the global setting.
ALTER TABLE webhook_inbound_credential
  ADD COLUMN retention_max_age_seconds bigint,
  ADD COLUMN retention_payload_max_age_seconds bigint,
  ADD CONSTRAINT webhook_inbound_credential_retention_chk
    CHECK ((retention_max_age_seconds IS NULL OR retention_max_age_seconds >= 0)
       AND (retention_payload_max_age_seconds IS NULL OR retention_payload_max_age_seconds >= 0));
