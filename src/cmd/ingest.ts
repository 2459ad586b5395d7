import { Client, Connection } from '@temporalio/client';
import { adminApiRegistration } from '../api/admin-api-registration.js';
import { loadIngestConfig } from '../config/config.js';
import { createDb, pingDb } from '../db/knex.js';
import { createRepositories } from '../db/repositories.js';
import { createMetrics } from '../metrics/metrics.js';
import { createLogger } from '../observability/logger.js';
import { startIngestProcess } from '../processes/ingest-process.js';
import { createAwsClients } from '../transport/aws-clients.js';
import { createBatchingSnsPublisher } from '../transport/batching-publisher.js';
import { runService } from './lifecycle.js';

/** Composition root: `webhook-fanout ingest`. */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadIngestConfig(env);
  const logger = createLogger({ level: cfg.logLevel, name: 'ingest' });
  const metrics = createMetrics();
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax, logger });
  const aws = createAwsClients({ region: cfg.aws.region, ...(cfg.aws.endpoint ? { endpoint: cfg.aws.endpoint } : {}) });
  const repos = createRepositories(db);
  // admin API replays start workflow runs; lazy, so ingest starts and serves webhooks without Temporal
  const temporal = cfg.adminApi ? Connection.lazy({ address: cfg.temporal.address }) : undefined;
  const register =
    cfg.adminApi && temporal
      ? adminApiRegistration({
          db,
          repos,
          temporal: { client: new Client({ connection: temporal, namespace: cfg.temporal.namespace }), taskQueue: cfg.temporal.taskQueue },
          auth: cfg.adminApi,
          logger,
        })
      : undefined;
  if (!cfg.adminApi) logger.warn('admin API disabled (ADMIN_API_ENABLED=false)');
  await runService({
    name: 'ingest',
    logger,
    managementPort: cfg.managementPort,
    registry: metrics.registry,
    checks: { postgres: () => pingDb(db) },
    start: async () => [
      await startIngestProcess({
        db: db,
        repos,
        publisher: createBatchingSnsPublisher({ sns: aws.sns, topicArn: cfg.topicArn, maxInFlight: cfg.publishMaxInFlight }),
        metrics,
        logger,
        port: cfg.port,
        host: cfg.host,
        bodyLimitBytes: cfg.bodyLimitBytes,
        httpTimeouts: cfg.httpTimeouts,
        credentialCacheSize: cfg.credentialCacheSize,
        sweepIntervalMs: cfg.sweepIntervalMs,
        sweepMinAgeMs: cfg.sweepMinAgeMs,
        sweepUnstartedAfterMs: cfg.sweepUnstartedAfterMs,
        ...(register ? { register } : {}),
      }),
    ],
    cleanup: async () => {
      await temporal?.close();
      await db.destroy();
      aws.sns.destroy();
      aws.sqs.destroy();
    },
  });
}
