import { describe, expect, it } from 'vitest';
import { BlockedAddressError } from '../../../../src/delivery/guarded-lookup.js';
import { classifyAwsError } from '../../../../src/destinations/aws/aws-errors.js';

/** an SDK service error as the v3 clients throw them: the code as the name, the HTTP status in $metadata */
const serviceError = (name: string, status: number | undefined, message = `${name} happened`, more: object = {}) =>
  Object.assign(new Error(message), { name, $metadata: status === undefined ? {} : { httpStatusCode: status }, ...more });

/** a socket's failure as node:http reports it, sometimes wrapped by the SDK's request handler */
const socketError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:4566`), { code });

const at = { durationMs: 12, timeoutMs: 5_000, aborted: false };

/** what the SDK throws when it can not parse the answer: the parser's error, the status, the body as text */
const unparsed = (status: number, code: string | undefined, message: string) =>
  Object.assign(new SyntaxError(`Unexpected token '<', "<?xml vers"... is not valid JSON`), {
    $metadata: { httpStatusCode: status },
    $responseBodyText:
      code === undefined
        ? `<html><body><h1>${message}</h1></body></html>`
        : `<?xml version="1.0" encoding="UTF-8"?><ErrorResponse><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`,
  });

describe("AWS's errors, classified", () => {
  it.each([
    // the service refused: final, with its code and words
    { name: 'an unknown queue', err: serviceError('QueueDoesNotExist', 400), kind: 'permanent', statusClass: '4xx', status: 400 },
    { name: 'an unknown topic', err: serviceError('NotFoundException', 404), kind: 'permanent', statusClass: '4xx', status: 404 },
    { name: 'IAM refused the action', err: serviceError('AccessDenied', 403), kind: 'permanent', statusClass: '4xx', status: 403 },
    { name: 'an unknown access key', err: serviceError('InvalidClientTokenId', 403), kind: 'permanent', statusClass: '4xx', status: 403 },
    {
      name: 'a bad signature (wrong secret key)',
      err: serviceError('SignatureDoesNotMatch', 403),
      kind: 'permanent',
      statusClass: '4xx',
      status: 403,
    },
    {
      name: 'a message over the limit',
      err: serviceError('InvalidParameterValue', 400),
      kind: 'permanent',
      statusClass: '4xx',
      status: 400,
    },
    {
      name: 'a KMS key the role may not use',
      err: serviceError('KMSAccessDeniedException', 400),
      kind: 'permanent',
      statusClass: '4xx',
      status: 400,
    },
    // the service throttles or is not there right now: retried
    { name: 'throttled (400)', err: serviceError('ThrottlingException', 400), kind: 'retryable', statusClass: '4xx', status: 400 },
    { name: 'SQS over its request rate', err: serviceError('RequestThrottled', 403), kind: 'retryable', statusClass: '4xx', status: 403 },
    { name: 'a KMS throttle', err: serviceError('KMSThrottlingException', 400), kind: 'retryable', statusClass: '4xx', status: 400 },
    {
      name: "SQS's KMS throttle (an SSE-KMS queue)",
      err: serviceError('KmsThrottled', 400),
      kind: 'retryable',
      statusClass: '4xx',
      status: 400,
    },
    { name: 'an expired session of the role', err: serviceError('ExpiredToken', 400), kind: 'retryable', statusClass: '4xx', status: 400 },
    // the outbound policy refused the address: final, as for every destination
    {
      name: 'an address the outbound policy refuses (the literal check, or the lookup)',
      err: new BlockedAddressError('169.254.169.254', '169.254.169.254'),
      kind: 'permanent',
      statusClass: 'blocked',
      status: null,
    },
    {
      name: 'an address the outbound policy refuses, wrapped by the client',
      err: Object.assign(new Error('connect failed'), { cause: new BlockedAddressError('10.0.0.1', 'queue.internal') }),
      kind: 'permanent',
      statusClass: 'blocked',
      status: null,
    },
    {
      name: "signed with a clock off the service's, which the client has corrected since",
      err: Object.assign(serviceError('InvalidSignatureException', 403), { $metadata: { httpStatusCode: 403, clockSkewCorrected: true } }),
      kind: 'retryable',
      statusClass: '4xx',
      status: 403,
    },
    {
      name: 'a clock-skew code the client did not correct (its clock was right: a wrong key)',
      err: serviceError('InvalidSignatureException', 403),
      kind: 'permanent',
      statusClass: '4xx',
      status: 403,
    },
    { name: 'unavailable (503)', err: serviceError('ServiceUnavailable', 503), kind: 'retryable', statusClass: '5xx', status: 503 },
    { name: "the service's internal error", err: serviceError('InternalFailure', 500), kind: 'retryable', statusClass: '5xx', status: 500 },
    { name: 'a 5xx of a code we do not name', err: serviceError('SomethingNew', 502), kind: 'retryable', statusClass: '5xx', status: 502 },
    {
      name: 'a code the SDK marks retryable (429)',
      err: serviceError('SlowDownPlease', 429, 'slow down', { $retryable: { throttling: true } }),
      kind: 'retryable',
      statusClass: '4xx',
      status: 429,
    },
    {
      name: 'a retried code without a status',
      err: serviceError('InternalError', undefined),
      kind: 'retryable',
      statusClass: '5xx',
      status: null,
    },
    // nothing reached the service: retried, the status null
    { name: 'connection refused', err: socketError('ECONNREFUSED'), kind: 'retryable', statusClass: 'refused', status: null },
    { name: 'connection reset', err: socketError('ECONNRESET'), kind: 'retryable', statusClass: 'network', status: null },
    { name: 'a name that does not resolve', err: socketError('ENOTFOUND'), kind: 'retryable', statusClass: 'network', status: null },
    {
      name: 'a socket error the SDK wrapped (the code on the cause)',
      err: Object.assign(new Error('socket hang up'), { name: 'Error', cause: socketError('EPIPE') }),
      kind: 'retryable',
      statusClass: 'network',
      status: null,
    },
    { name: 'the SDK timed out', err: serviceError('TimeoutError', undefined), kind: 'retryable', statusClass: 'timeout', status: null },
    {
      name: 'the attempt was aborted',
      err: serviceError('AbortError', undefined),
      kind: 'retryable',
      statusClass: 'timeout',
      status: null,
    },
    {
      name: 'credentials that could not be loaded (no status, no code)',
      err: serviceError('CredentialsProviderError', undefined, 'Could not load credentials from any providers'),
      kind: 'retryable',
      statusClass: 'network',
      status: null,
    },
    { name: 'not an Error at all', err: 'boom', kind: 'retryable', statusClass: 'network', status: null },
    // an XML error body the JSON client could not parse (moto's refusals, a proxy): its <Code> decides
    { name: 'an XML AccessDenied', err: unparsed(403, 'AccessDenied', 'not allowed'), kind: 'permanent', statusClass: '4xx', status: 403 },
    { name: 'an XML throttle', err: unparsed(400, 'Throttling', 'Rate exceeded'), kind: 'retryable', statusClass: '4xx', status: 400 },
    {
      name: 'an HTML page of a proxy (no <Code>)',
      err: unparsed(502, undefined, 'Bad Gateway'),
      kind: 'retryable',
      statusClass: '5xx',
      status: 502,
    },
  ])('$name: $kind ($statusClass)', ({ err, kind, statusClass, status }) => {
    const outcome = classifyAwsError(err, 'SQS', at);
    expect(outcome).toMatchObject({ kind, statusClass, status, body: null, durationMs: 12 });
    expect(outcome.kind !== 'success' && outcome.error).toMatch(/^SQS: /);
  });

  it("says the service's code and words, on one bounded line", () => {
    const refused = classifyAwsError(
      serviceError('AccessDenied', 403, 'User: arn:aws:iam::123456789012:user/worker is not authorized\n  to perform: sqs:SendMessage'),
      'SQS',
      at,
    );
    expect(refused).toMatchObject({
      error: 'SQS: AccessDenied: User: arn:aws:iam::123456789012:user/worker is not authorized to perform: sqs:SendMessage',
    });
    const long = classifyAwsError(serviceError('InvalidParameterValue', 400, 'x'.repeat(1000)), 'SNS', at);
    expect(long.kind !== 'success' && long.error.length).toBeLessThanOrEqual('SNS: InvalidParameterValue: '.length + 300);
  });

  it("an XML error body says the service's code and words, not the parser's", () => {
    const refused = classifyAwsError(
      unparsed(403, 'InvalidClientTokenId', 'The security token included in the request is invalid &amp; unknown.'),
      'SQS',
      at,
    );
    expect(refused).toMatchObject({
      kind: 'permanent',
      error: 'SQS: InvalidClientTokenId: The security token included in the request is invalid & unknown.',
    });
    // the body as aws-clients.ts keeps it, on the answer the error carries
    const kept = Object.assign(new SyntaxError("Unexpected token '<'"), {
      $metadata: { httpStatusCode: 403 },
      $response: {
        body: Buffer.from('<ErrorResponse><Error><Code>AccessDenied</Code><Message>not sqs:SendMessage</Message></Error></ErrorResponse>'),
      },
    });
    expect(classifyAwsError(kept, 'SQS', at)).toMatchObject({ kind: 'permanent', error: 'SQS: AccessDenied: not sqs:SendMessage' });
    expect(classifyAwsError(unparsed(502, undefined, 'Bad Gateway'), 'SQS', at)).toMatchObject({
      error: 'SQS: HTTP502: Bad Gateway',
    });
    const titled = Object.assign(new SyntaxError('Unexpected token'), {
      $metadata: { httpStatusCode: 503 },
      $responseBodyText: '<html><head><title>Service Unavailable &amp; more</title></head><body><p>later</p></body></html>',
    });
    expect(classifyAwsError(titled, 'SQS', at)).toMatchObject({ kind: 'retryable', error: 'SQS: HTTP503: Service Unavailable & more' });
  });

  it('an attempt past its deadline is a timeout, whatever the SDK threw, and says the deadline', () => {
    const outcome = classifyAwsError(serviceError('QueueDoesNotExist', 400), 'EventBridge', { ...at, aborted: true });
    expect(outcome).toMatchObject({ kind: 'retryable', statusClass: 'timeout', error: 'EventBridge: no answer within 5000 ms' });
  });

  it('a socket error names its code', () => {
    expect(classifyAwsError(socketError('ECONNREFUSED'), 'SNS', at)).toMatchObject({
      error: 'SNS: ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:4566)',
    });
  });
});
