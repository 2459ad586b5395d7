-- Standard Webhooks' asymmetric signatures (v1a, Ed25519): signing_type STANDARD_WEBHOOKS_ED25519
-- signs "{webhook-id}.{webhook-timestamp}.{body}" with the whsk_ secret key (base64 of its 32-byte
-- seed); during a rotation the previous key signs too. Its whpk_ public keys (the current key's
-- first) are kept beside it, so the admin API, which never reads a secret, can show them to the
-- receivers that verify with them. Constant defaults: catalog changes, no rewrite.
ALTER TABLE webhook_endpoint DROP CONSTRAINT webhook_endpoint_signing_type_chk;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_signing_type_chk
  CHECK (signing_type IN ('NONE', 'HMAC', 'STANDARD_WEBHOOKS', 'STANDARD_WEBHOOKS_ED25519'));
ALTER TABLE webhook_endpoint ADD COLUMN signing_public_keys text[] NOT NULL DEFAULT '{}';
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_ed25519_chk
  CHECK (signing_type <> 'STANDARD_WEBHOOKS_ED25519'
         OR (signing_secret ~ '^whsk_[A-Za-z0-9+/]{43}=$' AND cardinality(signing_public_keys) >= 1));
ALTER TABLE webhook_endpoint DROP CONSTRAINT webhook_endpoint_previous_secret_chk;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_previous_secret_chk
  CHECK (previous_signing_secret IS NULL
         OR ((auth_type = 'STANDARD_WEBHOOKS' OR signing_type = 'STANDARD_WEBHOOKS')
             AND previous_signing_secret ~ '^whsec_[A-Za-z0-9+/]+={0,2}$')
         OR (signing_type = 'STANDARD_WEBHOOKS_ED25519' AND previous_signing_secret ~ '^whsk_[A-Za-z0-9+/]{43}=$'));
