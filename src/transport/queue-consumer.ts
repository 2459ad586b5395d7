import { setTimeout as sleep } from 'node:timers/promises';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import pino from 'pino';
import { describeError, isAppError } from '../domain/errors.js';
import { createDeadLetterer } from './dead-letter.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { createMessageDeleter, deleteLingerFor } from './message-deleter.js';
import type { TraceCarrier } from '../observability/spans.js';
import { decodeEventMessage, traceOfMessage } from './event-message.js';
import type { SqsCalls } from './sqs-calls.js';

/**
 * Handles one event id. Resolving means "done, delete the message". Throwing is the queue
 * boundary of the error taxonomy: a transient error (or any error that is not an AppError) leaves
 * the message for SQS to redeliver after the visibility timeout (and to dead-letter after
 * maxReceiveCount); a permanent or internal AppError moves it to the dead-letter queue at once.
 * A returned string labels the `queueMessages` metric (e.g. 'started', 'already_started').
 */
export type EventHandler = (eventId: string, trace?: TraceCarrier) => Promise<void | string>;

export interface QueueConsumerOptions {
  /** the configured client: the DLQ copy uses its send() */
  sqs: SQSClient;
  /**
   * makes the receive and delete calls, on each start(); they are closed once stop() has sent the
   * last delete. Production passes queueCalls (queue-calls.ts: signed or the SDK's, by AWS_TRANSPORT).
   */
  calls: () => SqsCalls;
  queueUrl: string;
  handle: EventHandler;
  logger?: Logger;
  metrics?: Pick<Metrics, 'queueMessages' | 'queueMessageAge'>;
  /** most messages per ReceiveMessage, 1..10 (and at most concurrency) */
  batchSize?: number;
  /** long-poll wait, 0..20 s */
  waitTimeSeconds?: number;
  /** most handlers in flight at once; defaults to batchSize */
  concurrency?: number;
  /** per-receive visibility timeout; absent = the queue's own */
  visibilityTimeoutSeconds?: number;
  /** how long stop() waits for in-flight handlers before giving up on them */
  shutdownTimeoutMs?: number;
  /** how long a handled message's delete waits to share a DeleteMessageBatch call; default deleteLingerFor(visibilityTimeoutSeconds) */
  deleteLingerMs?: number;
  /** backoff after failed receives: doubles from initialMs up to maxMs */
  backoff?: { initialMs?: number; maxMs?: number };
}

export interface QueueConsumer {
  start(): void;
  /** Stops polling, waits (bounded) for in-flight handlers and their deletes, then resolves. */
  stop(): Promise<void>;
  /** true from start() until stop() has resolved */
  readonly running: boolean;
}

