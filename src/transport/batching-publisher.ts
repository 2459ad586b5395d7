import { internal, transient } from '../domain/errors.js';
import type { TraceCarrier } from '../observability/spans.js';
import { encodeEventMessage, isEventId, traceAttributes } from './event-message.js';
import { MAX_PUBLISH_BATCH, type SnsPublishBatch } from './sns-publish-batch.js';

export interface EventPublisher {
  /**
   * Resolves once the topic accepted the event id; throws a transient AppError otherwise. `trace`
   * travels with the message as its attributes, to the consumer (docs/tracing.md).
   */
  publish(eventId: string, trace?: TraceCarrier): Promise<void>;
}

interface Waiting {
  eventId: string;
  trace: TraceCarrier | undefined;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Publishes event ids in PublishBatch calls of up to 10, with natural batching: while
 * `maxInFlight` calls are outstanding, new ids queue and leave together in the next call. Idle,
 * an id goes out at once (one event-loop turn); under load, calls fill up. Each caller still waits
 * for its own entry's result, so a 200 on the inbound path keeps meaning "published". The cost of
 * a call dominated ingest's publishing. Throughput bound: maxInFlight x 10 ids per round trip.
 */
export function createBatchingSnsPublisher(deps: {
  calls: SnsPublishBatch;
  topicArn: string;
  maxInFlight: number;
}): EventPublisher & { flush(): Promise<void> } {
  const maxInFlight = Math.max(1, deps.maxInFlight);
  const pending: Waiting[] = [];
  let scheduled = false;
  const inFlight = new Set<Promise<void>>();

  async function send(batch: Waiting[]): Promise<void> {
    try {
      const { failed } = await deps.calls.publishBatch(
        deps.topicArn,
        batch.map((w, i) => ({
          id: `e${i}`,
          message: encodeEventMessage(w.eventId),
          ...(w.trace ? { attributes: traceAttributes(w.trace) } : {}),
        })),
      );
      batch.forEach((w, i) => {
        const code = failed.get(`e${i}`);
        if (code !== undefined) w.reject(transient('publish_failed', `publishing event ${w.eventId} failed: ${code}`));
        else w.resolve();
      });
    } catch (err) {
      // the error's name is SNS's code or what failed on the way (AwsCallError); never its details
      const name = err instanceof Error ? err.name : 'unknown error';
      for (const w of batch) w.reject(transient('publish_failed', `publishing event ${w.eventId} failed: ${name}`, err));
    }
  }

  function run(): void {
    scheduled = false;
    while (pending.length > 0 && inFlight.size < maxInFlight) {
      const p = send(pending.splice(0, MAX_PUBLISH_BATCH));
      inFlight.add(p);
      void p.finally(() => {
        inFlight.delete(p);
        // a slot is free: whatever queued meanwhile leaves now, batched
        if (pending.length > 0 && !scheduled) run();
      });
    }
  }

  return {
    publish(eventId, trace) {
      if (!isEventId(eventId)) return Promise.reject(internal('unpublishable_event_id', 'event id to publish is not a UUID'));
      return new Promise<void>((resolve, reject) => {
        pending.push({ eventId, trace, resolve, reject });
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
