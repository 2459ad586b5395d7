import { CreateQueueCommand, ReceiveMessageCommand, SendMessageBatchCommand, type Message } from '@aws-sdk/client-sqs';
import { sleep } from '../support/wait.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAwsClients, type AwsClients, type AwsClientsOptions } from '../../src/transport/aws-clients.js';
import {
  DEFAULT_DELETE_LINGER_MS,
  MAX_DELETE_LINGER_MS,
  createMessageDeleter,
  deleteLingerFor,
  type DeleteEntry,
} from '../../src/transport/message-deleter.js';
import { createSqsCalls, type SqsCalls } from '../../src/transport/sqs-calls.js';
import { startFauxqsBackend, type Backend } from './backends.js';
import { captureLogger, queueDepth, uniqueSuffix } from './helpers.js';

describe('deleteLingerFor', () => {
  it('waits at most a quarter of the visibility timeout, so a lingering delete never lets the message reappear', () => {
    expect(deleteLingerFor(30)).toBe(MAX_DELETE_LINGER_MS);
    expect(deleteLingerFor(1)).toBe(250);
    expect(deleteLingerFor(2)).toBeLessThan(2_000);
  });

  it('keeps the short default when the visibility timeout is the queue’s own (unknown)', () => {
    expect(deleteLingerFor(undefined)).toBe(DEFAULT_DELETE_LINGER_MS);
  });
});

// The deleter on its own, against an SQS emulator over HTTP with the consumer's real calls: every
// DeleteMessageBatch it makes is recorded on the way (the entries it sent), not replaced.
describe('createMessageDeleter', () => {
  let backend: Backend;
  let clients: AwsClients;
  let aws: AwsClientsOptions;
  let calls: SqsCalls;

  beforeAll(async () => {
    backend = await startFauxqsBackend();
    aws = { region: 'us-east-1', endpoint: backend.endpoint, env: {} };
    clients = createAwsClients(aws);
    calls = createSqsCalls({ sqs: clients.sqs, aws });
  });
  afterAll(async () => {
    await calls?.close();
    clients?.sns.destroy();
    clients?.sqs.destroy();
    await backend?.stop();
  });

  /** a fresh queue holding `count` messages, all received (in flight, 60 s invisible) */
  async function receivedMessages(count: number): Promise<{ queueUrl: string; messages: Message[] }> {
    const { QueueUrl } = await clients.sqs.send(new CreateQueueCommand({ QueueName: `deleter-${uniqueSuffix()}` }));
    const queueUrl = QueueUrl ?? '';
    for (let i = 0; i < count; i += 10) {
      const n = Math.min(10, count - i);
      await clients.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: Array.from({ length: n }, (_, j) => ({ Id: `s${j}`, MessageBody: `m${i + j}` })),
        }),
      );
    }
    const messages: Message[] = [];
    while (messages.length < count) {
      const out = await clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60, WaitTimeSeconds: 1 }),
      );
      messages.push(...(out.Messages ?? []));
    }
    return { queueUrl, messages };
  }

  const entryOf = (m: Message): DeleteEntry => ({ id: m.MessageId ?? '', receiptHandle: m.ReceiptHandle ?? '' });

  /** the deleter on the real calls, each batch's entries recorded as they go out */
  function recordingDeleter(queueUrl: string, lingerMs: number, deleteBatch = calls.deleteBatch) {
    const sent: DeleteEntry[][] = [];
    const { logger, records } = captureLogger();
    const deleter = createMessageDeleter({
      deleteBatch: (entries) => {
        sent.push([...entries]);
        return deleteBatch(queueUrl, entries);
      },
      logger,
      lingerMs,
    });
    return { deleter, sent, records };
  }

  it('sends full batches of 10 at once and the rest after the linger; every message is gone', async () => {
    const { queueUrl, messages } = await receivedMessages(25);
    const { deleter, sent } = recordingDeleter(queueUrl, 60_000);
    const done = messages.map((m) => deleter.delete(entryOf(m)));
    await Promise.all(done.slice(0, 20));
    // two full batches went out without waiting; the last five wait for company (60 s)
    expect(sent.map((b) => b.length)).toEqual([10, 10]);
    await deleter.flush();
    await Promise.all(done);
    expect(sent.map((b) => b.length)).toEqual([10, 10, 5]);
    expect(await queueDepth(clients.sqs, queueUrl)).toEqual({ visible: 0, notVisible: 0 });
  });

  it('holds a lone delete for the linger, then sends it without a flush', async () => {
    const { queueUrl, messages } = await receivedMessages(1);
    const { deleter, sent } = recordingDeleter(queueUrl, 400);
    const [message] = messages;
    if (!message) throw new Error('no message');
    const started = performance.now();
    const done = deleter.delete(entryOf(message));
    await sleep(100);
    expect(sent).toHaveLength(0);
    await done;
    expect(performance.now() - started).toBeGreaterThanOrEqual(390);
    expect(sent.map((b) => b.length)).toEqual([1]);
    expect(await queueDepth(clients.sqs, queueUrl)).toEqual({ visible: 0, notVisible: 0 });
  });

  it('sends a message handed twice in one window once (ids are unique within a call)', async () => {
    const { queueUrl, messages } = await receivedMessages(2);
    const { deleter, sent, records } = recordingDeleter(queueUrl, 60_000);
    const [a, b] = messages.map(entryOf);
    if (!a || !b) throw new Error('no messages');
    const done = [deleter.delete(a), deleter.delete(b), deleter.delete(a)];
    await deleter.flush();
    await Promise.all(done);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toHaveLength(2);
    expect(records.filter((r) => r.level === 40)).toEqual([]);
    expect(await queueDepth(clients.sqs, queueUrl)).toEqual({ visible: 0, notVisible: 0 });
  });

  it('never rejects: a failed call is logged, and its messages stay for redelivery', async () => {
    const { queueUrl, messages } = await receivedMessages(2);
    const [first, second] = messages.map(entryOf);
    if (!first || !second) throw new Error('no messages');
    // SQS refuses the call (the queue named is not there)
    const refused = recordingDeleter(`${queueUrl}-gone`, 0);
    await expect(refused.deleter.delete(first)).resolves.toBeUndefined();
    expect(refused.records.filter((r) => r.level === 40).map((r) => [r.msg, r.err])).toEqual([
      ['deleting handled queue messages failed', expect.stringMatching(/NonExistentQueue/)],
    ]);

    // nothing answers at all: the delete still resolves
    const deadAws: AwsClientsOptions = { region: 'us-east-1', endpoint: 'http://127.0.0.1:9', env: {}, maxAttempts: 1 };
    const dead = createAwsClients(deadAws);
    const deadCalls = createSqsCalls({ sqs: dead.sqs, aws: deadAws });
    try {
      const failing = recordingDeleter(queueUrl, 0, deadCalls.deleteBatch);
      await expect(failing.deleter.delete(second)).resolves.toBeUndefined();
      expect(failing.records.filter((r) => r.level === 40).map((r) => r.msg)).toEqual(['deleting handled queue messages failed']);
    } finally {
      await deadCalls.close();
      dead.sns.destroy();
      dead.sqs.destroy();
    }
    expect(await queueDepth(clients.sqs, queueUrl)).toEqual({ visible: 0, notVisible: 2 });
  });
});
