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
