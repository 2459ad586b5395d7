import { loadTransportSetupConfig } from '../config/config.js';
import { createAwsClients } from '../transport/aws-clients.js';
import { ensureTopology } from '../transport/topology.js';

/**
 * Composition root: `webhook-fanout setup-transport`. Creates (idempotently) the SNS topic, the
 * SQS queue subscribed with raw delivery, and the redrive to webhook-fanout-dlq after 5 receives;
 * prints TOPIC_ARN and QUEUE_URL for the ingest and consumer configuration.
 */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadTransportSetupConfig(env);
  const aws = createAwsClients(cfg.aws);
  try {
    const t = await ensureTopology(aws, {
      topicName: cfg.topicName,
      queueName: cfg.queueName,
      dlqName: cfg.dlqName,
      visibilityTimeoutSeconds: cfg.visibilityTimeoutSeconds,
    });
    process.stdout.write(`TOPIC_ARN=${t.topicArn}\nQUEUE_URL=${t.queueUrl}\nDLQ_URL=${t.dlqUrl}\n`);
  } finally {
    aws.sns.destroy();
    aws.sqs.destroy();
  }
}
