-- Tenancy (docs/tenancy.md): an InboundCredential's spec.allowedEndpoints, as the resource says it
-- (NULL: it says nothing, and the operator's or dev mode's TENANCY_DEFAULT_ALLOWED_NAMESPACES
-- applies). The operator and dev mode read it from the row that is in effect for the source (the
-- one ingest verifies with) to decide which endpoints may subscribe (webhook_endpoint.denied_reason).
-- Nullable, no default: the ADD COLUMN rewrites nothing.
ALTER TABLE webhook_inbound_credential ADD COLUMN allowed_endpoints jsonb;
