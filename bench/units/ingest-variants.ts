import { PublishBatchCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { Db } from '../../src/db/knex.js';
import type { Repositories } from '../../src/db/repositories.js';
import { encodeEventMessage } from '../../src/transport/event-message.js';
import type { EventPublisher } from '../../src/transport/publisher.js';

/**
 * What-if variants of ingest (BENCH_INGEST_VARIANT), to price each step of the request:
 * - as-is: the real thing
 * - no-publish: SNS publish skipped (what the SDK call and the emulator cost)
 * - no-mark-published: the UPDATE after publishing skipped
 * - batched: publishes coalesced into PublishBatch calls (<= 10 ids) and the published marks into
 *   one UPDATE, per event-loop turn; each request still waits for its own publish, so 200 keeps
 *   meaning persisted AND published
 */
export const INGEST_VARIANTS = ['as-is', 'no-publish', 'no-mark-published', 'batched'] as const;
export type IngestVariant = (typeof INGEST_VARIANTS)[number];

export function isIngestVariant(v: string): v is IngestVariant {
  return (INGEST_VARIANTS as readonly string[]).includes(v);
}

/** Calls that arrive within one event-loop turn share one flush of at most `max` items. */
function coalesce<T>(max: number, flush: (items: T[]) => Promise<void>): (item: T) => Promise<void> {
  let pending: Array<{ item: T; done: (err?: unknown) => void }> = [];
  let scheduled = false;
  const run = (): void => {
    scheduled = false;
    const all = pending;
    pending = [];
    for (let i = 0; i < all.length; i += max) {
      const batch = all.slice(i, i + max);
      flush(batch.map((b) => b.item)).then(
        () => batch.forEach((b) => b.done()),
        (err: unknown) => batch.forEach((b) => b.done(err ?? new Error('batch failed'))),
      );
    }
  };
  return (item) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ item, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!scheduled) {
        scheduled = true;
        setImmediate(run);
      }
    });
}

function batchingPublisher(sns: SNSClient, topicArn: string): EventPublisher {
  const publish = coalesce<string>(10, async (ids) => {
    const res = await sns.send(
      new PublishBatchCommand({
        TopicArn: topicArn,
        PublishBatchRequestEntries: ids.map((id, i) => ({ Id: `m${i}`, Message: encodeEventMessage(id) })),
      }),
    );
    // a failed entry fails its whole batch here: the senders retry, and a second publish is harmless
    if ((res.Failed ?? []).length > 0) throw new Error(`${res.Failed?.length} of ${ids.length} publishes failed`);
  });
  return { publish };
}

export function applyIngestVariant(
  variant: IngestVariant,
  base: { repos: Repositories; publisher: EventPublisher; db: Db; sns: SNSClient; topicArn: string },
): { repos: Repositories; publisher: EventPublisher } {
  const withMark = (markPublished: (id: string) => Promise<void>): Repositories => ({
    ...base.repos,
    events: { ...base.repos.events, markPublished },
  });
  switch (variant) {
    case 'as-is':
      return { repos: base.repos, publisher: base.publisher };
    case 'no-publish':
      return { repos: base.repos, publisher: { publish: async () => {} } };
    case 'no-mark-published':
      return { repos: withMark(async () => {}), publisher: base.publisher };
    case 'batched': {
      const mark = coalesce<string>(500, async (ids) => {
        await base.db.raw(
          `UPDATE webhook_event SET published_at = now(), updated_at = now() WHERE id = ANY(?::uuid[]) AND published_at IS NULL`,
          [ids],
        );
      });
      return { repos: withMark(mark), publisher: batchingPublisher(base.sns, base.topicArn) };
    }
  }
}
