-- OAuth2 client credentials (WebhookEndpoint spec.auth.type OAuth2ClientCredentials,
-- docs/endpoints.md): the worker asks the endpoint's token endpoint for an access token and sends
-- it as a Bearer token. auth_oauth2 keeps the token endpoint and the client, never a secret: the
-- client secret, or the private key of PrivateKeyJwt, is auth_secret, as the other endpoint
-- secrets are. A nullable column: a catalog change; the checks scan the table once.
ALTER TABLE webhook_endpoint ADD COLUMN auth_oauth2 jsonb;
ALTER TABLE webhook_endpoint DROP CONSTRAINT webhook_endpoint_auth_type_chk;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_auth_type_chk
  CHECK (auth_type IN ('NONE', 'BASIC', 'BEARER', 'HMAC', 'STANDARD_WEBHOOKS', 'OAUTH2_CLIENT_CREDENTIALS'));
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_oauth2_chk
  CHECK ((auth_type = 'OAUTH2_CLIENT_CREDENTIALS') = (auth_oauth2 IS NOT NULL)
         AND (auth_type <> 'OAUTH2_CLIENT_CREDENTIALS' OR auth_secret IS NOT NULL));
