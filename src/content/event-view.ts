/**
 * The one object a filter (CEL) and a transform (JSONata) see of an event: `event` in a filter,
 * the input document of a transform. Built from what ingest stored, so the service, `validate`
 * and `try` evaluate expressions over the same shape.
 */
export interface ContentEvent {
  source: string;
  /** the event type, '' when the source gave none */
  type: string;
  /** the external event id, '' when the source gave none */
  id: string;
  receivedAt: Date;
  /** lower-cased names, credentials removed */
  headers: Record<string, string>;
  /** the body parsed as JSON; null when it is not JSON */
  data: unknown;
}

/** Headers that carry credentials: never shown to an expression (ingest does not store them either). */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);

export function viewHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (!CREDENTIAL_HEADERS.has(lower)) out[lower] = value;
  }
  return out;
}

/** The body as JSON, or null when it is not JSON (a form, plain text, an empty body). */
export function parseData(payload: Buffer | string): unknown {
  const text = typeof payload === 'string' ? payload : payload.toString('utf8');
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

export interface StoredEventFields {
  source: string;
  eventType: string | null;
  externalEventId: string | null;
  receivedAt: Date;
  headers: Readonly<Record<string, string>>;
  payload: Buffer;
}

export function contentEvent(e: StoredEventFields): ContentEvent {
  return {
    source: e.source,
    type: e.eventType ?? '',
    id: e.externalEventId ?? '',
    receivedAt: e.receivedAt,
    headers: viewHeaders(e.headers),
    data: parseData(e.payload),
  };
}
