-- Tracing (issue 25, docs/tracing.md). The W3C traceparent of the inbound request that stored the
-- event, when tracing is on: the admin API shows its trace id so a user jumps from an event to its
-- trace, and a re-publish (sweeper, a sender's retry) carries it on, so the delivery joins the
-- trace of the request that brought the event. NULL when tracing was off.
ALTER TABLE webhook_event ADD COLUMN traceparent text
  CONSTRAINT webhook_event_traceparent_chk CHECK (traceparent IS NULL OR traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');

-- A WebhookEndpoint's spec.propagateTraceContext: the receiver gets a W3C traceparent with each
-- delivery (the default) or none.
ALTER TABLE webhook_endpoint ADD COLUMN propagate_trace_context boolean NOT NULL DEFAULT true;
