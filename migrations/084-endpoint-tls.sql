-- An endpoint's TLS (WebhookEndpoint spec.tls, docs/endpoints-tls.md): a client certificate and
-- its key for mTLS, and a private CA bundle that replaces the system roots for that endpoint, as
-- PEM, stored as the other endpoint secrets are; the certificate's expiry beside them for the
-- expiry metric and alert. Nullable columns: a catalog change, no rewrite.
ALTER TABLE webhook_endpoint ADD COLUMN tls_client_certificate text;
ALTER TABLE webhook_endpoint ADD COLUMN tls_client_key text;
ALTER TABLE webhook_endpoint ADD COLUMN tls_ca_bundle text;
ALTER TABLE webhook_endpoint ADD COLUMN tls_client_certificate_expires_at timestamptz;
ALTER TABLE webhook_endpoint ADD CONSTRAINT webhook_endpoint_tls_client_chk
  CHECK ((tls_client_certificate IS NULL) = (tls_client_key IS NULL)
         AND (tls_client_certificate IS NULL) = (tls_client_certificate_expires_at IS NULL));
