import { STATUS_CODES } from 'node:http';
import { isBlockedAddressError } from '../../delivery/guarded-lookup.js';
import { parseRetryAfter } from './retry-after.js';
import type { DeliveryOutcome, StatusClass } from '../../delivery/types.js';

export interface ResponseFacts {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** the kept prefix of the body */
  body: string;
  durationMs: number;
  /** 4xx codes the endpoint opted in to retrying */
  retryOnStatus: readonly number[];
  /** epoch ms, for a Retry-After HTTP-date */
  now: number;
}

/** Answers whose Retry-After speaks for the whole endpoint, whatever becomes of this delivery (docs/limits.md). */
const ENDPOINT_PAUSE_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/**
 * 2xx success; 3xx permanent (redirects are not followed); 4xx permanent unless opted in; 5xx
 * retryable. A 429 or 503 with Retry-After also carries the pause it asks of the whole endpoint.
 */
export function classifyResponse(r: ResponseFacts): DeliveryOutcome {
  const outcome = classifyStatus(r);
  if (outcome.kind === 'success' || outcome.kind === 'deferred' || !ENDPOINT_PAUSE_STATUSES.has(r.status)) return outcome;
  const pauseMs = parseRetryAfter(r.headers['retry-after'], r.now);
  return pauseMs === undefined || pauseMs === 0 ? outcome : { ...outcome, endpointPauseMs: pauseMs };
}

function classifyStatus(r: ResponseFacts): DeliveryOutcome {
  const { status, body, durationMs } = r;
  const label = `HTTP ${status}${STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : ''}`;
  if (status >= 200 && status < 300) {
    return { kind: 'success', status, body, durationMs, statusClass: '2xx' };
  }
  if (status >= 300 && status < 400) {
    return fail('permanent', r, '3xx', `redirect not followed (${label})`);
  }
  if (status >= 400 && status < 500) {
    if (r.retryOnStatus.includes(status)) {
      return withRetryAfter(fail('retryable', r, '4xx', `${label}, retried as the endpoint opted in`), r);
    }
    return fail('permanent', r, '4xx', `${label}, not retried`);
  }
  if (status >= 500) {
    return withRetryAfter(fail('retryable', r, '5xx', label), r);
  }
  // 1xx never reaches here through undici's request(); anything else is not a real answer
  return fail('permanent', r, 'network', `unexpected ${label}`);
}

function fail(
  kind: 'permanent' | 'retryable',
  r: ResponseFacts,
  statusClass: StatusClass,
  error: string,
): Extract<DeliveryOutcome, { kind: 'permanent' | 'retryable' }> {
  return { kind, status: r.status, body: r.body, error, durationMs: r.durationMs, statusClass };
}

function withRetryAfter(outcome: Extract<DeliveryOutcome, { kind: 'permanent' | 'retryable' }>, r: ResponseFacts): DeliveryOutcome {
  const retryAfterMs = parseRetryAfter(r.headers['retry-after'], r.now);
  return retryAfterMs === undefined ? outcome : { ...outcome, retryAfterMs };
}

export interface ErrorContext {
  durationMs: number;
  /** the attempt's overall timeout, for the message */
  timeoutMs: number;
  /** set when the error happened while reading the body of a received response */
  status?: number | null;
  body?: string | null;
}

const TIMEOUT_CODES: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no response headers',
  UND_ERR_BODY_TIMEOUT: 'response body stalled',
  ETIMEDOUT: 'connection timed out',
};

/** Errors that say the request itself is wrong: sending it again cannot help. */
const INVALID_REQUEST_CODES = new Set([
  'UND_ERR_INVALID_ARG',
  'UND_ERR_NOT_SUPPORTED',
  'ERR_INVALID_URL',
  'ERR_INVALID_ARG_TYPE',
  'ERR_INVALID_ARG_VALUE',
]);

/**
 * A thrown error of one attempt -> outcome. Blocked address: permanent. Timeouts, refused and
 * other network errors (reset, DNS, socket closed, TLS): retryable. The error text is one line
 * built from codes and library messages, which carry no header values.
 */
export function classifyError(err: unknown, ctx: ErrorContext): DeliveryOutcome {
  const base = { status: ctx.status ?? null, body: ctx.body ?? null, durationMs: ctx.durationMs };
  if (isBlockedAddressError(err)) {
    return { ...base, kind: 'permanent', statusClass: 'blocked', error: oneLine(err.message) };
  }
  const codes = errorCodes(err);
  if (isAbortTimeout(err)) {
    return { ...base, kind: 'retryable', statusClass: 'timeout', error: `timed out: attempt exceeded ${ctx.timeoutMs} ms` };
  }
  const timeoutCode = codes.find((c) => c in TIMEOUT_CODES);
  if (timeoutCode !== undefined) {
    return {
      ...base,
      kind: 'retryable',
      statusClass: 'timeout',
      error: `timed out: ${TIMEOUT_CODES[timeoutCode]} within ${ctx.timeoutMs} ms (${timeoutCode})`,
    };
  }
  if (codes.includes('ECONNREFUSED')) {
    return { ...base, kind: 'retryable', statusClass: 'refused', error: `connection refused: ${messageOf(err)}` };
  }
  const alert = tlsAlertOf(codes);
  if (alert !== undefined) {
    // the receiver refused the handshake: its alert by name, as the attempt log shows it
    return {
      ...base,
      kind: 'retryable',
      statusClass: 'network',
      error: `TLS handshake refused by the receiver: alert "${alert.name}" (${alert.code})`,
    };
  }
  if (codes.some((c) => INVALID_REQUEST_CODES.has(c))) {
    return { ...base, kind: 'permanent', statusClass: 'network', error: `invalid request: ${messageOf(err)}` };
  }
  const code = codes[0] ?? 'unknown';
  return { ...base, kind: 'retryable', statusClass: 'network', error: `network error (${code}): ${messageOf(err)}` };
}

/**
 * The TLS alert a peer sent, from OpenSSL's error code (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED,
 * ERR_SSL_TLSV1_ALERT_UNKNOWN_CA, ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE, ...): its name as RFC 8446
 * writes it, lower case ("certificate required", "unknown ca").
 */
function tlsAlertOf(codes: readonly string[]): { name: string; code: string } | undefined {
  for (const code of codes) {
    const m = /^ERR_SSL_(?:TLSV1\d*|SSLV3)_ALERT_([A-Z0-9_]+)$/.exec(code);
    if (m?.[1]) return { name: m[1].toLowerCase().replace(/_/g, ' '), code };
  }
  return undefined;
}

/** AbortSignal.timeout() rejects with a DOMException named TimeoutError (possibly as a cause). */
export function isAbortTimeout(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e.name === 'TimeoutError') return true;
  }
  return false;
}

/** String codes of the error, its cause chain and an AggregateError's members (happy-eyeballs connects). */
export function errorCodes(err: unknown): string[] {
  const codes: string[] = [];
  const visit = (e: unknown, depth: number): void => {
    if (!(e instanceof Error) || depth > 4) return;
    const code: unknown = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    if (e instanceof AggregateError) for (const member of e.errors) visit(member, depth + 1);
    visit(e.cause, depth + 1);
  };
  visit(err, 0);
  return codes;
}

export function messageOf(err: unknown): string {
  return oneLine(err instanceof Error ? err.message || err.name : String(err));
}

export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 300);
}
