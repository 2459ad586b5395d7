import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, isErrorCode, type ErrorCode } from '../../../src/domain/error-codes.js';
import { AppError, describeError, internal, isAppError, permanent, transient } from '../../../src/domain/errors.js';
import { httpStatusOf } from '../../../src/http/problem.js';
import { ConfigError } from '../../../src/config/env-reader.js';
import { KubeApiError } from '../../../src/kube/api.js';
import { AwsCallError } from '../../../src/transport/signed-aws-call.js';

describe('describeError', () => {
  it.each<[string, unknown, string]>([
    ['an Error', new Error('boom'), 'boom'],
    ['an Error with an Error cause', new Error('could not sync', { cause: new Error('ECONNRESET') }), 'could not sync: ECONNRESET'],
    ['a non-Error cause is left out', new Error('x', { cause: 'secret-ish detail' }), 'x'],
    ['whitespace collapsed to one line', new Error('a\n  b\tc'), 'a b c'],
    [
      'knex insert: the SQL text dropped, the reason kept',
      new Error('insert into "webhook_event" ("payload") values ($1) returning * - duplicate key value violates unique constraint'),
      'duplicate key value violates unique constraint',
    ],
    [
      'knex multi-line select',
      new Error('select *\nfrom "t"\nwhere "a" = $1 - relation "t" does not exist'),
      'relation "t" does not exist',
    ],
    ['a message that only looks like SQL is kept', new Error('selected endpoint is gone'), 'selected endpoint is gone'],
    ['a thrown string', 'plain\nstring', 'plain string'],
    ['a thrown number', 42, '42'],
    [
      "a URL's user and password are left out",
      new Error('could not connect', { cause: new Error('bad postgres://app:s3cret@db.internal:5432/fanout') }),
      'could not connect: bad postgres://[redacted]@db.internal:5432/fanout',
    ],
    ['a URL without user information is kept', new Error('GET https://example.com/a@b failed'), 'GET https://example.com/a@b failed'],
    ['undefined', undefined, 'undefined'],
  ])('%s', (_what, err, expected) => {
    expect(describeError(err)).toBe(expected);
  });

  it('never exceeds 500 characters', () => {
    expect(describeError(new Error('x'.repeat(2_000)))).toHaveLength(500);
    expect(describeError('y'.repeat(2_000))).toHaveLength(500);
  });
});

describe('AppError kinds', () => {
  it.each([
    ['permanent', permanent('invalid_json', 'm'), 'permanent', 'invalid_json', undefined],
    ['transient, the default Retry-After', transient('database_unavailable', 'm'), 'transient', 'database_unavailable', 5],
    ['transient, its own Retry-After', transient('publish_failed', 'm', undefined, 30), 'transient', 'publish_failed', 30],
    ['internal', internal('database_error', 'm'), 'internal', 'database_error', undefined],
  ] as const)('%s() carries its kind, code and Retry-After', (_what, err, kind, code, retryAfterSeconds) => {
    expect(err).toBeInstanceOf(AppError);
    expect(isAppError(err)).toBe(true);
    expect(err).toMatchObject({ kind, code, message: 'm' });
    expect(err.retryAfterSeconds).toBe(retryAfterSeconds);
  });

  it('keeps its cause', () => {
    const cause = new Error('connect ECONNREFUSED');
    expect(transient('database_unavailable', 'm', cause).cause).toBe(cause);
  });

  it('a plain Error is not an AppError', () => {
    expect(isAppError(new Error('x'))).toBe(false);
  });

  it('takes only registered codes of its kind (checked by the compiler)', () => {
    // @ts-expect-error a code that is not registered
    expect(() => permanent('invalid_jsn', 'm')).toThrow();
    // @ts-expect-error a transient code raised as permanent
    permanent('database_unavailable', 'm');
    // @ts-expect-error a permanent code raised as internal
    internal('invalid_event_id', 'm');
  });
});

