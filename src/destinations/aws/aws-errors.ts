import type { DeliveryOutcome, StatusClass } from '../../delivery/types.js';
import { AWS_THROTTLING_CODES } from '../../domain/aws-retried-codes.js';
import { isBlockedAddressError } from '../../delivery/guarded-lookup.js';

/**
 * The AWS error codes a publish is retried on: the service throttles or is not there right now.
 * Everything else the service answers with a 4xx is final (an unknown queue, topic or bus, refused
 * authentication or authorization, a message over the limit, an invalid parameter); a 5xx, a
 * timeout and a connection that fails are retried (docs/destinations.md, the classification rule).
 */
const RETRIED_CODES: ReadonlySet<string> = new Set([
  ...AWS_THROTTLING_CODES,
  'ProvisionedThroughputExceededException',
  // SQS's own code for a KMS key that throttles (an SSE-KMS queue)
  'KmsThrottled',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'InternalError',
  'InternalFailure',
  'InternalServerError',
  'InternalException',
  'TimeoutError',
  'ExpiredToken',
  'ExpiredTokenException',
  'IDPCommunicationError',
]);

/** Connection failures: nothing reached the service (or its answer was lost); worth another attempt. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

interface SdkErrorFacts {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  /** clockSkewCorrected: the SDK (and sqs-direct.ts) corrected the client's clock after this refusal */
  $metadata?: { httpStatusCode?: unknown; clockSkewCorrected?: unknown };
  $retryable?: unknown;
  cause?: unknown;
  /** the body of an answer the client could not parse (the SDK's deserialization error) */
  $responseBodyText?: unknown;
  /** the answer itself, its body as bytes when aws-clients.ts kept an XML error body */
  $response?: { body?: unknown };
}

const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim().slice(0, 300);

const XML_ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&apos;': "'" };

/**
 * The code and message of an XML error body the client could not parse: an answer in another
 * protocol than the client's (the query protocol's <ErrorResponse>, as an emulator such as moto
 * gives for a refused signature or policy, or a proxy in front of the service). Without it the
 * reason would be the parser's "Unexpected token '<'" instead of the service's own words.
 */
function xmlErrorOf(body: unknown): { code: string; message: string } | undefined {
  if (typeof body !== 'string') return undefined;
  const head = body.slice(0, 8192);
  const code = /<Code>\s*([\w.:-]{1,128})\s*<\/Code>/.exec(head)?.[1];
  if (code === undefined) return undefined;
  const message = /<Message>([^<]{0,2048})<\/Message>/.exec(head)?.[1] ?? '';
  return { code, message: message.replace(/&(amp|lt|gt|quot|apos);/g, (m) => XML_ENTITIES[m] ?? m) };
}

/**
 * The words of an error page that is neither JSON nor an XML error (a proxy's or a load
 * balancer's HTML or text): its title or first heading, else its text without tags. Without it the
 * reason was the parser's "Unexpected token '<'" (the SDK) or only the status (the direct send).
 */
function pageWordsOf(body: unknown): string | undefined {
  if (typeof body !== 'string') return undefined;
  const head = body.slice(0, 8192);
  const tagged = /<title[^>]*>([^<]{1,200})<\/title>/i.exec(head)?.[1] ?? /<h1[^>]*>([^<]{1,200})<\/h1>/i.exec(head)?.[1];
  const words = (tagged ?? head.replace(/<[^>]*>/g, ' ')).replace(/\s+/g, ' ').trim().slice(0, 200);
  return words === '' ? undefined : words.replace(/&(amp|lt|gt|quot|apos);/g, (m) => XML_ENTITIES[m] ?? m);
}

/**
 * The service's error code of a failure, as classifyAwsError reads it: an XML body's <Code> (an
 * answer the client could not parse, or the direct send's non-JSON error), else `HTTP<status>` for
 * an error page without a code, else the error's name. sqs-direct.ts decides from the same code
 * what to do with a batch refused whole, so an XML refusal is handled as the JSON one (review6).
 */
export function awsErrorCodeOf(err: unknown): string {
  return errorFactsOf(err).name;
}

function errorFactsOf(err: unknown) {
  const e = (typeof err === 'object' && err !== null ? err : {}) as SdkErrorFacts;
  const cause = (typeof e.cause === 'object' && e.cause !== null ? e.cause : {}) as SdkErrorFacts;
  const kept = e.$response?.body;
  const bodyText = e.$responseBodyText ?? (kept instanceof Uint8Array ? Buffer.from(kept).toString('utf8') : undefined);
  const xml = xmlErrorOf(bodyText);
  const status = typeof e.$metadata?.httpStatusCode === 'number' ? e.$metadata.httpStatusCode : null;
  // an answer that is not the service's (no code in it): the status and the page's own words, the same both ways of sending
  const page = xml === undefined && status !== null ? pageWordsOf(bodyText) : undefined;
  const name = xml?.code ?? (page !== undefined ? `HTTP${status}` : typeof e.name === 'string' ? e.name : 'Error');
  return { e, cause, xml, status, page, name };
}

/**
 * An AWS SDK call's failure as a delivery outcome: retryable or permanent by the service's error
 * code (RETRIED_CODES; from an XML body the client could not parse too), its HTTP status, or the
 * connection's error, with the code and the service's message as the reason (never a credential:
 * the SDK's messages name the resource).
 */
export function classifyAwsError(
  err: unknown,
  service: string,
  at: { durationMs: number; timeoutMs: number; aborted: boolean },
): DeliveryOutcome {
  const { e, cause, xml, status, page, name } = errorFactsOf(err);
  const code = typeof e.code === 'string' ? e.code : typeof cause.code === 'string' ? cause.code : undefined;
  const message = oneLine(xml?.message ?? page ?? (typeof e.message === 'string' ? e.message : String(err)));
  const fail = (kind: 'retryable' | 'permanent', statusClass: StatusClass, error: string): DeliveryOutcome => ({
    kind,
    status,
    body: null,
    error,
    durationMs: at.durationMs,
    statusClass,
  });

  if (at.aborted || name === 'AbortError' || name === 'TimeoutError') {
    return fail('retryable', 'timeout', `${service}: no answer within ${at.timeoutMs} ms`);
  }
  // an address the outbound policy refuses (an endpointUrl or queue URL at a literal, or a name
  // resolving to one): never connected to, and final, as for every other destination (address_blocked)
  const blocked = [err, e.cause].find(isBlockedAddressError);
  if (blocked) return fail('permanent', 'blocked', `${service}: address_blocked: ${oneLine(blocked.message)}`);
  if (code !== undefined && NETWORK_CODES.has(code)) {
    return fail('retryable', code === 'ECONNREFUSED' ? 'refused' : 'network', `${service}: ${code} (${message})`);
  }
  const reason = `${service}: ${name}: ${message}`;
  // a request signed with a clock off the service's (RequestExpired, InvalidSignatureException's
  // "Signature expired", ...) whose answer corrected the client's clock: the next attempt is signed right
  const clockCorrected = e.$metadata?.clockSkewCorrected === true;
  if (RETRIED_CODES.has(name) || e.$retryable !== undefined || clockCorrected)
    return fail('retryable', status !== null && status < 500 ? '4xx' : '5xx', reason);
  if (status !== null && status >= 500) return fail('retryable', '5xx', reason);
  if (status !== null && status >= 400) return fail('permanent', '4xx', reason);
  // no answer from the service and no code we know (a credentials provider that failed to reach
  // its endpoint, a socket closed): retried, a wrong "permanent" would lose the message
  return fail('retryable', 'network', reason);
}
