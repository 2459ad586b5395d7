import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type { FanoutActivities } from '../activities/types.js';
import { TASK_QUEUE } from '../workflows/names.js';

export interface FanoutWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  /** default WEBHOOKS; tests pass their own so they don't share a queue */
  taskQueue?: string;
  activities: FanoutActivities;
  /** bounds concurrent outbound requests (and database connections) of this process */
  maxConcurrentActivityTaskExecutions?: number;
  maxConcurrentWorkflowTaskExecutions?: number;
  /** how long in-flight activities may finish after shutdown() before they are cancelled */
  shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
  /** a prebuilt bundle (bundleWorkflowCode) skips bundling at start-up */
  workflowBundle?: WorkerOptions['workflowBundle'];
  identity?: string;
}

/**
 * The workflow entry point beside this module: index.ts when running from source (tsx, vitest),
 * index.js after `tsc` emitted dist/.
 */
export function resolveWorkflowsPath(): string {
  for (const ext of ['.js', '.ts']) {
    const candidate = fileURLToPath(new URL(`../workflows/index${ext}`, import.meta.url));
    if (existsSync(candidate)) return candidate;
  }
  throw new Error('workflow entry point ../workflows/index.{js,ts} not found beside the worker');
}

/** A worker for WebhookFanoutWorkflow and its activities; the caller runs it and calls shutdown(). */
export async function createFanoutWorker(opts: FanoutWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue ?? TASK_QUEUE,
    activities: opts.activities,
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: resolveWorkflowsPath() }),
    ...(opts.maxConcurrentActivityTaskExecutions === undefined
      ? {}
      : { maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions }),
    ...(opts.maxConcurrentWorkflowTaskExecutions === undefined
      ? {}
      : { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTaskExecutions }),
    shutdownGraceTime: opts.shutdownGraceTime ?? '30 seconds',
    ...(opts.identity === undefined ? {} : { identity: opts.identity }),
  });
}
