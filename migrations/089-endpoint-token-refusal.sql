-- An OAuth2 endpoint whose token endpoint refuses our client credentials (invalid_client,
-- unauthorized_client, HTTP 401; docs/endpoints.md): the worker writes the server's words here
-- (one line, never a secret) and its deliveries wait; the operator's health poll finds the row and
-- makes the WebhookEndpoint Ready=False, reason TokenRequestRefused. Cleared by the worker once a
-- token is obtained, and by the operator when it writes another secret or token endpoint (the
-- Secret fixed). Nullable columns: a catalog change, no rewrite.
ALTER TABLE webhook_endpoint ADD COLUMN oauth2_token_refusal text;
ALTER TABLE webhook_endpoint ADD COLUMN oauth2_token_refused_at timestamptz;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_token_refusal_chk
  CHECK ((oauth2_token_refusal IS NULL) = (oauth2_token_refused_at IS NULL));