export function createQueueConsumer(opts: QueueConsumerOptions): QueueConsumer {
  const { sqs, queueUrl, handle, metrics } = opts;
  const logger = opts.logger ?? pino({ level: 'silent' });
  const batchSize = clamp(opts.batchSize ?? 10, 1, 10);
  const waitTimeSeconds = clamp(opts.waitTimeSeconds ?? 20, 0, 20);
  const concurrency = Math.max(1, opts.concurrency ?? batchSize);
  // never more waiting for a slot than there are slots (see loop())
  const receiveMax = Math.min(batchSize, concurrency);
  const shutdownTimeoutMs = opts.shutdownTimeoutMs ?? 25_000;
  const backoffInitialMs = opts.backoff?.initialMs ?? 1_000;
  const backoffMaxMs = opts.backoff?.maxMs ?? 30_000;
  // the receive and delete calls, made in start() and closed once stop() has sent the last delete
  let calls: SqsCalls | undefined;
  const deleter = createMessageDeleter({
    deleteBatch: (entries) =>
      calls ? calls.deleteBatch(queueUrl, entries) : Promise.reject(new Error('the queue consumer is not running')),
    logger,
    lingerMs: opts.deleteLingerMs ?? deleteLingerFor(opts.visibilityTimeoutSeconds),
  });
  const deadLetter = createDeadLetterer({ sqs, queueUrl, logger });

  const inFlight = new Set<Promise<void>>();
  /** received, waiting for a free handler slot (at most one receive's worth, see loop()) */
  const waiting: Message[] = [];
  let running = false;
  let stopping = false;
  let abort = new AbortController();
  let loopDone: Promise<void> = Promise.resolve();
  let stopped: Promise<void> | undefined;
  let wakeLoop: (() => void) | undefined;

  const count = (outcome: string): void => {
    metrics?.queueMessages.inc({ outcome });
  };

  async function processMessage(message: Message): Promise<void> {
    const receiveCount = message.Attributes?.ApproximateReceiveCount;
    // the queue's age as the consumer sees it: SQS's own ApproximateAgeOfOldestMessage is CloudWatch's only
    const sentAt = Number(message.Attributes?.SentTimestamp);
    if (Number.isFinite(sentAt) && sentAt > 0) metrics?.queueMessageAge.observe(Math.max(0, Date.now() - sentAt) / 1000);
    const eventId = decodeEventMessage(message.Body);
    if (eventId === undefined) {
      count('invalid');
      logger.warn(
        { messageId: message.MessageId, receiveCount, bodyPrefix: message.Body?.slice(0, 200) },
        'queue message is not {"eventId": <uuid>}; moving it to the dead-letter queue',
      );
      await moveToDeadLetterQueue(message, 'invalid: not {"eventId": <uuid>}');
      return;
    }
    let outcome: void | string;
    try {
      outcome = await handle(eventId, traceOfMessage(message.MessageAttributes));
    } catch (err) {
      count('error');
      if (isAppError(err) && err.kind !== 'transient') {
        logger.error(
          { eventId, messageId: message.MessageId, receiveCount, kind: err.kind, code: err.code, err: describeError(err) },
          'handling queue message failed for good; moving it to the dead-letter queue',
        );
        await moveToDeadLetterQueue(message, `${err.kind}: ${err.code}`);
        return;
      }
      logger.warn(
        { eventId, messageId: message.MessageId, receiveCount, err: describeError(err) },
        'handling queue message failed; it will be redelivered after the visibility timeout',
      );
      return;
    }
    count(typeof outcome === 'string' ? outcome : 'handled');
    // not awaited: the slot is free for the next message while the delete waits for company;
    // stop() flushes what is still queued
    if (message.ReceiptHandle !== undefined) {
      void deleter.delete({ id: message.MessageId ?? eventId, receiptHandle: message.ReceiptHandle });
    }
  }

  /** A copy to the DLQ, then the original deleted; when the copy fails the redrive policy still applies. */
  async function moveToDeadLetterQueue(message: Message, reason: string): Promise<void> {
    if (!(await deadLetter(message, reason)) || message.ReceiptHandle === undefined) return;
    count('dead_lettered');
    void deleter.delete({ id: message.MessageId ?? reason, receiptHandle: message.ReceiptHandle });
  }

  function dispatch(message: Message): void {
    const p: Promise<void> = processMessage(message)
      .catch((err: unknown) => logger.error({ err: describeError(err) }, 'unexpected error processing a queue message'))
      .finally(() => {
        inFlight.delete(p);
        dispatchWaiting();
        wakeLoop?.();
      });
    inFlight.add(p);
  }

  function dispatchWaiting(): void {
    while (waiting.length > 0 && inFlight.size < concurrency) {
      const next = waiting.shift();
      if (next !== undefined) dispatch(next);
    }
  }

  async function waitUntilDrained(): Promise<void> {
    while (!stopping && waiting.length > 0) {
      await new Promise<void>((resolve) => {
        wakeLoop = resolve;
      });
      wakeLoop = undefined;
    }
  }

  async function loop(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!stopping) {
      // The next receive goes out as soon as the previous one's messages all have a slot, not when
      // one slot frees: under load a receive then brings a full batch instead of one or two
      // messages, and each ReceiveMessage costs a signed call's CPU (signing, HTTP, parsing). At a
      // low rate nothing waits: the long poll is out whenever nothing is waiting, and returns with
      // the first message. A waiting message gets a slot once each slot's
      // current handler has finished (batchSize <= concurrency), so it is held at most about
      // two handler durations before its own handler ends: in-flight handlers already have to
      // fit the visibility timeout.
      await waitUntilDrained();
      if (stopping) break;
      let messages: Message[];
      try {
        if (calls === undefined) break;
        messages = await calls.receive({
          queueUrl,
          maxMessages: receiveMax,
          waitTimeSeconds,
          ...(opts.visibilityTimeoutSeconds !== undefined ? { visibilityTimeoutSeconds: opts.visibilityTimeoutSeconds } : {}),
          signal,
        });
        failures = 0;
      } catch (err) {
        if (stopping) break;
        failures += 1;
        const delayMs = Math.min(backoffMaxMs, backoffInitialMs * 2 ** Math.min(failures - 1, 16));
        logger.warn({ err: describeError(err), failures, retryInMs: delayMs }, 'receiving from the queue failed');
        // the process keeps running: the queue coming back is the normal way out of this
        await sleep(delayMs, undefined, { signal }).catch(() => undefined);
        continue;
      }
      // messages already received are handled even if stop() came meanwhile: they are in flight
      waiting.push(...messages);
      dispatchWaiting();
    }
  }

  return {
    get running() {
      return running;
    },
    start() {
      if (running) return;
      running = true;
      stopping = false;
      stopped = undefined;
      abort = new AbortController();
      calls = opts.calls();
      loopDone = loop(abort.signal).catch((err: unknown) => {
        logger.error({ err: describeError(err) }, 'queue consumer loop ended unexpectedly');
      });
    },
    stop() {
      if (!running) return Promise.resolve();
      if (stopped !== undefined) return stopped;
      stopping = true;
      abort.abort(); // ends the in-flight long poll now instead of up to 20 s later
      wakeLoop?.();
      stopped = (async () => {
        await loopDone;
        const pending = inFlight.size + waiting.length;
        if (pending > 0) {
          const timer = new AbortController();
          // handlers that end hand their slot to waiting messages: wait for those too
          const drained = (async () => {
            while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
            return true;
          })();
          const timeout = sleep(shutdownTimeoutMs, false, { signal: timer.signal }).catch(() => false);
          const finished = await Promise.race([drained, timeout]);
          timer.abort();
          if (!finished) {
            logger.warn(
              { stillRunning: inFlight.size + waiting.length },
              'queue consumer stopped with handlers still running; their messages will be redelivered',
            );
          }
        }
        // the deletes of handled messages that still wait for company go out now
        await deleter.flush();
        await calls?.close();
        calls = undefined;
        running = false;
      })();
      return stopped;
    },
  };
}

function clamp(n: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, Math.floor(n)));
}
