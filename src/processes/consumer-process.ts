import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Client } from '@temporalio/client';
import type { RunningProcess } from './running-process.js';
import type { ConsumerConfig, TemporalConfig } from '../config/config.js';
import type { RedriveQueries } from '../db/redrive-queries.js';
import type { Repositories } from '../db/repositories.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { createQueueConsumer } from '../transport/queue-consumer.js';
import { queueCalls } from '../transport/queue-calls.js';
import { createRedriver } from '../temporal/redriver.js';
import { createOrderingWaker } from '../temporal/ordering-waker.js';
import { createQueueDepthProbe } from '../transport/queue-depth.js';
import { createFanoutStarter } from '../temporal/fanout-starter.js';

/** What the consumer process takes from its configuration: ConsumerConfig, or a test's own values. */
export type ConsumerSettings = Pick<ConsumerConfig, 'queueUrl' | 'concurrency' | 'aws'> &
  Partial<Pick<ConsumerConfig, 'visibilityTimeoutSeconds'>> & {
    temporal: Pick<TemporalConfig, 'taskQueue'>;
    /** the long poll; tests shorten it so that stop() returns quickly */
    waitTimeSeconds?: number;
  };

export interface ConsumerDeps {
  settings: ConsumerSettings;
  sqs: SQSClient;
  client: Client;
  repos: Pick<Repositories, 'events' | 'ordering'>;
  redrive: RedriveQueries;
  /** default REDRIVE_INTERVAL_MS */
  redriveIntervalMs?: number;
  /** client shares its NativeConnection with a worker of this process: start runs eagerly on it */
  eagerStart?: boolean;
  metrics: Metrics;
  logger: Logger;
}

/** The consumer process built and not started: nothing is received until start(). */
export interface ConsumerProcess {
  start(): RunningProcess;
}

/**
 * Long-polls the queue and starts one WebhookFanoutWorkflow per event id; redrives what endpoints
 * missed while disabled once they are enabled again (temporal/redriver.ts); wakes ordered
 * deliveries whose wake-up was lost (temporal/ordering-waker.ts).
 */
export function buildConsumerProcess(deps: ConsumerDeps): ConsumerProcess {
  const { settings } = deps;
  const startFanout = createFanoutStarter({
    client: deps.client,
    taskQueue: settings.temporal.taskQueue,
    metrics: deps.metrics,
    events: deps.repos.events,
    ...(deps.eagerStart ? { eager: true } : {}),
  });
  const consumer = createQueueConsumer({
    sqs: deps.sqs,
    calls: () => queueCalls({ sqs: deps.sqs, aws: settings.aws }),
    queueUrl: settings.queueUrl,
    handle: startFanout,
    logger: deps.logger,
    metrics: deps.metrics,
    concurrency: settings.concurrency,
    ...(settings.visibilityTimeoutSeconds === undefined ? {} : { visibilityTimeoutSeconds: settings.visibilityTimeoutSeconds }),
    ...(settings.waitTimeSeconds === undefined ? {} : { waitTimeSeconds: settings.waitTimeSeconds }),
  });
  const redriver = createRedriver({
    queries: deps.redrive,
    client: deps.client,
    taskQueue: settings.temporal.taskQueue,
    metrics: deps.metrics,
    logger: deps.logger,
    ...(deps.redriveIntervalMs === undefined ? {} : { intervalMs: deps.redriveIntervalMs }),
  });
  // wakes ordered deliveries whose wake-up was lost (docs/ordering.md)
  const waker = createOrderingWaker({
    repos: deps.repos,
    client: deps.client,
    taskQueue: settings.temporal.taskQueue,
    metrics: deps.metrics,
    logger: deps.logger,
  });
  const depth = createQueueDepthProbe({ sqs: deps.sqs, queueUrl: settings.queueUrl, metrics: deps.metrics, logger: deps.logger });
  return {
    start() {
      consumer.start();
      redriver.start();
      waker.start();
      depth.start();
      return {
        async stop() {
          await Promise.all([consumer.stop(), redriver.stop(), waker.stop(), depth.stop()]);
        },
      };
    },
  };
}
