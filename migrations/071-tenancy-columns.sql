-- Tenancy (docs/tenancy.md): namespaces are tenants. Columns only: nullable, no default, so each
-- ADD COLUMN rewrites nothing. The operator and dev mode fill them on their next reconcile.

-- The namespace of the resource that wrote the row (a tenant's token sees the rows of its
-- namespaces; a source's owner is the namespace of its owning credential).
ALTER TABLE webhook_endpoint ADD COLUMN namespace text;
ALTER TABLE webhook_inbound_credential ADD COLUMN namespace text;

-- Why the endpoint may not subscribe to its source: NULL = allowed (routed), else the Ready
-- condition's reason, 'NotAllowedBySource' or 'SourceNotFound'. Routing and every attempt read
-- it, so a revoked endpoint gets nothing more; replays to it are refused until it is allowed.
ALTER TABLE webhook_endpoint ADD COLUMN denied_reason text,
  ADD CONSTRAINT webhook_endpoint_denied_reason_chk
    CHECK (denied_reason IS NULL OR denied_reason IN ('NotAllowedBySource', 'SourceNotFound'));
