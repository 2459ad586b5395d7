import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { awsErrorCodeOf, classifyAwsError } from '../../../../src/destinations/aws/aws-errors.js';
import {
  batchEnvelopeBytes,
  batchRefusalOf,
  entryBytes,
  entryWireBytes,
  parseSendMessageBatchAnswer,
  sendMessageBatchInput,
  type BatchEntryAnswer,
} from '../../../../src/destinations/aws/sqs-send-batch.js';
import { sendMessageErrorOf, sendMessageInput } from '../../../../src/destinations/aws/sqs-send-message.js';
import { brokerMessage } from '../broker-message.js';

const QUEUE = 'https://sqs.eu-west-1.amazonaws.com/123456789012/payments';
const md5 = (s: string): string => createHash('md5').update(s, 'utf8').digest('hex');
const classify = (err: unknown) => classifyAwsError(err, 'SQS', { durationMs: 1, timeoutMs: 5_000, aborted: false });

describe("SendMessageBatch's input: each entry is its SendMessage's input, its id its index", () => {
  it.each([
    { name: 'a standard queue: no FIFO ids', queueUrl: QUEUE, keys: [null, null], fifo: [{}, {}] },
    {
      name: 'a FIFO queue, ordered: each entry its own event id and group, in the order given',
      queueUrl: `${QUEUE}.fifo`,
      keys: ['customer-7', 'customer-8'],
      fifo: [
        { MessageDeduplicationId: 'e-0', MessageGroupId: 'customer-7' },
        { MessageDeduplicationId: 'e-1', MessageGroupId: 'customer-8' },
      ],
    },
    {
      name: 'a FIFO queue, not ordered: one group',
      queueUrl: `${QUEUE}.fifo`,
      keys: [null, null],
      fifo: [
        { MessageDeduplicationId: 'e-0', MessageGroupId: 'webhook-fanout' },
        { MessageDeduplicationId: 'e-1', MessageGroupId: 'webhook-fanout' },
      ],
    },
  ])('$name', ({ queueUrl, keys, fifo }) => {
    const inputs = keys.map((orderingKey, i) =>
      sendMessageInput(brokerMessage({ orderingKey, deduplicationId: `e-${i}`, body: Buffer.from(`{"n":${i}}`) }), { queueUrl }),
    );
    const batch = sendMessageBatchInput(queueUrl, inputs);
    expect(batch).toEqual({
      QueueUrl: queueUrl,
      Entries: inputs.map((input, i) => ({
        Id: String(i),
        MessageBody: `{"n":${i}}`,
        MessageAttributes: input.MessageAttributes,
        ...fifo[i],
      })),
    });
    // no QueueUrl in an entry: SQS refuses fields it does not know
    expect(batch.Entries.some((e) => 'QueueUrl' in e)).toBe(false);
  });
});

describe("an entry's size as SQS counts it against the batch's limit", () => {
  it.each([
    { name: 'a body alone', input: { MessageBody: 'abc' }, bytes: 3 },
    { name: 'UTF-8 bytes, not characters', input: { MessageBody: 'é€' }, bytes: 5 },
    {
      name: "each attribute's name, type and value",
      input: { MessageBody: 'abc', MessageAttributes: { 'ce-id': { DataType: 'String', StringValue: 'e-1' } } },
      bytes: 3 + 5 + 6 + 3,
    },
  ])('$name', ({ input, bytes }) => {
    expect(entryBytes(input)).toBe(bytes);
  });
});

describe("an entry's bytes in the batch's JSON body (a front end's body limit counts them)", () => {
  it.each([
    { name: 'a plain body', input: { MessageBody: 'abc' } },
    { name: 'a JSON body: each quote escaped', input: { MessageBody: JSON.stringify(Array(100).fill('a')) } },
    { name: 'UTF-8 and a backslash', input: { MessageBody: 'é€\\ "x"' } },
    {
      name: 'attributes and a FIFO queue’s ids',
      input: {
        MessageBody: '{"n":1}',
        MessageAttributes: { 'ce-id': { DataType: 'String', StringValue: 'e-1' } },
        MessageDeduplicationId: 'e-1',
        MessageGroupId: 'g',
      },
    },
  ])('$name: never under its size by SQS’s count; the entries and envelope add up to the body as sent', ({ input }) => {
    expect(entryWireBytes(input)).toBeGreaterThanOrEqual(entryBytes(input));
    const entries = Array.from({ length: 10 }, () => input);
    const body = Buffer.byteLength(JSON.stringify(sendMessageBatchInput(QUEUE, entries)), 'utf8');
    // counted with the longest id and a comma after each: at most 1 byte over per entry, never under
    const counted = batchEnvelopeBytes(QUEUE) + entries.reduce((n, e) => n + entryWireBytes(e), 0);
    expect(counted).toBeGreaterThanOrEqual(body);
    expect(counted - body).toBeLessThanOrEqual(10);
  });
});

