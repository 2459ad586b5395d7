import type { ClientInterceptors } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Tracing } from './tracing.js';

/** The sink the workflow sandbox hands its spans to (the package's OpenTelemetrySinks, by name). */
export type WorkflowSpanSinks = InjectedSinks<{ exporter: { export(spans: unknown[]): void } }>;

export interface WorkerTracing {
  /** whether this worker traces: then it loads the workflow bundle with the tracing interceptors */
  traced: boolean;
  /** always injected: a run started with a trace context exports its spans through it */
  sinks: WorkflowSpanSinks;
  activityInterceptors: ActivityInterceptorsFactory[];
}

/**
 * What a worker adds for tracing, through Temporal's own interceptors
 * (@temporalio/interceptors-opentelemetry): each activity execution as a span whose parent is the
 * workflow's scheduling span (from the activity's headers), and the workflow sandbox's spans
 * exported through this process's span processor. Off: no interceptor, and a sink that drops what
 * a traced run (started by a tracing consumer) would send.
 */
export async function workerTracing(tracing: Tracing): Promise<WorkerTracing> {
  if (!tracing.enabled || !tracing.spanProcessor || !tracing.resource) {
    return { traced: false, sinks: { exporter: { export: { fn: () => undefined } } }, activityInterceptors: [] };
  }
  const { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor } =
    await import('@temporalio/interceptors-opentelemetry/lib/worker/index.js');
  const exporter = makeWorkflowExporter(tracing.spanProcessor, tracing.resource as Parameters<typeof makeWorkflowExporter>[1]);
  return {
    traced: true,
    sinks: { exporter } as unknown as WorkflowSpanSinks,
    activityInterceptors: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx) })],
  };
}

/** The workflow client's interceptor that starts each run in a span and hands its context to the run; undefined when off. */
export async function clientTracing(tracing: Tracing): Promise<ClientInterceptors | undefined> {
  if (!tracing.enabled) return undefined;
  const { OpenTelemetryWorkflowClientInterceptor } = await import('@temporalio/interceptors-opentelemetry/lib/client/index.js');
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}
