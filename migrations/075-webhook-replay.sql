-- WebhookReplay (issue 34; docs/operator.md "WebhookReplay"): a replay a resource asked for, kept
-- by the resource's uid so that it runs once whatever restarts, leader changes or re-applies
-- happen, with the deliveries it matched when it began (a snapshot: a delivery that fails again
-- during the replay is not picked up a second time).
CREATE TABLE webhook_replay (
  uid text PRIMARY KEY,
  generation bigint NOT NULL,
  namespace text NOT NULL,
  name text NOT NULL,
  -- the spec as it began (compared on re-creation: the same namespace, name and spec is not replayed again)
  spec jsonb NOT NULL,
  endpoint_id uuid,
  dry_run boolean NOT NULL,
  phase text NOT NULL CHECK (phase IN ('Running', 'Complete', 'Failed')),
  -- Complete: Replayed, DryRun or AlreadyReplayed; Failed: EndpointNotFound
  reason text NOT NULL,
  message text NOT NULL DEFAULT '',
  matched integer NOT NULL DEFAULT 0,
  -- matched deliveries not replayed: the event's payload was dropped by retention, or another
  -- replay took the delivery first
  skipped integer NOT NULL DEFAULT 0,
  -- frozen when it finishes; while Running they are counted from the deliveries
  started integer NOT NULL DEFAULT 0,
  succeeded integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX webhook_replay_namespace_name ON webhook_replay (namespace, name);

-- queued -> reopened (the delivery back to PENDING, the run's id chosen) -> started; or skipped
CREATE TABLE webhook_replay_delivery (
  replay_uid text NOT NULL REFERENCES webhook_replay (uid) ON DELETE CASCADE,
  delivery_id uuid NOT NULL REFERENCES webhook_delivery (id) ON DELETE CASCADE,
  event_id uuid NOT NULL,
  state text NOT NULL CHECK (state IN ('queued', 'reopened', 'started', 'skipped')),
  workflow_id text,
  PRIMARY KEY (replay_uid, delivery_id)
);
CREATE INDEX webhook_replay_delivery_state ON webhook_replay_delivery (replay_uid, state, event_id);
-- a delivery deleted with its event by retention goes with its replay rows
CREATE INDEX webhook_replay_delivery_delivery ON webhook_replay_delivery (delivery_id);
