import { Client, Connection } from '@temporalio/client';
import { loadConsumerConfig } from '../config/config.js';
import { createDb, pingDb } from '../db/knex.js';
import { createRepositories } from '../db/repositories.js';
import { createMetrics } from '../metrics/metrics.js';
import { createLogger } from '../observability/logger.js';
import { startConsumerProcess } from '../processes/consumer-process.js';
import { createAwsClients } from '../transport/aws-clients.js';
import { runService } from './lifecycle.js';

/** Composition root: `webhook-fanout consumer`. */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadConsumerConfig(env);
  const logger = createLogger({ level: cfg.logLevel, name: 'consumer' });
  const metrics = createMetrics();
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax, logger });
  const aws = createAwsClients({ region: cfg.aws.region, ...(cfg.aws.endpoint ? { endpoint: cfg.aws.endpoint } : {}) });
  const connection = await Connection.connect({ address: cfg.temporal.address });
  const client = new Client({ connection, namespace: cfg.temporal.namespace });
  await runService({
    name: 'consumer',
    logger,
    managementPort: cfg.managementPort,
    registry: metrics.registry,
    checks: {
      postgres: () => pingDb(db),
      temporal: async () => {
        await connection.healthService.check({});
        return true;
      },
    },
    start: async () => [
      startConsumerProcess({
        sqs: aws.sqs,
        queueUrl: cfg.queueUrl,
        client,
        taskQueue: cfg.temporal.taskQueue,
        repos: createRepositories(db),
        metrics,
        logger,
        concurrency: cfg.concurrency,
        visibilityTimeoutSeconds: cfg.visibilityTimeoutSeconds,
      }),
    ],
    cleanup: async () => {
      await connection.close();
      await db.destroy();
      aws.sns.destroy();
      aws.sqs.destroy();
    },
  });
}
