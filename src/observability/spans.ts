import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type SpanKind as SpanKindValue,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

export { SpanKind, type Span } from '@opentelemetry/api';

/**
 * The instrumentation's one switch: the tracer, set by tracing.ts when the process traces. Every
 * helper below checks it first and, when it is unset, calls straight through: no span object, no
 * context, no attribute is made when tracing is off.
 */
let tracer: Tracer | undefined;

export function setTracer(t: Tracer | undefined): void {
  tracer = t;
}

export const tracingOn = (): boolean => tracer !== undefined;

/** A W3C trace context as carried in headers and message attributes. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

export interface SpanOptions {
  kind?: SpanKindValue;
  attributes?: Attributes;
  /** the parent; default the active context */
  parent?: Context;
  links?: Link[];
}

/**
 * Runs fn inside a span (made active for what fn calls) when tracing is on; a thrown error marks
 * the span as failed and is rethrown. Off: fn(undefined), nothing else.
 */
export function inSpan<T>(name: string, opts: SpanOptions, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (tracer === undefined) return fn(undefined);
  const parent = opts.parent ?? context.active();
  return tracer.startActiveSpan(
    name,
    {
      ...(opts.kind !== undefined ? { kind: opts.kind } : {}),
      ...(opts.attributes ? { attributes: opts.attributes } : {}),
      ...(opts.links ? { links: opts.links } : {}),
    },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        failed(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * Runs fn in a span of an event's stored trace (webhook_event.traceparent, the inbound request's
 * span): a replay or a re-publish long after the event came in joins the event's trace, as its
 * child, and links to what caused it now (the active span: the admin request, when there is one).
 * With no stored trace (tracing was off when the event came in, or it was sampled out) the span
 * is a child of the active context, a trace of its own. Off: fn(undefined). Why this way round:
 * docs/tracing.md, "Replays and re-publishes".
 */
export function inEventTrace<T>(
  name: string,
  stored: string | null | undefined,
  opts: Omit<SpanOptions, 'parent' | 'links'>,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (tracer === undefined) return fn(undefined);
  if (!isTraceparent(stored)) return inSpan(name, opts, fn);
  const cause = trace.getSpanContext(context.active());
  const links = cause && trace.isSpanContextValid(cause) ? [{ context: cause }] : [];
  return inSpan(name, { ...opts, parent: contextOf({ traceparent: stored }), links }, fn);
}

/** Marks a span as failed with the error's message (never a stack or a request's content). */
export function failed(span: Span | undefined, err: unknown): void {
  if (span === undefined) return;
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** An event on the active span (a limit wait, a Retry-After pause), when tracing is on. */
export function spanEvent(name: string, attributes: Attributes): void {
  if (tracer === undefined) return;
  trace.getActiveSpan()?.addEvent(name, attributes);
}

/** The active context as a W3C carrier, or undefined (tracing off, or no valid span). */
export function activeTraceCarrier(): TraceCarrier | undefined {
  if (tracer === undefined) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  const traceparent = carrier.traceparent;
  if (traceparent === undefined) return undefined;
  return carrier.tracestate ? { traceparent, tracestate: carrier.tracestate } : { traceparent };
}

/** The context a carrier says (a root context when it says nothing valid). */
export function contextOf(carrier: Partial<TraceCarrier> | Record<string, string | string[] | undefined> | undefined): Context {
  if (carrier === undefined || tracer === undefined) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/** The span context a carrier says, for a link; undefined when it says nothing valid. */
export function linkTo(carrier: Record<string, string | string[] | undefined>): Link | undefined {
  const sc = trace.getSpanContext(contextOf(carrier));
  return sc && trace.isSpanContextValid(sc) ? { context: sc } : undefined;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The trace id of a W3C traceparent, or undefined for anything else (pure). */
export function traceIdOf(traceparent: string | null | undefined): string | undefined {
  if (!traceparent) return undefined;
  const m = TRACEPARENT.exec(traceparent);
  return m?.[1] !== undefined && !/^0+$/.test(m[1]) ? m[1] : undefined;
}

/** Whether a traceparent says its trace is sampled (the flags' lowest bit). */
export const isSampled = (traceparent: string): boolean => (parseInt(traceparent.slice(-2), 16) & 1) === 1;

/** Whether a value is a well-formed traceparent (what may be stored or passed on). */
export const isTraceparent = (v: unknown): v is string => typeof v === 'string' && traceIdOf(v) !== undefined;