describe("each entry's answer from SendMessageBatch's", () => {
  const bodies = ['{"n":0}', '{"n":1}', '{"n":2}'];
  const ok = (id: number, extra: Record<string, string> = {}) => ({
    Id: String(id),
    MessageId: `m-${id}`,
    MD5OfMessageBody: md5(bodies[id]!),
    ...extra,
  });
  type Want =
    { answer: { messageId: string | undefined; sequence: string | undefined } } | { error: string; kind: string; statusClass: string };
  it.each<{ name: string; text: string; want: Want[] }>([
    {
      name: 'every entry taken: each its own message id, in the order sent (the answer in another order)',
      text: JSON.stringify({ Successful: [ok(2), ok(0), ok(1)], Failed: [] }),
      want: [0, 1, 2].map((i) => ({ answer: { messageId: `m-${i}`, sequence: undefined } })),
    },
    {
      name: "a FIFO queue: each entry's sequence number",
      text: JSON.stringify({
        Successful: [ok(0, { SequenceNumber: '1' }), ok(1, { SequenceNumber: '2' }), ok(2, { SequenceNumber: '3' })],
      }),
      want: [0, 1, 2].map((i) => ({ answer: { messageId: `m-${i}`, sequence: String(i + 1) } })),
    },
    {
      name: "one entry over the queue's limit (a sender's fault): final for it alone, with SQS's words",
      text: JSON.stringify({
        Successful: [ok(0), ok(2)],
        Failed: [{ Id: '1', SenderFault: true, Code: 'InvalidParameterValue', Message: 'Message must be shorter than 1024 bytes.' }],
      }),
      want: [
        { answer: { messageId: 'm-0', sequence: undefined } },
        { error: 'SQS: InvalidParameterValue: Message must be shorter than 1024 bytes.', kind: 'permanent', statusClass: '4xx' },
        { answer: { messageId: 'm-2', sequence: undefined } },
      ],
    },
    {
      name: "an entry SQS failed itself (not the sender's fault): retried",
      text: JSON.stringify({ Successful: [ok(0), ok(1)], Failed: [{ Id: '2', SenderFault: false, Code: 'InternalError', Message: 'x' }] }),
      want: [
        { answer: { messageId: 'm-0', sequence: undefined } },
        { answer: { messageId: 'm-1', sequence: undefined } },
        { error: 'SQS: InternalError: x', kind: 'retryable', statusClass: '5xx' },
      ],
    },
    {
      name: "a throttled entry (a sender's fault, a retried code): retried",
      text: JSON.stringify({
        Successful: [ok(0), ok(1)],
        Failed: [{ Id: '2', SenderFault: true, Code: 'RequestThrottled', Message: 'slow down' }],
      }),
      want: [
        { answer: { messageId: 'm-0', sequence: undefined } },
        { answer: { messageId: 'm-1', sequence: undefined } },
        { error: 'SQS: RequestThrottled: slow down', kind: 'retryable', statusClass: '4xx' },
      ],
    },
    {
      name: "an entry's MD5 of other bytes: that entry fails, retried",
      text: JSON.stringify({ Successful: [ok(0), { ...ok(1), MD5OfMessageBody: md5('other') }, ok(2)] }),
      want: [
        { answer: { messageId: 'm-0', sequence: undefined } },
        {
          error: expect.stringMatching(/^SQS: InvalidChecksumError: the MD5 of the body SQS took/) as unknown as string,
          kind: 'retryable',
          statusClass: 'network',
        },
        { answer: { messageId: 'm-2', sequence: undefined } },
      ],
    },
    {
      name: 'an entry the answer does not name (nor an id out of range): retried, it may not be stored',
      text: JSON.stringify({ Successful: [ok(0), ok(1), { Id: '7', MessageId: 'm-7' }] }),
      want: [
        { answer: { messageId: 'm-0', sequence: undefined } },
        { answer: { messageId: 'm-1', sequence: undefined } },
        { error: 'SQS: NoEntryAnswer: the answer to SendMessageBatch names no entry 2', kind: 'retryable', statusClass: 'network' },
      ],
    },
    {
      name: 'not JSON: every entry fails, retried',
      text: '<html>',
      want: [0, 1, 2].map(() => ({
        error: 'SQS: InvalidAnswer: the answer to SendMessageBatch is not JSON',
        kind: 'retryable',
        statusClass: 'network',
      })),
    },
  ])('$name', ({ text, want }) => {
    const got = parseSendMessageBatchAnswer(text, bodies).map((a: BatchEntryAnswer) => {
      if ('answer' in a) return a;
      const o = classify(a.error);
      return { error: o.kind === 'success' ? '' : o.error, kind: o.kind, statusClass: o.statusClass };
    });
    expect(got).toEqual(want);
  });
});

