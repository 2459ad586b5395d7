import type { Env } from './env-reader.js';

// Which OpenTelemetry variables turn tracing on and how spans leave (pure; tracing.ts starts the SDK).

const truthy = (v: string | undefined): boolean => v !== undefined && /^(1|true|yes|on)$/i.test(v.trim());
const set = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

/** Whether the environment turns tracing on (pure). */
export function tracingWanted(env: Env): boolean {
  if (truthy(env.OTEL_SDK_DISABLED)) return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return false;
  return set(env.OTEL_EXPORTER_OTLP_ENDPOINT) || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export type OtlpProtocol = 'http/protobuf' | 'http/json' | 'grpc';

/** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else the spec's default http/protobuf. */
export function otlpProtocol(env: Env): OtlpProtocol | { invalid: string } {
  const raw = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? '').trim() || 'http/protobuf';
  return raw === 'http/protobuf' || raw === 'http/json' || raw === 'grpc' ? raw : { invalid: raw };
}
