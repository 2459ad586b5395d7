import { describe, expect, it } from 'vitest';
import { classifyError, classifyResponse, type ResponseFacts } from '../../../../src/destinations/http/classify.js';
import { BlockedAddressError } from '../../../../src/delivery/guarded-lookup.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');
const facts = (status: number, over: Partial<ResponseFacts> = {}): ResponseFacts => ({
  status,
  headers: {},
  body: 'b',
  durationMs: 12,
  retryOnStatus: [],
  now: NOW,
  ...over,
});

describe('classifyResponse', () => {
  it.each([
    // status, opted-in 4xx codes, kind, status class, error starts with
    [200, [], 'success', '2xx', undefined],
    [204, [], 'success', '2xx', undefined],
    [299, [], 'success', '2xx', undefined],
    [301, [], 'permanent', '3xx', 'redirect not followed (HTTP 301 Moved Permanently)'],
    [308, [], 'permanent', '3xx', 'redirect not followed (HTTP 308'],
    [400, [], 'permanent', '4xx', 'HTTP 400 Bad Request, not retried'],
    [404, [429], 'permanent', '4xx', 'HTTP 404 Not Found, not retried'],
    [429, [], 'permanent', '4xx', 'HTTP 429 Too Many Requests, not retried'],
    [429, [408, 429], 'retryable', '4xx', 'HTTP 429 Too Many Requests, retried as the endpoint opted in'],
    [499, [], 'permanent', '4xx', 'HTTP 499, not retried'],
    [500, [], 'retryable', '5xx', 'HTTP 500 Internal Server Error'],
    [503, [503], 'retryable', '5xx', 'HTTP 503 Service Unavailable'],
    [599, [], 'retryable', '5xx', 'HTTP 599'],
    [101, [], 'permanent', 'network', 'unexpected HTTP 101 Switching Protocols'],
  ] as const)('%i (opted in %j) -> %s / %s', (status, retryOnStatus, kind, statusClass, error) => {
    const outcome = classifyResponse(facts(status, { retryOnStatus }));
    expect(outcome).toMatchObject({ kind, status, statusClass, body: 'b', durationMs: 12 });
    if (error === undefined) expect(outcome).not.toHaveProperty('error');
    else expect(outcome.kind !== 'success' && outcome.error.startsWith(error)).toBe(true);
  });

  it.each([
    // status, opted in, Retry-After, expected retryAfterMs (absent: undefined)
    [503, [], '7', 7_000],
    [500, [], ['2', '9'], 2_000],
    [429, [429], 'Thu, 01 Jan 2026 00:00:30 GMT', 30_000],
    [503, [], 'soon', undefined],
    [503, [], undefined, undefined],
    // a permanent answer never carries a retry delay, whatever it asks for
    [429, [], '7', undefined],
    [404, [], '7', undefined],
    [301, [], '7', undefined],
    [200, [], '7', undefined],
  ] as const)('%i (opted in %j) with Retry-After %j -> retryAfterMs %s', (status, retryOnStatus, retryAfter, expected) => {
    const headers = retryAfter === undefined ? {} : { 'retry-after': typeof retryAfter === 'string' ? retryAfter : [...retryAfter] };
    const outcome = classifyResponse(facts(status, { retryOnStatus, headers }));
    if (expected === undefined) expect(outcome).not.toHaveProperty('retryAfterMs');
    else expect(outcome).toHaveProperty('retryAfterMs', expected);
  });
});

describe('classifyResponse: the pause a 429 or 503 asks of the whole endpoint', () => {
  it.each([
    // status, opted in, Retry-After, expected endpointPauseMs (absent: undefined)
    [503, [], '30', 30_000],
    [503, [], 'Thu, 01 Jan 2026 00:00:30 GMT', 30_000],
    // refused (not opted in): this delivery FAILS, but the endpoint still asked everyone to wait
    [429, [], '7', 7_000],
    [429, [429], '7', 7_000],
    [503, [], undefined, undefined],
    [503, [], 'soon', undefined],
    [503, [], '0', undefined],
    // only 429 and 503 speak for the endpoint: a 500's Retry-After is about this request
    [500, [], '7', undefined],
    [502, [], '7', undefined],
    [408, [408], '7', undefined],
    [200, [], '7', undefined],
  ] as const)('%i (opted in %j) with Retry-After %j -> endpointPauseMs %s', (status, retryOnStatus, retryAfter, expected) => {
    const headers = retryAfter === undefined ? {} : { 'retry-after': retryAfter };
    const outcome = classifyResponse(facts(status, { retryOnStatus, headers }));
    if (expected === undefined) expect(outcome).not.toHaveProperty('endpointPauseMs');
    else expect(outcome).toHaveProperty('endpointPauseMs', expected);
  });
});

