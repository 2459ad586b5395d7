import pino from 'pino';
import type { Logger } from '../../src/observability/logger.js';
import type { Metrics } from '../../src/metrics/metrics.js';
import { randomBytes } from 'node:crypto';
import { sleep } from '../support/wait.js';
import { GetQueueAttributesCommand, ReceiveMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';

/** A short random suffix so every test gets its own topic and queues. */
export const uniqueSuffix = (): string => randomBytes(4).toString('hex');

export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** Visible plus in-flight messages: 0 means the queue holds nothing at all. */
export async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<{ visible: number; notVisible: number }> {
  const res = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(res.Attributes?.ApproximateNumberOfMessages ?? NaN),
    notVisible: Number(res.Attributes?.ApproximateNumberOfMessagesNotVisible ?? NaN),
  };
}

/** One message, long-polling up to waitSeconds, or undefined. */
export async function receiveOne(sqs: SQSClient, queueUrl: string, waitSeconds = 5): Promise<Message | undefined> {
  const res = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 1,
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['ApproximateReceiveCount'],
    }),
  );
  return res.Messages?.[0];
}

export interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

export function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A real pino logger whose records are kept in memory for assertions. */
export function captureLogger(): { logger: Logger; records: Record<string, unknown>[] } {
  const records: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'debug' },
    {
      write(line: string) {
        records.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
  );
  return { logger, records };
}

export async function queueMessagesCount(metrics: Pick<Metrics, 'queueMessages'>, outcome: string): Promise<number> {
  const snapshot = await metrics.queueMessages.get();
  return snapshot.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}
