-- An OAuth2 endpoint whose token endpoint is unavailable (5xx, 408/429, a timeout, a refused
-- connection, a name the DNS does not know; docs/endpoints.md): its deliveries wait PENDING with no
-- attempt spent, as for a refusal (089), and nothing said why. The worker writes here what failed
-- (one line, never a secret) and since when the token endpoint has been unavailable; the admin API
-- and the console show it. Cleared by the worker once a token is obtained or the endpoint refuses
-- our credentials instead (089's columns then), and by the operator when it writes another secret
-- or token endpoint. Nullable columns: a catalog change, no rewrite.
ALTER TABLE webhook_endpoint ADD COLUMN oauth2_token_unavailable text;
ALTER TABLE webhook_endpoint ADD COLUMN oauth2_token_unavailable_since timestamptz;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_token_unavailable_chk
  CHECK ((oauth2_token_unavailable IS NULL) = (oauth2_token_unavailable_since IS NULL));
