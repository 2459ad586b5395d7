import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { startFauxqs } from 'fauxqs';
import { inject } from 'vitest';
import type { OperationsEventsSettings } from '../../src/config/settings.js';
import { createRedriveQueries } from '../../src/db/redrive-queries.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { buildConsumerProcess } from '../../src/processes/consumer-process.js';
import { buildIngestProcess } from '../../src/processes/ingest-process.js';
import { buildWorkerProcess } from '../../src/processes/worker-process.js';
import { createAwsClients, type AwsClients } from '../../src/transport/aws-clients.js';
import { createEventPublisher } from '../../src/transport/publisher.js';
import { ensureTopology, type Topology } from '../../src/transport/topology.js';
import { createTestDatabase, type TestDatabase } from './db.js';

/**
 * The whole runtime path, each process built and started by the builder cmd/ uses: ingest,
 * consumer and worker on a fresh Postgres database, fauxqs over HTTP and the shared Temporal dev
 * server (own task queue).
 */
export interface Stack {
  url: string;
  t: TestDatabase;
  repos: Repositories;
  metrics: Metrics;
  aws: AwsClients;
  topology: Topology;
  client: Client;
  taskQueue: string;
  close(): Promise<void>;
}

export interface StackOptions {
  backoffInitialMs?: number;
  visibilityTimeoutSeconds?: number;
  /** WORKER_CONSUME_QUEUE: no consumer process, the worker reads the queue and starts eagerly */
  workerConsumesQueue?: boolean;
  /** OPERATIONS_EVENTS_*: the reserved source and the platform namespaces (docs/operations-events.md) */
  operations?: OperationsEventsSettings;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // installed already in this worker process
  }
  const t = await createTestDatabase();
  const repos = createRepositories(t.db, opts.operations ? { operations: opts.operations } : {});
  const metrics = createMetrics({ defaultMetrics: false });
  const logger = createLogger({ level: 'silent' });
  const fauxqs = await startFauxqs({ port: 0, logger: false });
  const awsOptions = { region: 'us-east-1', endpoint: fauxqs.address };
  const aws = createAwsClients(awsOptions);
  const suffix = randomUUID().slice(0, 8);
  const topology = await ensureTopology(aws, {
    topicName: `events-${suffix}`,
    queueName: `events-${suffix}`,
    dlqName: `dlq-${suffix}`,
    visibilityTimeoutSeconds: opts.visibilityTimeoutSeconds ?? 30,
  });
  const address = inject('temporalAddress');
  const native = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace: 'default' });
  const taskQueue = `e2e-${suffix}`;

  const temporal = { namespace: 'default', taskQueue };
  const queue = {
    settings: {
      queueUrl: topology.queueUrl,
      concurrency: 10,
      waitTimeSeconds: 1,
      aws: { region: awsOptions.region, endpoint: awsOptions.endpoint },
    },
    sqs: aws.sqs,
    redrive: createRedriveQueries(t.db),
  };
  const worker = await buildWorkerProcess({
    settings: {
      temporal,
      backoff: { initialIntervalMs: opts.backoffInitialMs ?? 100, backoffCoefficient: 2, maximumIntervalMs: 1000 },
      outboundDenyCidrs: [],
      outboundAllowCidrs: [],
      maxConcurrentActivities: 50,
    },
    connection: native,
    repos,
    metrics,
    logger,
    ...(opts.workerConsumesQueue ? { queue } : {}),
  });
  const consumer = opts.workerConsumesQueue
    ? undefined
    : buildConsumerProcess({
        settings: { ...queue.settings, temporal },
        sqs: queue.sqs,
        client,
        repos,
        redrive: queue.redrive,
        metrics,
        logger,
      });
  const publisher = createEventPublisher({ sns: aws.sns, aws: awsOptions, topicArn: topology.topicArn });
  const ingestProcess = await buildIngestProcess({
    settings: {
      port: 0,
      host: '127.0.0.1',
      bodyLimitBytes: 1024 * 1024,
      credentialCacheSize: 100,
      sweepIntervalMs: 60_000,
      sweepMinAgeMs: 60_000,
    },
    db: t.db,
    repos,
    publisher,
    metrics,
    logger,
  });
  const parts = consumer ? [worker.start(), consumer.start()] : [worker.start()];
  const ingest = await ingestProcess.start();
  parts.push(ingest);

  return {
    url: ingest.url,
    t,
    repos,
    metrics,
    aws,
    topology,
    client,
    taskQueue,
    async close() {
      for (const p of parts.reverse()) await p.stop();
      await publisher.close();
      await connection.close();
      await native.close();
      aws.sns.destroy();
      aws.sqs.destroy();
      await fauxqs.stop();
      await t.destroy();
    },
  };
}
