import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { IResource } from '@opentelemetry/resources';
import type { Env } from '../config/env-reader.js';
import type { Logger } from './logger.js';
import { setTracer } from './spans.js';
import { otlpProtocol, tracingWanted } from '../config/tracing-switch.js';

/**
 * OpenTelemetry tracing of a process, configured by the SDK's standard variables alone
 * (docs/tracing.md): on when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 * Off, the SDK is not even loaded: the instrumentation (spans.ts) checks one variable and calls
 * through, so tracing off costs nothing measurable (docs/benchmarks.md, "Tracing").
 *
 * The SDK is OpenTelemetry JS 1.x (sdk-trace-node 1.30, OTLP exporters 0.57): the line
 * @temporalio/interceptors-opentelemetry 1.24.0 is built on. Its workflow spans are made in the
 * workflow sandbox by sdk-trace-base 1.x and handed to this process's span processor, which an SDK
 * of 2.x would mis-read (ReadableSpan's parentSpanId and instrumentationLibrary became
 * parentSpanContext and instrumentationScope).
 */
export interface Tracing {
  enabled: boolean;
  /** the processor workflow spans go to (the worker's sink); undefined when off */
  spanProcessor: SpanProcessor | undefined;
  resource: IResource | undefined;
  /** flushes what is buffered, then stops exporting; bounded by the exporter's timeout */
  shutdown(): Promise<void>;
}

export const TRACING_OFF: Tracing = { enabled: false, spanProcessor: undefined, resource: undefined, shutdown: async () => {} };

let started: Promise<Tracing> | undefined;

/**
 * Starts tracing for this process when its environment asks for it (once per process: dev mode's
 * parts share one). `process` names the service unless OTEL_SERVICE_NAME does
 * (webhook-fanout-<process>).
 */
export function startTracing(processName: string, env: Env, logger: Logger): Promise<Tracing> {
  started ??= start(processName, env, logger);
  return started;
}

async function start(processName: string, env: Env, logger: Logger): Promise<Tracing> {
  if (!tracingWanted(env)) return TRACING_OFF;
  const protocol = otlpProtocol(env);
  if (typeof protocol !== 'string') {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf, http/json or grpc, got "${protocol.invalid}"`);
  }
  const [{ NodeTracerProvider, BatchSpanProcessor }, { Resource, envDetectorSync }, { trace }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/api'),
  ]);
  const exporter =
    protocol === 'grpc'
      ? new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter()
      : protocol === 'http/json'
        ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter()
        : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over our default name
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': `webhook-fanout-${processName}`, 'service.namespace': 'webhook-fanout' }))
    .merge(envDetectorSync.detect());
  // OTEL_BSP_* (queue, batch size, delay, timeout) are read by the processor itself
  const spanProcessor = new BatchSpanProcessor(exporter);
  // OTEL_TRACES_SAMPLER(_ARG) by the provider, OTEL_PROPAGATORS (W3C by default) by register()
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  setTracer(trace.getTracer('webhook-fanout'));
  logger.info({ protocol, service: resource.attributes['service.name'] }, 'tracing: exporting spans over OTLP');
  return {
    enabled: true,
    spanProcessor,
    resource,
    async shutdown() {
      setTracer(undefined);
      await provider.shutdown().catch((err: unknown) => logger.warn({ err: String(err) }, 'tracing: flushing the last spans failed'));
    },
  };
}
