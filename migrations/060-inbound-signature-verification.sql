-- Inbound signature verification (issue 23, docs/sources.md): a source may prove its calls with a
-- provider's signature over the raw body instead of, or beside, HTTP Basic. The verification keeps
-- its signing secrets in clear, as webhook_endpoint.signing_secret does: an HMAC can only be
-- checked with the secret itself. Nothing below depends on migrations 057-059.
ALTER TABLE webhook_inbound_credential
  ALTER COLUMN username DROP NOT NULL,
  ALTER COLUMN password_hash DROP NOT NULL,
  -- {"type": "Stripe", "secrets": [...], "toleranceSeconds": 300, "hmac": {...}}; NULL = Basic only
  ADD COLUMN verification jsonb,
  -- Basic is a username and a password together, or neither
  ADD CONSTRAINT webhook_inbound_credential_basic_chk CHECK ((username IS NULL) = (password_hash IS NULL)),
  -- a source proves its calls somehow
  ADD CONSTRAINT webhook_inbound_credential_auth_chk CHECK (password_hash IS NOT NULL OR verification IS NOT NULL),
  ADD CONSTRAINT webhook_inbound_credential_verification_chk CHECK (
    verification IS NULL OR (
      verification->>'type' IN ('Stripe', 'GitHub', 'Shopify', 'Slack', 'StandardWebhooks', 'HMAC')
      AND jsonb_typeof(verification->'secrets') = 'array'
      AND jsonb_array_length(verification->'secrets') BETWEEN 1 AND 3
    )
  );
