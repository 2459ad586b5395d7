-- The namespace an operational event (docs/operations-events.md) is about: the worker's prepare
-- routes an event of the reserved source only to endpoints of this namespace and of the platform
-- namespaces (OPERATIONS_EVENTS_PLATFORM_NAMESPACES). NULL on every third party's event.
-- Nullable without a default: a catalog change, the table is not rewritten.
ALTER TABLE webhook_event ADD COLUMN subject_namespace text;
