import { createDb } from '../../src/db/knex.js';
import { createRepositories } from '../../src/db/repositories.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { startIngestProcess } from '../../src/processes/ingest-process.js';
import { createAwsClients } from '../../src/transport/aws-clients.js';
import { createBatchingSnsPublisher } from '../../src/transport/batching-publisher.js';
import type { UnitConfig } from '../protocol.js';
import { applyIngestVariant } from './ingest-variants.js';
import type { Unit } from './unit.js';

/**
 * The real ingest process with production defaults: credential cache on, SNS publish per event
 * (or one of the what-if variants, see ingest-variants.ts).
 */
export async function startIngestUnit(cfg: UnitConfig): Promise<Unit> {
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax });
  const aws = createAwsClients({ region: 'us-east-1', endpoint: cfg.awsEndpoint });
  const { repos, publisher } = applyIngestVariant(cfg.ingestVariant, {
    repos: createRepositories(db),
    publisher: createBatchingSnsPublisher({ sns: aws.sns, topicArn: cfg.topicArn }),
    db,
    sns: aws.sns,
    topicArn: cfg.topicArn,
  });
  const ingest = await startIngestProcess({
    db,
    repos,
    publisher,
    metrics: createMetrics(),
    logger: createLogger({ level: cfg.logLevel, name: 'bench-ingest' }),
    port: 0,
    host: '127.0.0.1',
    bodyLimitBytes: 1024 * 1024,
    credentialCacheSize: 1000,
    sweepIntervalMs: 30_000,
    sweepMinAgeMs: 60_000,
  });
  return {
    port: ingest.port,
    async stop() {
      await ingest.stop();
      aws.sns.destroy();
      aws.sqs.destroy();
      await db.destroy();
    },
  };
}
