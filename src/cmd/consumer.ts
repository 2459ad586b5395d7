import { Client, Connection } from '@temporalio/client';
import { createRedriveQueries } from '../db/redrive-queries.js';
import { loadConsumerConfig } from '../config/config.js';
import { createDb, pingDb } from '../db/knex.js';
import { createRepositories } from '../db/repositories.js';
import { createMetrics } from '../metrics/metrics.js';
import { createLogger } from '../observability/logger.js';
import { startConsumerProcess } from '../processes/consumer-process.js';
import { createAwsClients } from '../transport/aws-clients.js';
import { runService } from './lifecycle.js';
import { waitFor } from './wait-for.js';

/** Composition root: `webhook-fanout consumer`. */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadConsumerConfig(env);
  const logger = createLogger({ level: cfg.logLevel, name: 'consumer' });
  const metrics = createMetrics();
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax, logger });
  const aws = createAwsClients({ region: cfg.aws.region, ...(cfg.aws.endpoint ? { endpoint: cfg.aws.endpoint } : {}) });
  // connected inside start(), after the management server is up: /healthz answers while the
  // consumer waits for Temporal, /readyz says 503 until then
  let connection: Connection | undefined;
  await runService({
    name: 'consumer',
    logger,
    managementPort: cfg.managementPort,
    registry: metrics.registry,
    checks: {
      postgres: () => pingDb(db),
      temporal: async () => {
        if (!connection) return false;
        await connection.healthService.check({});
        return true;
      },
    },
    start: async () => {
      const connected = await waitFor(
        'temporal',
        () =>
          Connection.connect({
            address: cfg.temporal.address,
            connectTimeout: 3_000,
            // gRPC's default reconnect backoff grows to 2 min: after a Temporal outage the
            // consumer would sit idle long after Temporal is back
            channelArgs: { 'grpc.initial_reconnect_backoff_ms': 500, 'grpc.max_reconnect_backoff_ms': 3_000 },
          }),
        { logger },
      );
      connection = connected;
      const client = new Client({ connection: connected, namespace: cfg.temporal.namespace });
      return [
        startConsumerProcess({
          sqs: aws.sqs,
          queueUrl: cfg.queueUrl,
          client,
          taskQueue: cfg.temporal.taskQueue,
          repos: createRepositories(db),
          redrive: createRedriveQueries(db),
          metrics,
          logger,
          concurrency: cfg.concurrency,
          visibilityTimeoutSeconds: cfg.visibilityTimeoutSeconds,
        }),
      ];
    },
    cleanup: async () => {
      await connection?.close();
      await db.destroy();
      aws.sns.destroy();
      aws.sqs.destroy();
    },
  });
}