const xmlError = (code: string, message = 'm') =>
  `<?xml version="1.0"?><ErrorResponse><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`;

describe('a batch refused whole: split entry by entry when it may be one entry’s fault, each alone when refused authorization', () => {
  it.each([
    // SQS's JSON protocol: the __type's name
    { name: "moto: one message over the queue's limit", status: 400, json: 'MessageTooLong', refusal: 'split' },
    { name: 'the batch over 1 MiB', status: 400, json: 'BatchRequestTooLong', refusal: 'split' },
    { name: 'an invalid parameter (a body SQS refuses)', status: 400, json: 'InvalidParameterValue', refusal: 'split' },
    { name: 'refused authorization (checked by the operation’s name)', status: 403, json: 'AccessDenied', refusal: 'alone' },
    { name: 'refused authorization, the JSON protocol’s name', status: 400, json: 'AccessDeniedException', refusal: 'alone' },
    { name: 'throttled: every entry’s', status: 400, json: 'RequestThrottled', refusal: 'every' },
    { name: 'an unknown queue: every entry’s', status: 400, json: 'QueueDoesNotExist', refusal: 'every' },
    { name: 'a refused signature: every entry’s', status: 403, json: 'SignatureDoesNotMatch', refusal: 'every' },
    // an XML answer (a front end's, an emulator's), no query-compatible header: its <Code>, as classifyAwsError reads it (review6)
    { name: "XML, no header: one message over the queue's limit", status: 400, xml: 'MessageTooLong', refusal: 'split' },
    { name: 'XML, no header: an invalid parameter', status: 400, xml: 'InvalidParameterValue', refusal: 'split' },
    { name: 'XML, no header: refused authorization (moto with IAM on)', status: 403, xml: 'AccessDenied', refusal: 'alone' },
    { name: 'XML, no header: throttled', status: 400, xml: 'RequestThrottled', refusal: 'every' },
    // the query-compatible header (a JSON answer without __type), its long form too
    { name: 'the header: the batch over 1 MiB', status: 400, header: 'BatchRequestTooLong;Sender', refusal: 'split' },
    { name: 'the long form: 1 MiB', status: 400, header: 'AWS.SimpleQueueService.BatchRequestTooLong;Sender', refusal: 'split' },
    {
      name: "the header's long form: an unknown queue",
      status: 400,
      header: 'AWS.SimpleQueueService.NonExistentQueue;Sender',
      refusal: 'every',
    },
    // a page without a code (a proxy's): every entry's
    { name: "a proxy's HTML page", status: 403, page: '<html><title>Forbidden</title></html>', refusal: 'every' },
    // but a front end's 413, the request's body over its limit: each entry alone is smaller (review7)
    {
      name: "nginx's 413 page: the body over client_max_body_size",
      status: 413,
      page: '<html><title>413 Request Entity Too Large</title></html>',
      refusal: 'split',
    },
  ])('$name', ({ status, json, xml, header, page, refusal }) => {
    const text =
      json !== undefined
        ? JSON.stringify({ __type: `com.amazonaws.sqs#${json}`, message: 'm' })
        : xml !== undefined
          ? xmlError(xml)
          : (page ?? JSON.stringify({ message: 'm' }));
    const err = sendMessageErrorOf(status, text, header);
    expect(batchRefusalOf(awsErrorCodeOf(err))).toBe(refusal);
  });
});
