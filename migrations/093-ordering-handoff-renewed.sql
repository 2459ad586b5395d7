-- The handoff's claim (docs/ordering.md, "The handoff"): whether the releasing activity renewed it
-- right before its request. false from the claim, true from the renewal: a claim never renewed has
-- had no request (and can have none once it is taken back, since the renewal requires it), so a
-- retried release that finds one left by a chain whose handoffEnd('dropped') failed gives the
-- delivery back to its run at once instead of waiting for the lease. Written by the two statements
-- that already write the claim: no statement more. Nullable, no default: a catalog change, no rewrite.
ALTER TABLE webhook_delivery ADD COLUMN ordering_handoff_renewed boolean;
