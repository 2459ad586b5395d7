-- The client addresses a source's credential has been proven from (issue 45, docs/sources.md,
-- "What wrong passwords may cost"): a freshly started ingest loads the recent ones, and its
-- wrong-password limiter places a candidate from such an address for that source before those from
-- addresses never seen, so that a restart (or a rollout) during a flood does not leave a known
-- sender waiting behind the flood's first tries. Only which address sent a valid credential for which
-- source, and when: nothing secret, nothing derived from a password. Written by ingest at most
-- once an hour per pair and process; rows older than INGEST_PROVEN_ADDRESS_DAYS are deleted by the
-- retention job. A new table: no lock on any existing one.
CREATE TABLE webhook_proven_address (
  source text NOT NULL,
  address text NOT NULL,
  proven_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, address)
);

-- what ingest loads (the most recent first) and what the retention job deletes (the oldest)
CREATE INDEX webhook_proven_address_proven_at_idx ON webhook_proven_address (proven_at);
