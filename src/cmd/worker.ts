import { NativeConnection } from '@temporalio/worker';
import { loadWorkerConfig } from '../config/config.js';
import { createDb, pingDb } from '../db/knex.js';
import { createRepositories } from '../db/repositories.js';
import { createMetrics } from '../metrics/metrics.js';
import { createLogger } from '../observability/logger.js';
import { installTemporalRuntime } from '../observability/temporal-runtime.js';
import { startWorkerProcess } from '../processes/worker-process.js';
import { runService } from './lifecycle.js';

/** Composition root: `webhook-fanout worker`. */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadWorkerConfig(env);
  const logger = createLogger({ level: cfg.logLevel, name: 'worker' });
  installTemporalRuntime(logger);
  const metrics = createMetrics();
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax, logger });
  const connection = await NativeConnection.connect({ address: cfg.temporal.address });
  await runService({
    name: 'worker',
    logger,
    managementPort: cfg.managementPort,
    registry: metrics.registry,
    checks: { postgres: () => pingDb(db) },
    start: async () => [
      await startWorkerProcess({
        connection,
        namespace: cfg.temporal.namespace,
        taskQueue: cfg.temporal.taskQueue,
        repos: createRepositories(db),
        metrics,
        logger,
        backoff: cfg.backoff,
        outboundDenyCidrs: cfg.outboundDenyCidrs,
        outboundAllowCidrs: cfg.outboundAllowCidrs,
        maxConcurrentActivities: cfg.maxConcurrentActivities,
      }),
    ],
    cleanup: async () => {
      await connection.close();
      await db.destroy();
    },
  });
}
