import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Client } from '@temporalio/client';
import { createFanoutStarter } from '../workflows/start/fanout.js';
import type { Repositories } from '../db/repositories.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { createQueueConsumer } from '../transport/consumer.js';
import type { RunningProcess } from './ingest-process.js';

/** Long-polls the queue and starts one WebhookFanoutWorkflow per event id. */
export function startConsumerProcess(deps: {
  sqs: SQSClient;
  queueUrl: string;
  client: Client;
  taskQueue: string;
  repos: Pick<Repositories, 'events'>;
  metrics: Metrics;
  logger: Logger;
  concurrency: number;
  visibilityTimeoutSeconds?: number;
  waitTimeSeconds?: number;
}): RunningProcess {
  const startFanout = createFanoutStarter({
    client: deps.client,
    taskQueue: deps.taskQueue,
    metrics: deps.metrics,
    events: deps.repos.events,
  });
  const consumer = createQueueConsumer({
    sqs: deps.sqs,
    queueUrl: deps.queueUrl,
    handle: startFanout,
    logger: deps.logger,
    metrics: deps.metrics,
    concurrency: deps.concurrency,
    ...(deps.visibilityTimeoutSeconds === undefined ? {} : { visibilityTimeoutSeconds: deps.visibilityTimeoutSeconds }),
    ...(deps.waitTimeSeconds === undefined ? {} : { waitTimeSeconds: deps.waitTimeSeconds }),
  });
  consumer.start();
  return { stop: () => consumer.stop() };
}
