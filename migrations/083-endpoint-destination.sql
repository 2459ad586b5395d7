-- migrate: no-transaction
-- One statement at a time, each its own transaction: the url check below is replaced NOT VALID, then
-- validated apart, which takes no lock that blocks reads or writes (in one transaction the first
-- statement's lock would be held through the validation).

-- Destinations beyond HTTP (issue 43; docs/destinations.md): a WebhookEndpoint's spec.destination
-- without its secrets (the queue, topic, bus, brokers...), and the credentials its Secrets hold,
-- read from the endpoint's namespace only, in a column of their own that the admin API never
-- selects. Null: HTTP, as every row written before. Nullable columns without a default: catalog
-- changes, the table is not rewritten.
ALTER TABLE webhook_endpoint ADD COLUMN IF NOT EXISTS destination jsonb,
  ADD COLUMN IF NOT EXISTS destination_secrets jsonb;

-- The url of an HTTP endpoint stays an http(s) URL; another destination keeps there the address it
-- shows (a queue URL, a topic ARN, the brokers and the topic).
ALTER TABLE webhook_endpoint DROP CONSTRAINT IF EXISTS webhook_endpoint_url_chk,
  ADD CONSTRAINT webhook_endpoint_url_chk CHECK (destination IS NOT NULL OR url ~* '^https?://') NOT VALID;
ALTER TABLE webhook_endpoint VALIDATE CONSTRAINT webhook_endpoint_url_chk;
