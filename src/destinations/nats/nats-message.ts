import type { Message } from '../../delivery/message.js';
import { attributeHeaders, commonHeaders } from '../binding-headers.js';

/**
 * The headers of a JetStream publish, per CloudEvents' NATS protocol binding: in binary mode every
 * attribute as a `ce-<name>` header, the body's media type as `ce-datacontenttype` too, values
 * percent-encoded as the binding says; in structured mode `Content-Type` names the event format
 * (the body is the event). The body's media type is also `Content-Type` in binary mode, for
 * consumers that read it there. Then the signature and X-Webhook-* headers, and the trace context.
 * The event id goes as `Nats-Msg-Id` (the destination sets it): JetStream drops a second publish
 * of it within the stream's duplicate window.
 */
export function natsHeadersOf(message: Message): [string, string][] {
  const out: [string, string][] = attributeHeaders(message, 'ce-', percentEncode);
  if (message.format !== 'CloudEventsStructured' && message.contentType !== null)
    out.push(['ce-datacontenttype', percentEncode(message.contentType)]);
  if (message.contentType !== null) out.push(['Content-Type', message.contentType]);
  out.push(...commonHeaders(message));
  return out;
}

/**
 * The binding's percent-encoding of a header value: space, double quote, percent and everything
 * outside printable ASCII, as UTF-8 bytes, upper-case hex.
 */
export function percentEncode(value: string): string {
  let out = '';
  for (const ch of value) {
    const cp = ch.codePointAt(0) ?? 0;
    if (cp > 0x20 && cp < 0x7f && ch !== '"' && ch !== '%') out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
