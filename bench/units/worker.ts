import { NativeConnection } from '@temporalio/worker';
import { DEFAULT_BACKOFF } from '../../src/activities/index.js';
import { createDb } from '../../src/db/knex.js';
import { createRepositories } from '../../src/db/repositories.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { startWorkerProcess } from '../../src/processes/worker-process.js';
import { TASK_QUEUE } from '../../src/workflows/names.js';
import type { UnitConfig } from '../protocol.js';
import type { Unit } from './unit.js';

/** The real fanout worker: WebhookFanoutWorkflow with prepare / deliver / finishEvent on Postgres. */
export async function startWorkerUnit(cfg: UnitConfig): Promise<Unit> {
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax });
  const connection = await NativeConnection.connect({ address: cfg.temporalAddress });
  const worker = await startWorkerProcess({
    connection,
    namespace: 'default',
    taskQueue: TASK_QUEUE,
    repos: createRepositories(db),
    metrics: createMetrics(),
    logger: createLogger({ level: cfg.logLevel, name: 'bench-worker' }),
    backoff: DEFAULT_BACKOFF,
    outboundDenyCidrs: [],
    outboundAllowCidrs: [],
    maxConcurrentActivities: cfg.maxConcurrentActivities,
  });
  return {
    port: null,
    async stop() {
      await worker.stop();
      await connection.close();
      await db.destroy();
    },
  };
}
