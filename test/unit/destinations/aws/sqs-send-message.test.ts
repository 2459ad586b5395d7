import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { classifyAwsError } from '../../../../src/destinations/aws/aws-errors.js';
import {
  parseSendMessageAnswer,
  sendMessageErrorOf,
  sendMessageInput,
  sendMessageUrl,
} from '../../../../src/destinations/aws/sqs-send-message.js';
import { brokerMessage } from '../broker-message.js';

const QUEUE = 'https://sqs.eu-west-1.amazonaws.com/123456789012/payments';
const md5 = (s: string): string => createHash('md5').update(s, 'utf8').digest('hex');

describe("SendMessage's input (the same for the direct POST and the SDK's send)", () => {
  it.each([
    { name: 'a standard queue: no FIFO ids', queueUrl: QUEUE, orderingKey: null, fifo: {} },
    {
      name: 'a FIFO queue, ordered: the event id de-duplicates, the ordering key groups',
      queueUrl: `${QUEUE}.fifo`,
      orderingKey: 'customer-7',
      fifo: { MessageDeduplicationId: 'e-1', MessageGroupId: 'customer-7' },
    },
    {
      name: 'a FIFO queue, not ordered: one group',
      queueUrl: `${QUEUE}.fifo`,
      orderingKey: null,
      fifo: { MessageDeduplicationId: 'e-1', MessageGroupId: 'webhook-fanout' },
    },
  ])('$name', ({ queueUrl, orderingKey, fifo }) => {
    const input = sendMessageInput(brokerMessage({ orderingKey }), { queueUrl });
    expect(input).toEqual({
      QueueUrl: queueUrl,
      MessageBody: '{"id":"evt_1"}',
      MessageAttributes: expect.objectContaining({ 'ce-id': { DataType: 'String', StringValue: 'e-1' } }),
      ...fifo,
    });
  });
});

describe('where a SendMessage goes (as the SDK client resolves it)', () => {
  it.each([
    { name: 'no endpoint: the queue URL origin', endpointUrl: null, queueUrl: QUEUE, url: 'https://sqs.eu-west-1.amazonaws.com/' },
    {
      name: 'a VPC endpoint: it, not the queue URL',
      endpointUrl: 'https://vpce-0a1b.sqs.eu-west-1.vpce.amazonaws.com',
      queueUrl: QUEUE,
      url: 'https://vpce-0a1b.sqs.eu-west-1.vpce.amazonaws.com/',
    },
    { name: 'an emulator with a port', endpointUrl: 'http://127.0.0.1:4566', queueUrl: QUEUE, url: 'http://127.0.0.1:4566/' },
    { name: "an endpoint's path is kept", endpointUrl: 'https://gw.example/sqs', queueUrl: QUEUE, url: 'https://gw.example/sqs' },
    {
      name: 'a queue URL with a port and no endpoint',
      endpointUrl: null,
      queueUrl: 'http://localhost:9324/000000000000/q',
      url: 'http://localhost:9324/',
    },
  ])('$name', ({ endpointUrl, queueUrl, url }) => {
    expect(sendMessageUrl({ endpointUrl, queueUrl }).href).toBe(url);
  });
});

