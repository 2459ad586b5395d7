import { PublishBatchCommand, type SNSClient } from '@aws-sdk/client-sns';
import { internal, transient } from '../domain/errors.js';
import { encodeEventMessage, isEventId } from './event-message.js';
import type { EventPublisher } from './publisher.js';

/** SNS PublishBatch takes at most 10 entries. */
const MAX_BATCH = 10;

interface Waiting {
  eventId: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Publishes event ids in PublishBatch calls of up to 10, with natural batching: while
 * `maxInFlight` calls are outstanding, new ids queue and leave together in the next call. Idle,
 * an id goes out at once (one event-loop turn); under load, calls fill up. Each caller still waits
 * for its own entry's result, so a 200 on the inbound path keeps meaning "published". The SDK's
 * per-call CPU cost dominated ingest. Throughput bound: maxInFlight x 10 ids per round trip.
 */
export function createBatchingSnsPublisher(deps: {
  sns: SNSClient;
  topicArn: string;
  maxInFlight?: number;
}): EventPublisher & { flush(): Promise<void> } {
  const maxInFlight = Math.max(1, deps.maxInFlight ?? 4);
  const pending: Waiting[] = [];
  let scheduled = false;
  const inFlight = new Set<Promise<void>>();

  async function send(batch: Waiting[]): Promise<void> {
    try {
      const res = await deps.sns.send(
        new PublishBatchCommand({
          TopicArn: deps.topicArn,
          PublishBatchRequestEntries: batch.map((w, i) => ({ Id: `e${i}`, Message: encodeEventMessage(w.eventId) })),
        }),
      );
      const failed = new Map((res.Failed ?? []).map((f) => [f.Id, f]));
      batch.forEach((w, i) => {
        const f = failed.get(`e${i}`);
        if (f) w.reject(transient('publish_failed', `publishing event ${w.eventId} failed: ${f.Code ?? 'error'}`));
        else w.resolve();
      });
    } catch (err) {
      const name = err instanceof Error ? err.name : 'unknown error';
      for (const w of batch) w.reject(transient('publish_failed', `publishing event ${w.eventId} failed: ${name}`, err));
    }
  }

  function run(): void {
    scheduled = false;
    while (pending.length > 0 && inFlight.size < maxInFlight) {
      const p = send(pending.splice(0, MAX_BATCH));
      inFlight.add(p);
      void p.finally(() => {
        inFlight.delete(p);
        // a slot is free: whatever queued meanwhile leaves now, batched
        if (pending.length > 0 && !scheduled) run();
      });
    }
  }

  return {
    publish(eventId) {
      if (!isEventId(eventId)) return Promise.reject(internal('invalid_event_id', 'event id to publish is not a UUID'));
      return new Promise<void>((resolve, reject) => {
        pending.push({ eventId, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(run);
        }
      });
    },
    async flush() {
      while (pending.length > 0 || inFlight.size > 0) {
        if (scheduled || inFlight.size < maxInFlight) run();
        await Promise.race([...inFlight]);
      }
    },
  };
}
