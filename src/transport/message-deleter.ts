import { describeError } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';
import type { DeleteEntry, DeleteFailure } from './sqs-calls.js';

export type { DeleteEntry } from './sqs-calls.js';

/**
 * How long a delete waits for others to share its DeleteMessageBatch call. Each call (signing,
 * HTTP, parsing) cost about as much CPU as starting the workflow when it was a whole AWS SDK
 * round; deleting a handled message a little later only keeps it invisible a little longer,
 * and a crash meanwhile redelivers messages whose handlers are idempotent ("already started").
 * At a low rate a longer wait shares more calls (figures: docs/benchmarks.md, "Figures behind the code");
 * under a backlog batches fill up long before.
 */
export const MAX_DELETE_LINGER_MS = 1_000;
/** when the visibility timeout is not known (the queue's own) */
export const DEFAULT_DELETE_LINGER_MS = 100;

/** The linger for a visibility timeout: a quarter of it at most, so a lingering delete never lets the message reappear. */
export function deleteLingerFor(visibilityTimeoutSeconds: number | undefined): number {
  if (visibilityTimeoutSeconds === undefined) return DEFAULT_DELETE_LINGER_MS;
  return Math.min(MAX_DELETE_LINGER_MS, (visibilityTimeoutSeconds * 1000) / 4);
}

export interface MessageDeleter {
  /** Queues the delete; resolves once its batch call settled. Never rejects: a message that could not be deleted is redelivered. */
  delete(entry: DeleteEntry): Promise<void>;
  /** Sends what is queued now and resolves once every delete queued so far has settled. */
  flush(): Promise<void>;
}

/**
 * Groups deletes into DeleteMessageBatch calls of at most 10 entries: a batch goes out when it is
 * full or when its first entry has waited lingerMs. delete() never rejects: a message that could
 * not be deleted is simply redelivered, which is harmless because the handler is idempotent on the
 * event id.
 */
export function createMessageDeleter(deps: {
  /** one DeleteMessageBatch call (sqs-calls.ts): the entries it did not delete */
  deleteBatch: (entries: readonly DeleteEntry[]) => Promise<DeleteFailure[]>;
  logger: Logger;
  lingerMs?: number;
}): MessageDeleter {
  const { logger } = deps;
  const lingerMs = Math.max(0, deps.lingerMs ?? DEFAULT_DELETE_LINGER_MS);
  let pending: { entry: DeleteEntry; done: () => void }[] = [];
  let timer: NodeJS.Timeout | undefined;
  const sending = new Set<Promise<void>>();

  async function send(batch: { entry: DeleteEntry; done: () => void }[]): Promise<void> {
    // ids must be unique within a batch; a message received twice in one window keeps only one entry
    const entries = [...new Map(batch.map((b) => [b.entry.id, b.entry])).values()];
    try {
      const failed = await deps.deleteBatch(entries.map((e, i) => ({ id: `m${i}`, receiptHandle: e.receiptHandle })));
      for (const f of failed) {
        logger.warn({ code: f.code, senderFault: f.senderFault }, 'deleting a handled queue message failed; it will be redelivered');
      }
    } catch (err) {
      logger.warn({ err: describeError(err), count: entries.length }, 'deleting handled queue messages failed');
    } finally {
      for (const b of batch) b.done();
    }
  }

  function takeBatches(): void {
    clearTimeout(timer);
    timer = undefined;
    while (pending.length > 0) {
      const batch = pending.slice(0, 10);
      pending = pending.slice(10);
      const p = send(batch).finally(() => sending.delete(p));
      sending.add(p);
    }
  }

  return {
    delete(entry) {
      return new Promise<void>((resolve) => {
        pending.push({ entry, done: resolve });
        if (pending.length >= 10) takeBatches();
        else timer ??= setTimeout(takeBatches, lingerMs);
      });
    },
    async flush() {
      takeBatches();
      await Promise.all([...sending]);
    },
  };
}
