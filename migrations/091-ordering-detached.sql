-- A waiting ordered delivery left to its key's chain (docs/ordering.md, "A waiting delivery costs
-- its run nothing"): its waiter is its continuation's workflow id, and no run waits for it, so the
-- handoff that ends it tells nobody. True only while that holds: a run's own turn check that
-- records a wait (the continuation, started by a wake-up) clears it, and from then on its end is
-- signalled. Nullable, no default: a catalog change, no rewrite.
ALTER TABLE webhook_delivery ADD COLUMN ordering_detached boolean;
