import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseDeleteAnswer, parseJsonErrorCode, parseReceiveAnswer } from '../../../src/transport/sqs-calls.js';

const md5 = (s: string): string => createHash('md5').update(s).digest('hex');
const message = (id: string, body: string, digest = md5(body)) => ({
  MessageId: id,
  ReceiptHandle: `rh-${id}`,
  MD5OfBody: digest,
  Body: body,
  Attributes: { ApproximateReceiveCount: '2' },
});

describe('parseReceiveAnswer: the messages of a ReceiveMessage answer (JSON protocol)', () => {
  it.each<[string, string, Array<{ MessageId?: string; Body?: string; ReceiptHandle?: string; receiveCount?: string }>]>([
    ['no message (an empty long poll)', '{}', []],
    ['an empty body, as some emulators answer', '', []],
    [
      'two messages with their handles and receive counts',
      JSON.stringify({ Messages: [message('a', '{"eventId":"1"}'), message('b', 'ünïcode ✓')] }),
      [
        { MessageId: 'a', Body: '{"eventId":"1"}', ReceiptHandle: 'rh-a', receiveCount: '2' },
        { MessageId: 'b', Body: 'ünïcode ✓', ReceiptHandle: 'rh-b', receiveCount: '2' },
      ],
    ],
    [
      'a message without MD5 is taken as it is',
      JSON.stringify({ Messages: [{ MessageId: 'c', ReceiptHandle: 'r', Body: 'x' }] }),
      [{ MessageId: 'c', Body: 'x', ReceiptHandle: 'r' }],
    ],
  ])('%s', (_what, text, expected) => {
    const got = parseReceiveAnswer(text).map((m) => ({
      ...(m.MessageId !== undefined ? { MessageId: m.MessageId } : {}),
      ...(m.Body !== undefined ? { Body: m.Body } : {}),
      ...(m.ReceiptHandle !== undefined ? { ReceiptHandle: m.ReceiptHandle } : {}),
      ...(m.Attributes?.ApproximateReceiveCount !== undefined ? { receiveCount: m.Attributes.ApproximateReceiveCount } : {}),
    }));
    expect(got).toEqual(expected);
  });

  it.each<[string, string, string]>([
    [
      'a body that does not match its MD5 fails the whole receive, as the SDK does',
      JSON.stringify({ Messages: [message('a', 'ok'), message('b', 'changed', md5('original'))] }),
      'InvalidChecksum',
    ],
    ['an answer that is not JSON', '<html>proxy error</html>', 'InvalidAnswer'],
    ['Messages that is not a list', '{"Messages":{"a":1}}', 'InvalidAnswer'],
  ])('%s', (_what, text, name) => {
    expect(() => parseReceiveAnswer(text)).toThrow(expect.objectContaining({ name, retryable: false }));
  });
});

describe('parseDeleteAnswer: the entries a DeleteMessageBatch did not delete', () => {
  it.each<[string, string, string[], Array<{ id: string; code: string; senderFault: boolean }>]>([
    ['all deleted', '{"Successful":[{"Id":"m0"},{"Id":"m1"}],"Failed":[]}', ['m0', 'm1'], []],
    [
      'one failed with its code',
      '{"Successful":[{"Id":"m0"}],"Failed":[{"Id":"m1","Code":"ReceiptHandleIsInvalid","Message":"x","SenderFault":true}]}',
      ['m0', 'm1'],
      [{ id: 'm1', code: 'ReceiptHandleIsInvalid', senderFault: true }],
    ],
    ['an id the answer does not name', '{"Successful":[{"Id":"m0"}]}', ['m0', 'm1'], [{ id: 'm1', code: 'NoResult', senderFault: false }]],
  ])('%s', (_what, text, ids, failed) => {
    expect(parseDeleteAnswer(text, ids)).toEqual(failed);
  });
});

describe("parseJsonErrorCode: SQS's code in an error answer", () => {
  it.each<[string, string, string | undefined, string | undefined]>([
    [
      'the query-compatible header wins',
      '{"__type":"com.amazonaws.sqs#QueueDoesNotExist"}',
      'AWS.SimpleQueueService.NonExistentQueue;Sender',
      'AWS.SimpleQueueService.NonExistentQueue',
    ],
    [
      'the JSON type after its namespace',
      '{"__type":"com.amazonaws.sqs#RequestThrottled","message":"slow down"}',
      undefined,
      'RequestThrottled',
    ],
    ['a type without namespace', '{"__type":"ThrottlingException"}', undefined, 'ThrottlingException'],
    ['not JSON and no header', 'Bad Gateway', undefined, undefined],
    [
      'an XML error from a front end',
      '<ErrorResponse><Error><Type>Sender</Type><Code>SignatureDoesNotMatch</Code></Error></ErrorResponse>',
      undefined,
      'SignatureDoesNotMatch',
    ],
    ['text that is no identifier is not repeated into logs', '{"__type":"a secret: value"}', undefined, undefined],
  ])('%s', (_what, text, header, code) => {
    expect(parseJsonErrorCode(text, header)).toBe(code);
  });
});
