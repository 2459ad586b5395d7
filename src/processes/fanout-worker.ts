import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import type { FanoutActivities } from '../activities/types.js';
import type { WorkerTracing } from '../observability/temporal-tracing.js';
import { TASK_QUEUE } from '../config/settings.js';
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

/**
 * Workflow runs kept in the worker's sticky cache (see createFanoutWorker). Ordered runs wait in
 * it for their turn: at 100, a burst of events of few keys evicted the waiting runs, and each one
 * woken was a sticky-cache miss (its whole history fetched from the server and replayed). At 1 000
 * the quiet bench's one-key row cost Temporal 22.5 ms per delivery instead of 25.8 and the
 * 100-key row 19.5 instead of 24.2, for 3 MB more peak RSS (docs/benchmarks.md, "2026-11-29
 * (evening)"): with one shared V8 context a cached run is its state, not a context of its own.
 */
export const WORKFLOW_CACHE_SIZE = 1000;

/**
 * The workflow interceptors beside the workflow code (workflows/tracing-interceptors.ts), for a
 * worker that traces: they act on runs started with a trace context only. Only such a worker loads
 * them. A workflow run evaluates every module of its bundle anew (the SDK gives each run its own
 * module instances), and Temporal's OpenTelemetry interceptors are half the bundle's code: a
 * worker that does not trace should not pay for them (figures: docs/benchmarks.md).
 * Leaving them out changes no command a run issues, so either worker replays the other's histories.
 */
export function workflowInterceptorModule(workflowsPath: string): string {
  return workflowsPath.replace(/index\.(ts|js)$/, 'tracing-interceptors.$1');
}

/** The prebuilt bundles beside dist/processes (scripts/bundle-workflows.ts): without and with the tracing interceptors. */
export const WORKFLOW_BUNDLES = { plain: 'workflow-bundle.js', traced: 'workflow-bundle-traced.js' } as const;

/** Where the worker's workflow code comes from (see resolveWorkflowCode). */
export type WorkflowCode =
  { kind: 'bundle'; codePath: string; traced: boolean } | { kind: 'source'; workflowsPath: string; traced: boolean };

/**
 * The workflow code beside this module, with the tracing interceptors when `traced`. A build (`npm
 * run build`, the image) writes the prebuilt bundles (WORKFLOW_BUNDLES): loading one skips webpack
 * at start-up, which costs seconds and memory, and the image then needs no workflow sources. From
 * a checkout (tsx, vitest) there is no bundle: the worker bundles src/workflows/index.ts itself.
 */
export function resolveWorkflowCode(traced = false): WorkflowCode {
  const file = traced ? WORKFLOW_BUNDLES.traced : WORKFLOW_BUNDLES.plain;
  const bundle = fileURLToPath(new URL(`../${file}`, import.meta.url));
  if (existsSync(bundle)) return { kind: 'bundle', codePath: bundle, traced };
  for (const ext of ['.js', '.ts']) {
    const candidate = fileURLToPath(new URL(`../workflows/index${ext}`, import.meta.url));
    if (existsSync(candidate)) return { kind: 'source', workflowsPath: candidate, traced };
  }
  throw new Error(`no workflow code beside the worker: neither ../${file} nor ../workflows/index.{js,ts}`);
}

/** A worker for WebhookFanoutWorkflow and its activities; the caller runs it and calls shutdown(). */
export async function createFanoutWorker(
  opts: FanoutWorkerOptions,
): Promise<{ worker: Worker; sandbox: SandboxMode; globals: 'locked' | 'swapped' }> {
  const code = opts.workflowCode ?? resolveWorkflowCode(opts.tracing?.traced ?? false);
  const sandbox = workflowSandboxOptions(opts.sandboxDiagnostics ?? false, { traced: code.traced });
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
    // 16 GiB and no limit, about 90 under the chart's --max-old-space-size=256). A fanout usually
    // completes in its first workflow task (first attempts are local activities), so the cache
    // holds the runs waiting for retries and ordered runs waiting for their turn; one evicted is
    // replayed from its (short) history when its next task comes.
    maxCachedWorkflows: WORKFLOW_CACHE_SIZE,
    shutdownGraceTime: opts.shutdownGraceTime ?? '30 seconds',
    ...sandbox.options,
    ...(opts.identity === undefined ? {} : { identity: opts.identity }),
    ...(opts.tracing ? { sinks: opts.tracing.sinks } : {}),
    interceptors: {
      ...(opts.tracing && opts.tracing.activityInterceptors.length > 0 ? { activity: opts.tracing.activityInterceptors } : {}),
      ...(code.kind === 'source' && code.traced ? { workflowModules: [workflowInterceptorModule(code.workflowsPath)] } : {}),
    },
  });
  return { worker, sandbox: sandbox.mode, globals: sandbox.options.lockWorkflowGlobals === true ? 'locked' : 'swapped' };
}

function workflowCodeOptions(code: WorkflowCode): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  return code.kind === 'bundle' ? { workflowBundle: { codePath: code.codePath } } : { workflowsPath: code.workflowsPath };
}
