-- What a broker answered to an acknowledged publish (issue 43; docs/destinations.md): its message
-- id, Kafka's partition and offset, a NATS JetStream or SQS FIFO sequence. The attempt log records
-- it beside the status; null: an HTTP attempt (its status and body say it), a failed attempt, or no
-- request. A nullable column without a default: a catalog change, the table is not rewritten.
ALTER TABLE webhook_delivery_attempt ADD COLUMN receipt jsonb;
