import type { EndpointFormat } from '../domain/records.js';

/**
 * The last step of shaping what an endpoint is sent (docs/cloudevents.md): the body as it is
 * (Raw), or a CloudEvent 1.0 of it in the HTTP binding's binary or structured mode. It takes the
 * body another step made (the stored bytes, or a transform's output) and returns the bytes that go
 * on the wire: the signatures are computed over exactly these afterwards (headers.ts).
 */

export const CLOUDEVENTS_JSON = 'application/cloudevents+json';
/** `type` is required in a CloudEvent; an event that came in without one gets this. */
export const UNTYPED_EVENT_TYPE = 'webhook-fanout.event';

/** What a step before this one made: bytes and their media type (null: none was given). */
export interface Payload {
  body: Buffer;
  contentType: string | null;
}

/** The CloudEvent's context attributes, from the stored event. */
export interface EventAttributes {
  /** the event id: the same on every attempt, endpoint and replay, so a receiver de-duplicates on it */
  id: string;
  /** the inbound source's name; the attribute is the URI reference /webhook-fanout/<source> */
  source: string;
  type: string | null;
  /** when ingest received it */
  time: Date;
}

export interface FormattedBody extends Payload {
  /** headers of the format itself (binary mode's ce-*); none for Raw and structured mode */
  headers: Record<string, string>;
}

const mediaType = (contentType: string | null): string => (contentType ?? '').split(';')[0]!.trim().toLowerCase();
const isJsonType = (m: string): boolean => /^application\/([a-z0-9.+-]*\+)?json$/.test(m);
const isTextType = (m: string): boolean => m.startsWith('text/') || /^application\/([a-z0-9.+-]*\+)?xml$/.test(m);

const DEFAULT_DATA_TYPE = 'application/octet-stream';

/** The CloudEvent's required and `time` context attributes for an event, as every binding names them. */
export function cloudEventAttributes(event: EventAttributes): Record<string, string> {
  return {
    specversion: '1.0',
    id: event.id,
    source: `/webhook-fanout/${event.source}`,
    type: event.type ?? UNTYPED_EVENT_TYPE,
    time: event.time.toISOString(),
  };
}

export function formatBody(format: EndpointFormat, payload: Payload, event: EventAttributes): FormattedBody {
  if (format === 'Raw') return { ...payload, headers: {} };
  const data = dataOf(payload);
  const attributes = cloudEventAttributes(event);
  if (format === 'CloudEventsBinary') {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(attributes)) headers[`ce-${name}`] = headerValue(value);
    // binary mode: the body is the data, Content-Type its datacontenttype
    return { body: data.body, contentType: data.body.length > 0 ? (data.contentType ?? DEFAULT_DATA_TYPE) : null, headers };
  }
  return { body: structured(attributes, data), contentType: `${CLOUDEVENTS_JSON}; charset=utf-8`, headers: {} };
}

/**
 * The data a CloudEvent of this payload carries. A payload that is itself a structured CloudEvent
 * (a CloudEvents source's, stored as it came) is not wrapped in a second envelope: its data goes
 * on, under our id, source, type and time.
 */
function dataOf(payload: Payload): Payload {
  if (mediaType(payload.contentType) !== CLOUDEVENTS_JSON) return payload;
  let envelope: Record<string, unknown>;
  try {
    envelope = JSON.parse(payload.body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return { body: payload.body, contentType: DEFAULT_DATA_TYPE };
  }
  const type = typeof envelope.datacontenttype === 'string' ? envelope.datacontenttype : null;
  if (typeof envelope.data_base64 === 'string') return { body: Buffer.from(envelope.data_base64, 'base64'), contentType: type };
  if (envelope.data === undefined) return { body: Buffer.alloc(0), contentType: null };
  if (typeof envelope.data === 'string' && type !== null && !isJsonType(mediaType(type))) {
    return { body: Buffer.from(envelope.data, 'utf8'), contentType: type };
  }
  return { body: Buffer.from(JSON.stringify(envelope.data), 'utf8'), contentType: type ?? 'application/json' };
}

/**
 * The structured-mode envelope, written by hand so JSON data goes in as the very bytes received
 * (no re-encoding of numbers or key order); text as a JSON string; anything else as data_base64.
 */
function structured(attributes: Record<string, string>, data: Payload): Buffer {
  const fields = Object.entries(attributes).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
  if (data.body.length > 0) {
    const media = mediaType(data.contentType);
    fields.push(`"datacontenttype":${JSON.stringify(data.contentType ?? DEFAULT_DATA_TYPE)}`);
    const text = data.body.toString('utf8');
    if (isJsonType(media) && isJson(text)) return Buffer.from(`{${fields.join(',')},"data":${text.trim()}}`, 'utf8');
    if ((isJsonType(media) || isTextType(media)) && Buffer.from(text, 'utf8').equals(data.body)) {
      fields.push(`"data":${JSON.stringify(text)}`);
    } else fields.push(`"data_base64":${JSON.stringify(data.body.toString('base64'))}`);
  }
  return Buffer.from(`{${fields.join(',')}}`, 'utf8');
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * A binary-mode attribute header (CloudEvents HTTP binding 3.1.3.2): printable ASCII as it is;
 * space, `"`, `%` and everything else percent-encoded as UTF-8.
 */
function headerValue(value: string): string {
  return value.replace(/[^\x21\x23\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c));
}
