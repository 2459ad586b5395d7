-- CloudEvents in and out (issue 34; docs/cloudevents.md). A constant default on ADD COLUMN is a
-- catalog change in Postgres 11+: neither table is rewritten.

-- How a source's requests are read (InboundCredential spec.format): 'Raw' reads the event id and
-- type as today (the provider's places, the extraction rules); 'CloudEvents' takes them from the
-- CloudEvent (ce-id / ce-type headers in binary mode, id / type of the envelope in structured
-- mode) and refuses a request that is not one.
ALTER TABLE webhook_inbound_credential ADD COLUMN format text NOT NULL DEFAULT 'Raw',
  ADD CONSTRAINT webhook_inbound_credential_format_chk CHECK (format IN ('Raw', 'CloudEvents'));

-- What an endpoint is sent (WebhookEndpoint spec.format): the stored body as it came ('Raw'), or
-- a CloudEvent of it in the HTTP binding's binary or structured mode.
ALTER TABLE webhook_endpoint ADD COLUMN format text NOT NULL DEFAULT 'Raw',
  ADD CONSTRAINT webhook_endpoint_format_chk CHECK (format IN ('Raw', 'CloudEventsBinary', 'CloudEventsStructured'));
