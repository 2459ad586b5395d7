-- The admin API's bulk replays (POST /api/deliveries/replay), so that the end of one is told as
-- replay.completed (docs/operations-events.md) like a WebhookReplay's: the deliveries it reopened,
-- written in the reopen's transaction, and when the sweeper found them all settled. A row is
-- deleted a week after it completed; an open one waits for its deliveries, however long they retry.
CREATE TABLE webhook_bulk_replay (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  criteria jsonb NOT NULL,
  delivery_ids uuid[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
-- the sweeper's look for open ones: no entry once completed
CREATE INDEX webhook_bulk_replay_open_idx ON webhook_bulk_replay (created_at) WHERE completed_at IS NULL;
