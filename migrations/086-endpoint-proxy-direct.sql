-- An endpoint that never goes through the installation's forward proxy (WebhookEndpoint
-- spec.proxy: Direct; DELIVERY_PROXY_URL, docs/deploy.md "A static egress address"). A constant
-- default: a catalog change, no rewrite; every endpoint before it goes through the proxy when one is set.
ALTER TABLE webhook_endpoint ADD COLUMN proxy_direct boolean NOT NULL DEFAULT false;