describe("SendMessage's answer", () => {
  const body = '{"id":"evt_1"}';
  it.each([
    {
      name: 'the id and the MD5 of the body',
      text: JSON.stringify({ MessageId: 'm-1', MD5OfMessageBody: md5(body) }),
      answer: { messageId: 'm-1', sequence: undefined },
    },
    {
      name: "a FIFO queue's sequence number",
      text: JSON.stringify({ MessageId: 'm-2', MD5OfMessageBody: md5(body), SequenceNumber: '18849496460467696128' }),
      answer: { messageId: 'm-2', sequence: '18849496460467696128' },
    },
    { name: 'no MD5 given: nothing to check', text: '{"MessageId":"m-3"}', answer: { messageId: 'm-3', sequence: undefined } },
    { name: 'no id', text: '{}', answer: { messageId: undefined, sequence: undefined } },
  ])('$name', ({ text, answer }) => {
    expect(parseSendMessageAnswer(text, body)).toEqual(answer);
  });

  it.each([
    {
      name: 'the MD5 of other bytes',
      text: JSON.stringify({ MessageId: 'm-1', MD5OfMessageBody: md5('other') }),
      error: 'InvalidChecksumError',
    },
    { name: 'not JSON', text: '<html>', error: 'InvalidAnswer' },
  ])('$name: the attempt fails, retried (no status: not the service refusing)', ({ text, error }) => {
    let thrown: unknown;
    try {
      parseSendMessageAnswer(text, body);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({ name: error });
    expect(classifyAwsError(thrown, 'SQS', { durationMs: 1, timeoutMs: 5_000, aborted: false })).toMatchObject({
      kind: 'retryable',
      status: null,
    });
  });
});

describe("an error answer, as the SDK's error and classified", () => {
  const json = (type: string, message: string) => JSON.stringify({ __type: type, message });
  it.each([
    {
      name: 'an unknown queue (the JSON type wins over the query code)',
      status: 400,
      text: json('com.amazonaws.sqs#QueueDoesNotExist', 'The specified queue does not exist.'),
      header: 'AWS.SimpleQueueService.NonExistentQueue;Sender',
      kind: 'permanent',
      error: 'SQS: QueueDoesNotExist: The specified queue does not exist.',
    },
    {
      name: 'throttled',
      status: 400,
      text: json('com.amazonaws.sqs#RequestThrottled', 'Request is throttled.'),
      header: 'RequestThrottled;Sender',
      kind: 'retryable',
      error: 'SQS: RequestThrottled: Request is throttled.',
    },
    {
      name: 'refused credentials',
      status: 403,
      text: json('com.amazon.coral.service#UnrecognizedClientException', 'The security token included in the request is invalid.'),
      header: undefined,
      kind: 'permanent',
      error: 'SQS: UnrecognizedClientException: The security token included in the request is invalid.',
    },
    {
      name: 'a message over the limit',
      status: 400,
      text: JSON.stringify({ __type: 'com.amazonaws.sqs#InvalidParameterValue', Message: 'Message must be shorter than 1024 bytes.' }),
      header: undefined,
      kind: 'permanent',
      error: 'SQS: InvalidParameterValue: Message must be shorter than 1024 bytes.',
    },
    {
      name: 'unavailable',
      status: 503,
      text: json('com.amazonaws.sqs#ServiceUnavailable', 'try later'),
      header: undefined,
      kind: 'retryable',
      error: 'SQS: ServiceUnavailable: try later',
    },
    {
      name: 'the query code alone (no JSON type)',
      status: 400,
      text: '{"message":"no"}',
      header: 'AWS.SimpleQueueService.NonExistentQueue;Sender',
      kind: 'permanent',
      error: 'SQS: AWS.SimpleQueueService.NonExistentQueue: no',
    },
    {
      name: "moto's or a proxy's XML (a refused policy)",
      status: 403,
      text: '<?xml version="1.0"?><ErrorResponse><Error><Code>AccessDenied</Code><Message>User: x is not authorized to perform: sqs:SendMessage</Message></Error></ErrorResponse>',
      header: undefined,
      kind: 'permanent',
      error: 'SQS: AccessDenied: User: x is not authorized to perform: sqs:SendMessage',
    },
    {
      name: "a proxy's HTML 502",
      status: 502,
      text: '<html><body>Bad Gateway</body></html>',
      header: undefined,
      kind: 'retryable',
      error: 'SQS: HTTP502: Bad Gateway',
    },
    { name: 'an empty 500', status: 500, text: '', header: undefined, kind: 'retryable', error: 'SQS: HTTP500: HTTP 500' },
  ])('$name', ({ status, text, header, kind, error }) => {
    const err = sendMessageErrorOf(status, text, header);
    expect(classifyAwsError(err, 'SQS', { durationMs: 1, timeoutMs: 5_000, aborted: false })).toEqual({
      kind,
      status,
      body: null,
      error,
      durationMs: 1,
      statusClass: status >= 500 ? '5xx' : '4xx',
    });
  });
});
