import { permanent } from '../domain/errors.js';

/**
 * Reading a CloudEvent 1.0 off an HTTP request (the HTTP protocol binding), for a source whose
 * InboundCredential says `format: CloudEvents` (docs/cloudevents.md). Only what ingest needs: the
 * mode, and the required attributes checked, so that a request that is not a CloudEvent is refused
 * with the attribute it lacks. The body is stored byte-for-byte as for any source.
 *
 * Our own few lines rather than the SDK's HTTP.toEvent: that validates every attribute with ajv on
 * the hot path and says "invalid payload" where the sender needs the name of what is missing.
 */

export const CLOUDEVENTS_STRUCTURED = 'application/cloudevents+json';
const CLOUDEVENTS_BATCH = 'application/cloudevents-batch+json';
export const SPEC_VERSION = '1.0';

/** The attributes every CloudEvent carries (CloudEvents 1.0, "Required Attributes"). */
const REQUIRED = ['specversion', 'id', 'source', 'type'] as const;

export interface CloudEventIdentity {
  mode: 'binary' | 'structured';
  id: string;
  type: string;
}

const mediaType = (contentType: string | null): string => (contentType ?? '').split(';')[0]!.trim().toLowerCase();

/** Structured mode: the media type says so; anything else is binary mode (the headers carry the attributes). */
export const isStructured = (contentType: string | null): boolean => mediaType(contentType) === CLOUDEVENTS_STRUCTURED;

const refuse = (detail: string): never => {
  throw permanent('invalid_cloudevent', `not a valid CloudEvent: ${detail}`);
};

/**
 * The CloudEvent's id and type, or a permanent `invalid_cloudevent` naming the first required
 * attribute that is missing or wrong. `json` is the parsed body (structured mode needs it: ingest
 * parses a body whose type is JSON, cloudevents+json among them); `headers` have lower-case names.
 */
export function readCloudEvent(contentType: string | null, headers: Record<string, string>, json: unknown): CloudEventIdentity {
  const media = mediaType(contentType);
  if (media === CLOUDEVENTS_BATCH) refuse(`batched mode (${CLOUDEVENTS_BATCH}) is not accepted; send each event on its own`);
  if (media === CLOUDEVENTS_STRUCTURED) {
    if (json === null || typeof json !== 'object' || Array.isArray(json)) refuse('a structured-mode body must be a JSON object');
    const envelope = json as Record<string, unknown>;
    for (const name of REQUIRED) {
      const v = envelope[name];
      if (v === undefined || v === null) refuse(`the required attribute "${name}" is missing`);
      if (typeof v !== 'string' || v === '') refuse(`the attribute "${name}" must be a non-empty string`);
    }
    if (envelope.specversion !== SPEC_VERSION)
      refuse(`specversion is ${JSON.stringify(envelope.specversion)}; only "${SPEC_VERSION}" is accepted`);
    return { mode: 'structured', id: envelope.id as string, type: envelope.type as string };
  }
  for (const name of REQUIRED) {
    const v = headers[`ce-${name}`];
    if (v === undefined || v === '') {
      refuse(
        `the required attribute "${name}" is missing (binary mode: header ce-${name}; structured mode: Content-Type ${CLOUDEVENTS_STRUCTURED})`,
      );
    }
  }
  if (headers['ce-specversion'] !== SPEC_VERSION) {
    refuse(`ce-specversion is ${JSON.stringify(headers['ce-specversion'])}; only "${SPEC_VERSION}" is accepted`);
  }
  return { mode: 'binary', id: decoded(headers['ce-id']!, 'ce-id'), type: decoded(headers['ce-type']!, 'ce-type') };
}

/** A binary-mode header value: the binding percent-encodes what is not printable ASCII (and `%` itself). */
function decoded(value: string, name: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return refuse(`header ${name} is not valid percent-encoded UTF-8`);
  }
}