describe('the error code registry', () => {
  const codes = Object.keys(ERROR_CODES) as ErrorCode[];

  it.each(codes)('%s: its kind and its HTTP status agree (4xx permanent, 503 transient, 500 internal)', (code) => {
    const { kind, status } = ERROR_CODES[code];
    const expected = kind === 'permanent' ? status >= 400 && status < 500 : kind === 'transient' ? status === 503 : status === 500;
    expect(expected, `${code}: ${kind} with ${status}`).toBe(true);
  });

  it.each<[ErrorCode, number]>([
    ['unauthorized', 401],
    ['invalid_token', 401],
    ['insufficient_scope', 403],
    ['not_found', 404],
    ['not_replayable', 409],
    ['unique_violation', 409],
    ['payload_too_large', 413],
    ['invalid_json', 400],
    ['database_unavailable', 503],
    ['database_error', 500],
  ])('an AppError of %s answers HTTP %i', (code, status) => {
    expect(httpStatusOf(new AppError(code, 'm'))).toBe(status);
  });

  it('isErrorCode knows the registered codes and nothing else', () => {
    expect(isErrorCode('not_found')).toBe(true);
    expect(isErrorCode('toString')).toBe(false);
    expect(isErrorCode('nope')).toBe(false);
  });

  it('docs/architecture.md lists every code with its kind and status, and no other', () => {
    const doc = readFileSync(new URL('../../../docs/architecture.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z0-9_]+)` \| (permanent|transient|internal) \| (\d{3}) \|/gm)].map((m) => [
      m[1],
      m[2],
      Number(m[3]),
    ]);
    expect(rows).toEqual(codes.map((c) => [c, ERROR_CODES[c].kind, ERROR_CODES[c].status]));
  });
});

// The errors of our own clients are AppErrors of a kind too, and keep what their callers read.
describe("the clients' errors in the taxonomy", () => {
  it.each<[string, AppError, string, ErrorCode]>([
    ['a configuration with problems', new ConfigError(['PORT is not a number']), 'permanent', 'invalid_config'],
    [
      'an AWS call throttled',
      new AwsCallError('ThrottlingException', 'sns: ThrottlingException', { status: 400, retryable: true }),
      'transient',
      'aws_unavailable',
    ],
    [
      'an AWS call refused',
      new AwsCallError('AccessDenied', 'sqs: AccessDenied (HTTP 403)', { status: 403, retryable: false }),
      'internal',
      'aws_call_error',
    ],
    ['a Kubernetes conflict', new KubeApiError(409, 'Conflict', 'PUT x: conflict'), 'transient', 'kube_api_unavailable'],
    ['a Kubernetes throttle', new KubeApiError(429, 'TooManyRequests', 'GET x: slow down'), 'transient', 'kube_api_unavailable'],
    ['a Kubernetes server error', new KubeApiError(503, '', 'GET x: HTTP 503'), 'transient', 'kube_api_unavailable'],
    ['a Kubernetes RBAC refusal', new KubeApiError(403, 'Forbidden', 'PATCH x: forbidden'), 'internal', 'kube_api_refused'],
    ['a Kubernetes object missing', new KubeApiError(404, 'NotFound', 'GET x: not found'), 'internal', 'kube_api_refused'],
  ])('%s: %s, %s', (_what, err, kind, code) => {
    expect(isAppError(err)).toBe(true);
    expect(err).toMatchObject({ kind, code });
  });

  it('each keeps its own name and fields', () => {
    expect(new ConfigError(['A is required', 'B is not a number'])).toMatchObject({
      name: 'ConfigError',
      problems: ['A is required', 'B is not a number'],
      message: 'invalid configuration:\n  - A is required\n  - B is not a number',
    });
    expect(new AwsCallError('SignatureDoesNotMatch', 'm', { status: 403, retryable: false })).toMatchObject({
      name: 'SignatureDoesNotMatch',
      status: 403,
      retryable: false,
    });
    expect(new KubeApiError(409, 'AlreadyExists', 'm')).toMatchObject({ name: 'KubeApiError', statusCode: 409, reason: 'AlreadyExists' });
  });
});
