-- An endpoint's signing (how the receiver verifies the body) apart from its auth (how the receiver
-- knows the caller), so an endpoint can have both: a Bearer token and a Standard Webhooks
-- signature. Until now auth_type said either. An endpoint with a signing and no auth keeps
-- auth_type HMAC or STANDARD_WEBHOOKS (db/rows.ts, COMBINED_AUTH_TYPES): a worker of the release
-- before this one reads such a row as it did and signs, while a rolling upgrade runs both.
-- A constant default: a catalog change; the UPDATE touches the signing endpoints only.
ALTER TABLE webhook_endpoint ADD COLUMN signing_type text NOT NULL DEFAULT 'NONE';
UPDATE webhook_endpoint SET signing_type = auth_type WHERE auth_type IN ('HMAC', 'STANDARD_WEBHOOKS');
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_signing_type_chk
  CHECK (signing_type IN ('NONE', 'HMAC', 'STANDARD_WEBHOOKS'));
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_signing_secret_chk
  CHECK (signing_type = 'NONE' OR signing_secret IS NOT NULL);
-- the key checks follow the signing wherever it is said
ALTER TABLE webhook_endpoint DROP CONSTRAINT webhook_endpoint_standard_webhooks_chk;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_standard_webhooks_chk
  CHECK ((auth_type <> 'STANDARD_WEBHOOKS' AND signing_type <> 'STANDARD_WEBHOOKS')
         OR (signing_secret IS NOT NULL AND signing_secret ~ '^whsec_[A-Za-z0-9+/]+={0,2}$'));
ALTER TABLE webhook_endpoint DROP CONSTRAINT webhook_endpoint_previous_secret_chk;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_previous_secret_chk
  CHECK (previous_signing_secret IS NULL
         OR ((auth_type = 'STANDARD_WEBHOOKS' OR signing_type = 'STANDARD_WEBHOOKS')
             AND previous_signing_secret ~ '^whsec_[A-Za-z0-9+/]+={0,2}$'));
