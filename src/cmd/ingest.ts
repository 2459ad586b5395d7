import { loadIngestConfig } from '../config/config.js';
import { createDb, pingDb } from '../db/knex.js';
import { createRepositories } from '../db/repositories.js';
import { createMetrics } from '../metrics/metrics.js';
import { createLogger } from '../observability/logger.js';
import { startIngestProcess } from '../processes/ingest-process.js';
import { createAwsClients } from '../transport/aws-clients.js';
import { createSnsPublisher } from '../transport/publisher.js';
import { runService } from './lifecycle.js';

/** Composition root: `webhook-fanout ingest`. */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadIngestConfig(env);
  const logger = createLogger({ level: cfg.logLevel, name: 'ingest' });
  const metrics = createMetrics();
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax });
  const aws = createAwsClients({ region: cfg.aws.region, ...(cfg.aws.endpoint ? { endpoint: cfg.aws.endpoint } : {}) });
  await runService({
    name: 'ingest',
    logger,
    managementPort: cfg.managementPort,
    registry: metrics.registry,
    checks: { postgres: () => pingDb(db) },
    start: async () => [
      await startIngestProcess({
        repos: createRepositories(db),
        publisher: createSnsPublisher({ sns: aws.sns, topicArn: cfg.topicArn }),
        metrics,
        logger,
        port: cfg.port,
        host: cfg.host,
        bodyLimitBytes: cfg.bodyLimitBytes,
        credentialCacheSize: cfg.credentialCacheSize,
        sweepIntervalMs: cfg.sweepIntervalMs,
        sweepMinAgeMs: cfg.sweepMinAgeMs,
        sweepUnstartedAfterMs: cfg.sweepUnstartedAfterMs,
      }),
    ],
    cleanup: async () => {
      await db.destroy();
      aws.sns.destroy();
      aws.sqs.destroy();
    },
  });
}
