import { isTraceparent, type TraceCarrier } from '../observability/spans.js';

/**
 * The queue message is a claim check: only the event id travels, the payload stays in Postgres
 * (SNS caps a message at 256 KiB).
 */
export interface EventMessage {
  eventId: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isEventId(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/**
 * The message attributes that carry an event's trace context from ingest to the consumer: W3C
 * traceparent and tracestate, as strings (docs/tracing.md).
 */
export const TRACE_ATTRIBUTES = ['traceparent', 'tracestate'] as const;

export function traceAttributes(trace: TraceCarrier): Record<string, string> {
  return trace.tracestate ? { traceparent: trace.traceparent, tracestate: trace.tracestate } : { traceparent: trace.traceparent };
}

/** The trace context of a received message's attributes, when it has a well-formed one. */
export function traceOfMessage(
  attributes: Readonly<Record<string, { StringValue?: string | undefined } | undefined>> | undefined,
): TraceCarrier | undefined {
  const traceparent = attributes?.traceparent?.StringValue;
  if (!isTraceparent(traceparent)) return undefined;
  const tracestate = attributes?.tracestate?.StringValue;
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

export function encodeEventMessage(eventId: string): string {
  return JSON.stringify({ eventId } satisfies EventMessage);
}

/** The event id of a well-formed body, or undefined for anything else (a poison message). */
export function decodeEventMessage(body: string | undefined): string | undefined {
  if (body === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const eventId = (parsed as Record<string, unknown>).eventId;
  return isEventId(eventId) ? eventId : undefined;
}
