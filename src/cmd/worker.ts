import type { NativeConnection } from '@temporalio/worker';
import { loadWorkerConfig } from '../config/config.js';
import { pingDb } from '../db/knex.js';
import { createRedriveQueries } from '../db/redrive-queries.js';
import { createRepositories } from '../db/repositories.js';
import { installTemporalRuntime } from '../observability/temporal-runtime.js';
import { buildWorkerProcess, type StartedWorker } from '../processes/worker-process.js';
import { createSqsClient } from '../transport/sqs-client.js';
import { bootstrap } from './bootstrap.js';
import { runService } from '../processes/lifecycle.js';
import { startTracing } from '../observability/tracing.js';
import { connectTemporalNative } from '../temporal/native-connection.js';
import { waitFor } from './wait-for.js';

/** Composition root: `webhook-fanout worker`; with WORKER_CONSUME_QUEUE=true the consumer's work too. */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadWorkerConfig(env);
  const { logger, metrics, db, service } = bootstrap('worker', cfg);
  installTemporalRuntime(logger);
  const tracing = await startTracing('worker', env, logger);
  // SQS only, as the consumer: the worker publishes nothing
  const sqs = cfg.consumeQueue ? createSqsClient(cfg.consumeQueue.aws) : undefined;
  // connected inside start(), after the management server is up: /healthz answers while the
  // worker waits for Temporal; /readyz is 503 until the worker runs and while Temporal is down
  let connection: NativeConnection | undefined;
  let worker: StartedWorker | undefined;
  await runService({
    ...service,
    checks: {
      postgres: () => pingDb(db),
      temporal: async () => {
        if (!connection || worker?.state() !== 'RUNNING') return false;
        await connection.healthService.check({});
        return true;
      },
    },
    start: async () => {
      connection = await waitFor('temporal', () => connectTemporalNative(cfg.temporal), { logger });
      const queue = cfg.consumeQueue && sqs ? { settings: cfg.consumeQueue, sqs, redrive: createRedriveQueries(db) } : undefined;
      const built = await buildWorkerProcess({
        settings: cfg,
        connection,
        repos: createRepositories(db, { operations: cfg.operations }),
        metrics,
        logger,
        tracing,
        ...(queue ? { queue } : {}),
      });
      worker = built.start();
      return [worker];
    },
    cleanup: async () => {
      await connection?.close();
      await db.destroy();
      sqs?.destroy();
      await tracing.shutdown();
    },
  });
}
