/**
 * The names and settings of the SNS/SQS topology, in a module of their own so that config and
 * docs read them without loading the AWS SDK. The one source: setup-transport, dev mode and
 * config defaults all take them from here.
 */
export const DEFAULT_TOPOLOGY = {
  topicName: 'webhook-fanout-events',
  queueName: 'webhook-fanout-events',
  dlqName: 'webhook-fanout-dlq',
  maxReceiveCount: 5,
  visibilityTimeoutSeconds: 30,
} as const;
