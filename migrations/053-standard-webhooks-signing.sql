-- Standard Webhooks signing (https://www.standardwebhooks.com): auth_type STANDARD_WEBHOOKS signs
-- "{webhook-id}.{webhook-timestamp}.{body}" with the key of a whsec_<base64> secret. During a key
-- rotation the previous key signs too, so receivers that still hold it keep verifying.
ALTER TABLE webhook_endpoint DROP CONSTRAINT webhook_endpoint_auth_type_chk;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_auth_type_chk
  CHECK (auth_type IN ('NONE', 'BASIC', 'BEARER', 'HMAC', 'STANDARD_WEBHOOKS'));
ALTER TABLE webhook_endpoint ADD COLUMN previous_signing_secret text;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_standard_webhooks_chk
  CHECK (auth_type <> 'STANDARD_WEBHOOKS'
         OR (signing_secret IS NOT NULL AND signing_secret ~ '^whsec_[A-Za-z0-9+/]+={0,2}$'));
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_previous_secret_chk
  CHECK (previous_signing_secret IS NULL
         OR (auth_type = 'STANDARD_WEBHOOKS' AND previous_signing_secret ~ '^whsec_[A-Za-z0-9+/]+={0,2}$'));
