import { isUtf8 } from 'node:buffer';
import type { Message } from '../../delivery/message.js';

/** A String message attribute, as SQS and SNS take them (the SDKs' MessageAttributeValue). */
interface StringAttribute {
  DataType: 'String';
  StringValue: string;
}

/**
 * The message's text and attributes for SQS and SNS (docs/destinations.md). Both take at most 10
 * attributes: the CloudEvents attributes go one each (ce-specversion, ce-id, ce-source, ce-type,
 * ce-time), as a consumer filters on them, outside structured mode (the envelope carries them);
 * the body's content-type one; the signature and X-Webhook-* headers together as one JSON object
 * (webhook-headers), which a consumer verifies the body with. A body that is not UTF-8 text goes
 * base64-encoded (content-transfer-encoding: base64): both services take text only.
 */
export function awsMessageOf(message: Message): { text: string; attributes: Record<string, StringAttribute> } {
  const attributes: Record<string, StringAttribute> = {};
  const put = (name: string, value: string): void => {
    // an attribute's value can not be empty
    if (value !== '') attributes[name] = { DataType: 'String', StringValue: value };
  };
  if (message.format !== 'CloudEventsStructured') {
    for (const [name, value] of Object.entries(message.attributes)) put(`ce-${name}`, value);
  }
  if (message.contentType !== null) put('content-type', message.contentType);
  put('webhook-headers', JSON.stringify(message.headers));
  if (isUtf8(message.body)) {
    const text = message.body.toString('utf8');
    if (!REFUSED_CHARACTER.test(text)) return { text, attributes };
  }
  put('content-transfer-encoding', 'base64');
  return { text: message.body.toString('base64'), attributes };
}

/**
 * An EventBridge entry's Detail, which must be a JSON object: the CloudEvents attributes, the data
 * (parsed when the body is JSON, so rules can match its fields; else text, or data_base64), and
 * the signature and X-Webhook-* headers. EventBridge re-encodes the JSON, so a signature over the
 * body's bytes is for the record: a consumer that verifies bytes takes SQS or SNS.
 */
export function eventBridgeDetailOf(message: Message): string {
  const text = message.body.toString('utf8');
  let data: Record<string, unknown>;
  try {
    data = { data: JSON.parse(text) as unknown };
  } catch {
    data = Buffer.from(text, 'utf8').equals(message.body) ? { data: text } : { data_base64: message.body.toString('base64') };
  }
  return JSON.stringify({
    ...message.attributes,
    ...(message.contentType !== null ? { datacontenttype: message.contentType } : {}),
    ...(message.body.length > 0 ? data : {}),
    headers: message.headers,
  });
}

/** SQS and SNS take the XML characters only: no control character but tab, newline and carriage return. */
// eslint-disable-next-line no-control-regex -- these control characters are what the test is for
const REFUSED_CHARACTER = /[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]/;
