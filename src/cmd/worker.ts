import { NativeConnection } from '@temporalio/worker';
import { loadWorkerConfig } from '../config/config.js';
import { createDb, pingDb } from '../db/knex.js';
import { createRepositories } from '../db/repositories.js';
import { createMetrics } from '../metrics/metrics.js';
import { createLogger } from '../observability/logger.js';
import { installTemporalRuntime } from '../observability/temporal-runtime.js';
import { startWorkerProcess } from '../processes/worker-process.js';
import { runService } from './lifecycle.js';
import { waitFor } from './wait-for.js';

/** Composition root: `webhook-fanout worker`. */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadWorkerConfig(env);
  const logger = createLogger({ level: cfg.logLevel, name: 'worker' });
  installTemporalRuntime(logger);
  const metrics = createMetrics();
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax, logger });
  // connected inside start(), after the management server is up: /healthz answers while the
  // worker waits for Temporal; /readyz is 503 until the worker runs and while Temporal is down
  let connection: NativeConnection | undefined;
  let worker: Awaited<ReturnType<typeof startWorkerProcess>> | undefined;
  await runService({
    name: 'worker',
    logger,
    managementPort: cfg.managementPort,
    registry: metrics.registry,
    checks: {
      postgres: () => pingDb(db),
      temporal: async () => {
        if (!connection || worker?.state() !== 'RUNNING') return false;
        await connection.healthService.check({});
        return true;
      },
    },
    start: async () => {
      connection = await waitFor('temporal', () => NativeConnection.connect({ address: cfg.temporal.address }), { logger });
      worker = await startWorkerProcess({
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
      });
      return [worker];
    },
    cleanup: async () => {
      await connection?.close();
      await db.destroy();
    },
  });
}
