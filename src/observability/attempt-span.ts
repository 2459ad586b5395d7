import { activeTraceCarrier, failed, inSpan, SpanKind, tracingOn, type TraceCarrier } from './spans.js';

/** What names one delivery attempt on its span. */
export interface AttemptSpanInfo {
  method: string;
  url: string;
  endpointName: string;
  endpointId: string;
  deliveryId: string;
  eventId: string;
  attempt: number;
  /** the endpoint's spec.propagateTraceContext: whether the receiver is told the span's context */
  propagate: boolean;
}

/** What the span says of the answer (a delivery outcome). */
export interface AttemptSpanOutcome {
  kind: string;
  statusClass: string;
  status: number | null;
  error?: string;
}

/**
 * One delivery attempt as an HTTP client span (docs/tracing.md): the endpoint, the attempt number,
 * the status and the outcome; `send` gets the span's context to pass on as traceparent when the
 * endpoint allows it. The URL's path and query stay out: they may carry tokens. Tracing off:
 * send(undefined), nothing else.
 */
export function inAttemptSpan<O extends AttemptSpanOutcome>(
  info: AttemptSpanInfo,
  send: (trace: TraceCarrier | undefined) => Promise<O>,
): Promise<O> {
  if (!tracingOn()) return send(undefined);
  let target: URL | undefined;
  try {
    target = new URL(info.url);
  } catch {
    // the sender refuses it with its own outcome
  }
  const attributes = {
    'http.request.method': info.method,
    ...(target
      ? {
          'server.address': target.hostname,
          'server.port': Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
          'url.scheme': target.protocol.replace(':', ''),
        }
      : {}),
    'webhook.endpoint': info.endpointName,
    'webhook.endpoint_id': info.endpointId,
    'webhook.delivery_id': info.deliveryId,
    'webhook.event_id': info.eventId,
    'webhook.attempt': info.attempt,
  };
  return inSpan(info.method, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const outcome = await send(info.propagate ? activeTraceCarrier() : undefined);
    span?.setAttributes({
      'webhook.outcome': outcome.kind,
      'webhook.status_class': outcome.statusClass,
      ...(outcome.status !== null ? { 'http.response.status_code': outcome.status } : {}),
    });
    if (outcome.kind !== 'success') failed(span, new Error(outcome.error));
    return outcome;
  });
}
