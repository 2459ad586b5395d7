-- Routing and reshaping by content (issue 33; docs/content-routing.md): a WebhookEndpoint's
-- spec.filter (CEL) and spec.transform.jsonata, as the operator last compiled them. Null: none.
-- Nullable columns without a default: a catalog change, the table is not rewritten. Lengths as
-- the CRD caps them (src/content/filter.ts, transform.ts).
ALTER TABLE webhook_endpoint ADD COLUMN filter text,
  ADD COLUMN transform_jsonata text,
  ADD CONSTRAINT webhook_endpoint_filter_len_chk CHECK (char_length(filter) BETWEEN 1 AND 4096),
  ADD CONSTRAINT webhook_endpoint_transform_len_chk CHECK (char_length(transform_jsonata) BETWEEN 1 AND 16384);

-- What an attempt sent when it was not the stored payload (the endpoint's transform made it):
-- the attempt log records it. Null: the payload as received was sent (or no request was made).
ALTER TABLE webhook_delivery_attempt ADD COLUMN request_body text;
