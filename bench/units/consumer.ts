import { Client, Connection } from '@temporalio/client';
import { createRedriveQueries } from '../../src/db/redrive-queries.js';
import { createDb } from '../../src/db/knex.js';
import { createRepositories } from '../../src/db/repositories.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { startConsumerProcess } from '../../src/processes/consumer-process.js';
import { createAwsClients } from '../../src/transport/aws-clients.js';
import { TASK_QUEUE } from '../../src/workflows/names.js';
import type { UnitConfig } from '../protocol.js';
import type { Unit } from './unit.js';

/** The real queue consumer: long-polls SQS and starts one fanout workflow per event id. */
export async function startConsumerUnit(cfg: UnitConfig): Promise<Unit> {
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax });
  const aws = createAwsClients({ region: 'us-east-1', endpoint: cfg.awsEndpoint });
  const connection = await Connection.connect({ address: cfg.temporalAddress });
  const consumer = startConsumerProcess({
    sqs: aws.sqs,
    queueUrl: cfg.queueUrl,
    client: new Client({ connection, namespace: 'default' }),
    taskQueue: TASK_QUEUE,
    repos: createRepositories(db),
    redrive: createRedriveQueries(db),
    metrics: createMetrics(),
    logger: createLogger({ level: cfg.logLevel, name: 'bench-consumer' }),
    concurrency: cfg.consumerConcurrency,
  });
  return {
    port: null,
    async stop() {
      await consumer.stop();
      await connection.close();
      aws.sns.destroy();
      aws.sqs.destroy();
      await db.destroy();
    },
  };
}
