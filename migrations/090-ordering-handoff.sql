-- The handoff of an ordered key (docs/ordering.md, "The handoff"): the activity that releases a
-- key delivers the next delivery of the key itself when its run waits for it and can take it.
-- ordering_handoff: 'accepts' (its waiting run takes a delivery made for it: written by the turn
-- check of a worker of this release, never by one before), 'claimed' (a releasing activity makes
-- its attempt now, until ordering_handoff_until: the lease), 'ended' (that attempt ended it and
-- released the key: its run completes without a request), 'retry' (that attempt failed and is
-- retried by its own run from ordering_handoff_until). Nullable columns: a catalog change, no
-- rewrite.
ALTER TABLE webhook_delivery ADD COLUMN ordering_handoff text;
ALTER TABLE webhook_delivery ADD COLUMN ordering_handoff_until timestamptz;
ALTER TABLE webhook_delivery ADD CONSTRAINT webhook_delivery_ordering_handoff_chk
  CHECK (ordering_handoff IN ('accepts', 'claimed', 'ended', 'retry')) NOT VALID;
