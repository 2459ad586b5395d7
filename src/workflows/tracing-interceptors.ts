// Workflow interceptors (bundled with the workflow code, scripts/bundle-workflows.ts): Temporal's
// OpenTelemetry interceptors (@temporalio/interceptors-opentelemetry), for the runs that were
// started with a trace context only. Not a workflow.
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

/** The header the client interceptor puts the start's trace context in (the package's TRACE_HEADER). */
const TRACE_HEADER = '_tracer-data';

/**
 * A run whose start carried a trace context (the consumer traced it) gets the workflow span, a
 * span per scheduled activity and their context in each activity's headers, so a retry an hour
 * later and a replay of the history join the same trace. Any other run (tracing off, or a history
 * recorded before) is left exactly as it was: no span, no header, nothing made in the sandbox.
 */
export const interceptors: WorkflowInterceptorsFactory = () => {
  let traced = false;
  let outbound: OpenTelemetryOutboundInterceptor | undefined;
  const otelOutbound = (): OpenTelemetryOutboundInterceptor => (outbound ??= new OpenTelemetryOutboundInterceptor());
  return {
    inbound: [
      {
        execute(input, next) {
          if (!(TRACE_HEADER in input.headers)) return next(input);
          traced = true;
          return new OpenTelemetryInboundInterceptor().execute(input, next);
        },
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => (traced ? otelOutbound().scheduleActivity(input, next) : next(input)),
        scheduleLocalActivity: (input, next) => (traced ? otelOutbound().scheduleLocalActivity(input, next) : next(input)),
      },
    ],
    internals: [
      {
        dispose(input, next) {
          if (traced) return new OpenTelemetryInternalsInterceptor().dispose(input, next);
          return next(input);
        },
      },
    ],
  };
};
