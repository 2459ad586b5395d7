-- Webhook fanout: inbound credentials, downstream endpoints, received events, deliveries.
-- Applied by `webhook-fanout migrate` through knex (recorded in knex_migrations).

CREATE TABLE webhook_inbound_credential (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  source         text NOT NULL,
  username       text NOT NULL,
  password_hash  text NOT NULL,
  -- where to read the external event id / type from; NULL = defaults (body id/type, then headers)
  event_id_rule  jsonb,
  event_type_rule jsonb,
  -- owner of the row: the custom resource's uid, or "manifest:<ns>/<name>" in dev mode
  resource_uid   text UNIQUE,
  resource_name  text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_inbound_credential_source_uq UNIQUE (source),
  CONSTRAINT webhook_inbound_credential_source_chk CHECK (source ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
  CONSTRAINT webhook_inbound_credential_hash_chk CHECK (password_hash ~ '^\$2[aby]\$')
);

CREATE TABLE webhook_endpoint (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name            text NOT NULL,
  source          text NOT NULL,
  event_type      text,
  url             text NOT NULL,
  method          text NOT NULL DEFAULT 'POST',
  auth_type       text NOT NULL DEFAULT 'NONE',
  auth_username   text,
  auth_secret     text,
  signing_secret  text,
  custom_headers  jsonb NOT NULL DEFAULT '{}'::jsonb,
  max_attempts    integer NOT NULL DEFAULT 5,
  timeout_seconds integer NOT NULL DEFAULT 10,
  -- 4xx codes this endpoint opts in to retrying (e.g. 408, 429)
  retry_on_status integer[] NOT NULL DEFAULT '{}',
  active          boolean NOT NULL DEFAULT true,
  resource_uid    text UNIQUE,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_endpoint_method_chk CHECK (method IN ('POST', 'PUT', 'PATCH')),
  CONSTRAINT webhook_endpoint_auth_type_chk CHECK (auth_type IN ('NONE', 'BASIC', 'BEARER', 'HMAC')),
  CONSTRAINT webhook_endpoint_basic_chk CHECK (auth_type <> 'BASIC' OR (auth_username IS NOT NULL AND auth_secret IS NOT NULL)),
  CONSTRAINT webhook_endpoint_bearer_chk CHECK (auth_type <> 'BEARER' OR auth_secret IS NOT NULL),
  CONSTRAINT webhook_endpoint_hmac_chk CHECK (auth_type <> 'HMAC' OR signing_secret IS NOT NULL),
  CONSTRAINT webhook_endpoint_headers_chk CHECK (jsonb_typeof(custom_headers) = 'object'),
  CONSTRAINT webhook_endpoint_max_attempts_chk CHECK (max_attempts BETWEEN 1 AND 50),
  CONSTRAINT webhook_endpoint_timeout_chk CHECK (timeout_seconds BETWEEN 1 AND 120),
  CONSTRAINT webhook_endpoint_url_chk CHECK (url ~* '^https?://')
);

-- prepare(): active endpoints of a source, specific type or catch-all
CREATE INDEX webhook_endpoint_routing_idx ON webhook_endpoint (source, event_type) WHERE active;

CREATE TABLE webhook_event (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  source            text NOT NULL,
  external_event_id text,
  event_type        text,
  payload           bytea NOT NULL,
  content_type      text,
  headers           jsonb NOT NULL DEFAULT '{}'::jsonb,
  status            text NOT NULL DEFAULT 'RECEIVED',
  workflow_id       text,
  published_at      timestamptz,
  received_at       timestamptz NOT NULL DEFAULT now(),
  completed_at      timestamptz,
  updated_at        timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_event_status_chk CHECK (status IN ('RECEIVED', 'COMPLETED', 'PARTIAL', 'FAILED'))
);

-- idempotency: one event per (source, external id); events without an external id are not deduplicated
CREATE UNIQUE INDEX webhook_event_source_external_id_uq
  ON webhook_event (source, external_event_id) WHERE external_event_id IS NOT NULL;
-- the sweeper's scan for accepted-but-unpublished events
CREATE INDEX webhook_event_unpublished_idx ON webhook_event (received_at) WHERE published_at IS NULL;
-- ... and for published events whose workflow never started (e.g. their message dead-lettered
-- while Temporal was down)
CREATE INDEX webhook_event_unstarted_idx ON webhook_event (published_at) WHERE workflow_id IS NULL;
-- admin listings, newest first, by source / status
CREATE INDEX webhook_event_received_idx ON webhook_event (received_at DESC, id DESC);
CREATE INDEX webhook_event_source_received_idx ON webhook_event (source, received_at DESC, id DESC);
CREATE INDEX webhook_event_status_received_idx ON webhook_event (status, received_at DESC, id DESC);

CREATE TABLE webhook_delivery (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  event_id             uuid NOT NULL REFERENCES webhook_event (id) ON DELETE CASCADE,
  endpoint_id          uuid NOT NULL REFERENCES webhook_endpoint (id),
  status               text NOT NULL DEFAULT 'PENDING',
  attempts             integer NOT NULL DEFAULT 0,
  last_response_status integer,
  last_response_body   text,
  last_error           text,
  last_attempt_at      timestamptz,
  completed_at         timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_delivery_event_endpoint_uq UNIQUE (event_id, endpoint_id),
  CONSTRAINT webhook_delivery_status_chk CHECK (status IN ('PENDING', 'SUCCESS', 'FAILED')),
  CONSTRAINT webhook_delivery_attempts_chk CHECK (attempts >= 0)
);

CREATE INDEX webhook_delivery_status_created_idx ON webhook_delivery (status, created_at DESC, id DESC);
CREATE INDEX webhook_delivery_endpoint_created_idx ON webhook_delivery (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_delivery_created_idx ON webhook_delivery (created_at DESC, id DESC);
