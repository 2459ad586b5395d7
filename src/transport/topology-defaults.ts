/**
 * The names and settings of the SNS/SQS topology, and the publisher's default concurrency, in a
 * module of their own so that config and docs read them without loading the AWS SDK. The one
 * source: setup-transport, dev mode, the publisher and config defaults all take them from here.
 */
export const DEFAULT_TOPOLOGY = {
  topicName: 'webhook-fanout-events',
  queueName: 'webhook-fanout-events',
  dlqName: 'webhook-fanout-dlq',
  maxReceiveCount: 5,
  visibilityTimeoutSeconds: 30,
} as const;

/** PublishBatch calls ingest keeps in flight at once (PUBLISH_MAX_IN_FLIGHT), each up to 10 event ids. */
export const DEFAULT_PUBLISH_MAX_IN_FLIGHT = 4;
