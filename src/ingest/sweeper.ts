import type { EventRepository } from '../db/events.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import type { EventPublisher } from '../transport/publisher.js';

/**
 * Re-publishes events that were accepted (stored) but whose publish failed and that no sender
 * retry has re-published since, and events published long ago that never got a workflow (their
 * message was dead-lettered, e.g. while Temporal was down). Several replicas may sweep the same
 * row: a second publish starts no second fanout, because the workflow id is the event id.
 */
export function createSweeper(deps: {
  events: Pick<EventRepository, 'findUnpublished' | 'findUnstarted' | 'markPublished'>;
  publisher: EventPublisher;
  metrics: Metrics;
  logger: Logger;
  intervalMs: number;
  minAgeMs: number;
  /** how long after publishing an event without a workflow is considered stuck */
  unstartedAfterMs?: number;
  batchSize?: number;
}) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;

  async function sweepOnce(): Promise<number> {
    const unpublished = await deps.events.findUnpublished(deps.minAgeMs, deps.batchSize ?? 100);
    deps.metrics.unpublishedEvents.set(unpublished.length);
    const unstarted = await deps.events.findUnstarted(deps.unstartedAfterMs ?? 10 * 60_000, deps.batchSize ?? 100);
    const ids = [...unpublished.map((id) => ({ id, via: 'sweeper' })), ...unstarted.map((id) => ({ id, via: 'sweeper_unstarted' }))];
    let published = 0;
    for (const { id, via } of ids) {
      try {
        await deps.publisher.publish(id);
        await deps.events.markPublished(id);
        deps.metrics.republished.inc({ via });
        published++;
      } catch (err) {
        deps.metrics.publishFailures.inc();
        deps.logger.warn({ eventId: id, err: String(err) }, 'sweeper could not publish; will retry');
        break; // the topic is likely down: wait for the next tick
      }
    }
    return published;
  }

  const tick = (): void => {
    if (running) return;
    running = sweepOnce()
      .catch((err: unknown) => {
        deps.logger.warn({ err: String(err) }, 'sweep failed');
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
  };

  return {
    sweepOnce,
    start(): void {
      timer ??= setInterval(tick, deps.intervalMs);
      timer.unref();
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