const coded = (code: string, message = `failed ${code}`, cause?: unknown): Error =>
  Object.assign(new Error(message, cause === undefined ? undefined : { cause }), { code });
const named = (name: string): Error => Object.assign(new Error('The operation was aborted due to timeout'), { name });

describe('classifyError', () => {
  const ctx = { durationMs: 40, timeoutMs: 5_000 };

  it.each([
    [
      'a blocked address',
      new BlockedAddressError('169.254.169.254', 'metadata.internal'),
      'permanent',
      'blocked',
      /^address 169\.254\.169\.254 \(resolved from metadata\.internal\) is blocked/,
    ],
    ['AbortSignal.timeout()', named('TimeoutError'), 'retryable', 'timeout', /^timed out: attempt exceeded 5000 ms$/],
    [
      'a TimeoutError as cause',
      new Error('fetch failed', { cause: named('TimeoutError') }),
      'retryable',
      'timeout',
      /attempt exceeded 5000 ms/,
    ],
    [
      'connect timeout',
      coded('UND_ERR_CONNECT_TIMEOUT'),
      'retryable',
      'timeout',
      /^timed out: connect timed out within 5000 ms \(UND_ERR_CONNECT_TIMEOUT\)$/,
    ],
    ['headers timeout', coded('UND_ERR_HEADERS_TIMEOUT'), 'retryable', 'timeout', /no response headers/],
    [
      'the receiver refused the handshake: TLS 1.3 certificate required',
      coded('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED'),
      'retryable',
      'network',
      /^TLS handshake refused by the receiver: alert "certificate required" \(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED\)$/,
    ],
    [
      'the receiver does not know our CA, under a socket error',
      new Error('other side closed', { cause: coded('ERR_SSL_TLSV1_ALERT_UNKNOWN_CA') }),
      'retryable',
      'network',
      /alert "unknown ca"/,
    ],
    ['a TLS 1.2 handshake failure', coded('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE'), 'retryable', 'network', /alert "handshake failure"/],
    ['body timeout', coded('UND_ERR_BODY_TIMEOUT'), 'retryable', 'timeout', /response body stalled/],
    ['ETIMEDOUT in the cause chain', new Error('outer', { cause: coded('ETIMEDOUT') }), 'retryable', 'timeout', /connection timed out/],
    [
      'ECONNREFUSED',
      coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1'),
      'retryable',
      'refused',
      /^connection refused: connect ECONNREFUSED 127\.0\.0\.1:1$/,
    ],
    [
      'ECONNREFUSED inside an AggregateError (happy eyeballs)',
      new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')], 'all attempts failed'),
      'retryable',
      'refused',
      /^connection refused/,
    ],
    ['an invalid URL', coded('ERR_INVALID_URL', 'Invalid URL'), 'permanent', 'network', /^invalid request: Invalid URL$/],
    ['an invalid argument', coded('UND_ERR_INVALID_ARG', 'invalid\n  header'), 'permanent', 'network', /^invalid request: invalid header$/],
    ['ECONNRESET', coded('ECONNRESET', 'socket hang up'), 'retryable', 'network', /^network error \(ECONNRESET\): socket hang up$/],
    ['ENOTFOUND', coded('ENOTFOUND', 'getaddrinfo ENOTFOUND x.invalid'), 'retryable', 'network', /^network error \(ENOTFOUND\)/],
    ['an error without code', new Error('other side closed'), 'retryable', 'network', /^network error \(unknown\): other side closed$/],
    ['a thrown string', 'weird', 'retryable', 'network', /^network error \(unknown\): weird$/],
  ] as const)('%s -> %s / %s', (_what, err, kind, statusClass, error) => {
    const outcome = classifyError(err, ctx);
    expect(outcome).toMatchObject({ kind, statusClass, status: null, body: null, durationMs: 40 });
    expect(outcome.kind !== 'success' && outcome.error).toMatch(error);
  });

  it('keeps the status and body of a response whose body read failed', () => {
    const outcome = classifyError(coded('UND_ERR_BODY_TIMEOUT'), { ...ctx, status: 200, body: 'par' });
    expect(outcome).toMatchObject({ kind: 'retryable', statusClass: 'timeout', status: 200, body: 'par' });
  });

  it('cuts the error text to one line of at most 300 characters of the message', () => {
    const outcome = classifyError(coded('ECONNRESET', `a\n${'x'.repeat(1_000)}`), ctx);
    const error = outcome.kind === 'success' ? '' : outcome.error;
    expect(error).not.toMatch(/\n/);
    expect(error.length).toBe('network error (ECONNRESET): '.length + 300);
  });
});
