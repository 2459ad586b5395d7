import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createBareActivities } from '../bare-activities.js';
import { BARE_TASK_QUEUE } from '../bare-workflow.js';
import type { UnitConfig } from '../protocol.js';
import type { Unit } from './unit.js';

/** A worker for the bare workflow: same Temporal settings as the real one, no Postgres, no SQS. */
export async function startBareWorkerUnit(cfg: UnitConfig): Promise<Unit> {
  const connection = await NativeConnection.connect({ address: cfg.temporalAddress });
  const bare = createBareActivities();
  const worker = await Worker.create({
    connection,
    namespace: 'default',
    taskQueue: BARE_TASK_QUEUE,
    workflowsPath: fileURLToPath(new URL('../bare-workflow.ts', import.meta.url)),
    activities: bare.activities,
    maxConcurrentActivityTaskExecutions: cfg.maxConcurrentActivities,
    shutdownGraceTime: '30 seconds',
  });
  const running = worker.run();
  return {
    port: null,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await bare.close();
      await connection.close();
    },
  };
}
