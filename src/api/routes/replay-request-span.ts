import type { IncomingHttpHeaders } from 'node:http';
import { contextOf, inSpan, SpanKind } from '../../observability/spans.js';

/**
 * An admin API replay request as a server span (tracing on only), so a replay's own spans, which
 * join the replayed event's trace, link back to the request that asked for them (docs/tracing.md).
 * Its parent is the caller's traceparent when it sends one: the request is authenticated by then
 * (the route's onRequest), so an operator's tooling that traces sees its replay under its own span.
 */
export function inReplayRequestSpan<T>(route: string, headers: IncomingHttpHeaders, fn: () => Promise<T>): Promise<T> {
  const attributes = { 'http.request.method': 'POST', 'http.route': route };
  return inSpan(`POST ${route}`, { kind: SpanKind.SERVER, parent: contextOf(headers), attributes }, fn);
}
