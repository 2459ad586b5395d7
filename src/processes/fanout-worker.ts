import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type { FanoutActivities } from '../activities/types.js';
import type { WorkerTracing } from '../observability/temporal-tracing.js';
import { TASK_QUEUE } from '../workflows/names.js';
import { workflowSandboxOptions, type SandboxMode } from './workflow-sandbox.js';

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
  /** default: resolveWorkflowCode() */
  workflowCode?: WorkflowCode;
  identity?: string;
  /** Temporal's OpenTelemetry interceptors and the workflow spans' sink (observability/temporal-tracing.ts); none: no tracing */
  tracing?: WorkerTracing;
  /** the SDK's deadlock detector and stack traces in the workflow sandbox (workflow-sandbox.ts); default off */
  sandboxDiagnostics?: boolean;
}

/** Workflow runs kept in the worker's sticky cache (see createFanoutWorker). */
export const WORKFLOW_CACHE_SIZE = 100;

/**
 * The workflow interceptors beside the workflow code (workflows/tracing-interceptors.ts): bundled
 * into the prebuilt bundle by scripts/bundle-workflows.ts, registered here when bundling from
 * source. They act on runs started with a trace context only.
 */
export function workflowInterceptorModule(workflowsPath: string): string {
  return workflowsPath.replace(/index\.(ts|js)$/, 'tracing-interceptors.$1');
}

/** Where the worker's workflow code comes from (see resolveWorkflowCode). */
export type WorkflowCode = { kind: 'bundle'; codePath: string } | { kind: 'source'; workflowsPath: string };

/**
 * The workflow code beside this module. A build (`npm run build`, the image) writes a prebuilt
 * bundle, dist/workflow-bundle.js (scripts/bundle-workflows.ts): loading it skips webpack at
 * start-up, which costs seconds and memory, and the image then needs no workflow sources. From
 * a checkout (tsx, vitest) there is no bundle: the worker bundles src/workflows/index.ts itself.
 */
export function resolveWorkflowCode(): WorkflowCode {
  const bundle = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));
  if (existsSync(bundle)) return { kind: 'bundle', codePath: bundle };
  for (const ext of ['.js', '.ts']) {
    const candidate = fileURLToPath(new URL(`../workflows/index${ext}`, import.meta.url));
    if (existsSync(candidate)) return { kind: 'source', workflowsPath: candidate };
  }
  throw new Error('no workflow code beside the worker: neither ../workflow-bundle.js nor ../workflows/index.{js,ts}');
}

/** A worker for WebhookFanoutWorkflow and its activities; the caller runs it and calls shutdown(). */
export async function createFanoutWorker(opts: FanoutWorkerOptions): Promise<{ worker: Worker; sandbox: SandboxMode }> {
  const code = opts.workflowCode ?? resolveWorkflowCode();
  const sandbox = workflowSandboxOptions(opts.sandboxDiagnostics ?? false);
  const worker = await Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue ?? TASK_QUEUE,
    activities: opts.activities,
    ...workflowCodeOptions(code),
    // first delivery attempts run as local activities (workflows/fanout.ts): the same bound
    // applies to them, so WORKER_MAX_CONCURRENT_ACTIVITIES still caps each kind of outbound work
    ...(opts.maxConcurrentActivityTaskExecutions === undefined
      ? {}
      : {
          maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions,
          maxConcurrentLocalActivityExecutions: opts.maxConcurrentActivityTaskExecutions,
        }),
    ...(opts.maxConcurrentWorkflowTaskExecutions === undefined
      ? {}
      : { maxConcurrentWorkflowTaskExecutions: opts.maxConcurrentWorkflowTaskExecutions }),
    // Explicit: the SDK derives its default from the V8 heap limit (about 2 300 on a machine with
    // 16 GiB and no limit, 10 under the chart's --max-old-space-size=128). A fanout usually
    // completes in its first workflow task (first attempts are local activities), so the cache
    // holds the runs waiting for retries; one evicted is replayed from its (short) history.
    maxCachedWorkflows: WORKFLOW_CACHE_SIZE,
    shutdownGraceTime: opts.shutdownGraceTime ?? '30 seconds',
    ...sandbox.options,
    ...(opts.identity === undefined ? {} : { identity: opts.identity }),
    ...(opts.tracing ? { sinks: opts.tracing.sinks } : {}),
    interceptors: {
      ...(opts.tracing && opts.tracing.activityInterceptors.length > 0 ? { activity: opts.tracing.activityInterceptors } : {}),
      ...(code.kind === 'source' ? { workflowModules: [workflowInterceptorModule(code.workflowsPath)] } : {}),
    },
  });
  return { worker, sandbox: sandbox.mode };
}

function workflowCodeOptions(code: WorkflowCode): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  return code.kind === 'bundle' ? { workflowBundle: { codePath: code.codePath } } : { workflowsPath: code.workflowsPath };
}
