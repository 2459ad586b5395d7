import { lazyTemporalClient } from '../api/start-replay.js';
import { consoleStatus, loadIngestConfig } from '../config/config.js';
import { pingDb } from '../db/knex.js';
import { createRepositories } from '../db/repositories.js';
import { buildIngestProcess } from '../processes/ingest-process.js';
import { createEventPublisher } from '../transport/publisher.js';
import { createSnsClient } from '../transport/sns-client.js';
import { bootstrap } from './bootstrap.js';
import { runService } from '../processes/lifecycle.js';
import { startTracing } from '../observability/tracing.js';

/** Composition root: `webhook-fanout ingest`. */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadIngestConfig(env);
  const { logger, metrics, db, service } = bootstrap('ingest', cfg);
  const sns = createSnsClient(cfg.aws);
  const tracing = await startTracing('ingest', env, logger);
  const publisher = createEventPublisher({ sns, aws: cfg.aws, topicArn: cfg.topicArn, maxInFlight: cfg.publishMaxInFlight });
  // admin API replays start workflow runs; the client is made on the first replay, so ingest
  // starts and serves webhooks without Temporal, and without the Temporal client's memory
  const temporal = cfg.adminApi ? lazyTemporalClient({ ...cfg.temporal, tracing }) : undefined;
  if (!cfg.adminApi) logger.warn('admin API disabled (ADMIN_API_ENABLED=false)');
  logger.info(consoleStatus(cfg, env));
  await runService({
    ...service,
    checks: { postgres: () => pingDb(db) },
    start: async () => {
      const ingest = await buildIngestProcess({
        settings: cfg,
        db,
        repos: createRepositories(db, { operations: cfg.operations }),
        publisher,
        metrics,
        logger,
        adminApi:
          cfg.adminApi && temporal
            ? { auth: cfg.adminApi, temporal: { client: temporal.client, taskQueue: cfg.temporal.taskQueue } }
            : undefined,
        console: cfg.console && cfg.adminApi ? { config: cfg.console, auth: cfg.adminApi } : undefined,
      });
      return [await ingest.start()];
    },
    cleanup: async () => {
      await temporal?.close();
      await publisher.close();
      await db.destroy();
      sns.destroy();
      await tracing.shutdown();
    },
  });
}
