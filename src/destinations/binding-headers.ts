import type { Message } from '../delivery/message.js';

/**
 * The headers every broker destination sends beside its binding's CloudEvents attributes, in one
 * order: the signature and X-Webhook-* headers (delivery/message.ts), then the W3C trace context
 * of the attempt when the endpoint propagates it.
 */
export function commonHeaders(message: Message): [string, string][] {
  const out: [string, string][] = Object.entries(message.headers);
  if (message.trace !== undefined) {
    out.push(['traceparent', message.trace.traceparent]);
    if (message.trace.tracestate !== undefined) out.push(['tracestate', message.trace.tracestate]);
  }
  return out;
}

/**
 * The CloudEvents attributes as a binding names them in binary mode (`prefix` + name), none in
 * structured mode (the body carries them, and its content type says so).
 */
export function attributeHeaders(message: Message, prefix: string, encode: (v: string) => string = (v) => v): [string, string][] {
  if (message.format === 'CloudEventsStructured') return [];
  return Object.entries(message.attributes).map(([name, value]) => [`${prefix}${name}`, encode(value)]);
}
