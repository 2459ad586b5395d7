import { DeleteMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describeError } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';

export interface DeleteEntry {
  /** unique within one batch; the message id */
  id: string;
  receiptHandle: string;
}

/**
 * Groups deletes of messages whose handlers finish together into DeleteMessageBatch calls
 * (at most 10 entries each), without holding a finished message back for slower ones.
 * delete() never rejects: a message that could not be deleted is simply redelivered, which is
 * harmless because the handler is idempotent on the event id.
 */
export function createMessageDeleter(deps: { sqs: SQSClient; queueUrl: string; logger: Logger }) {
  const { sqs, queueUrl, logger } = deps;
  let pending: { entry: DeleteEntry; done: () => void }[] = [];
  let scheduled = false;

  async function flush(batch: { entry: DeleteEntry; done: () => void }[]): Promise<void> {
    // ids must be unique within a batch; a message received twice in one window keeps only one entry
    const entries = [...new Map(batch.map((b) => [b.entry.id, b.entry])).values()];
    try {
      const res = await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: entries.map((e, i) => ({ Id: `m${i}`, ReceiptHandle: e.receiptHandle })),
        }),
      );
      for (const failed of res.Failed ?? []) {
        logger.warn(
          { code: failed.Code, reason: failed.Message, senderFault: failed.SenderFault },
          'deleting a handled queue message failed; it will be redelivered',
        );
      }
    } catch (err) {
      logger.warn({ err: describeError(err), count: entries.length }, 'deleting handled queue messages failed');
    } finally {
      for (const b of batch) b.done();
    }
  }

  function takeBatches(): void {
    scheduled = false;
    while (pending.length > 0) {
      const batch = pending.slice(0, 10);
      pending = pending.slice(10);
      void flush(batch);
    }
  }

  return {
    delete(entry: DeleteEntry): Promise<void> {
      return new Promise<void>((resolve) => {
        pending.push({ entry, done: resolve });
        if (pending.length >= 10) takeBatches();
        else if (!scheduled) {
          scheduled = true;
          // one macrotask of grace lets handlers that finish together share a call
          setImmediate(takeBatches);
        }
      });
    },
  };
}
