import { DEFAULT_UNSTARTED_AFTER_MS } from '../config/settings.js';
import type { BulkReplays } from '../db/bulk-replays.js';
import type { EventRepository } from '../db/events.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { activeTraceCarrier, inEventTrace, SpanKind, tracingOn } from '../observability/spans.js';
import type { EventPublisher } from '../transport/publisher.js';
import { PUBLISH_ATTRIBUTES } from './receive-webhook.js';

/** A pass re-publishes at most this many batches (of batchSize) of each kind. */
const MAX_BATCHES_PER_PASS = 20;

/**
 * Re-publishes events that were accepted (stored) but whose publish failed and that no sender
 * retry has re-published since, and events published long ago that never got a workflow (their
 * message was dead-lettered, e.g. while Temporal was down). Several replicas may sweep the same
 * row: a second publish starts no second fanout, because the workflow id is the event id.
 */
export function createSweeper(deps: {
  events: Pick<
    EventRepository,
    'findUnpublished' | 'findUnpublishedOperational' | 'findUnstarted' | 'markPublished' | 'markRepublished' | 'now'
  >;
  publisher: EventPublisher;
  metrics: Metrics;
  logger: Logger;
  intervalMs: number;
  minAgeMs: number;
  /** how long after publishing an event without a workflow is considered stuck */
  unstartedAfterMs?: number;
  batchSize?: number;
  /** how often operational events, which wait for no grace period, are looked for (default 1 s) */
  operationalIntervalMs?: number;
  /** the admin API's bulk replays whose end the operational pass records first (replay.completed) */
  bulkReplays?: Pick<BulkReplays, 'completeSettled'>;
}) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let operationalTimer: NodeJS.Timeout | undefined;
  let operationalRunning: Promise<number> | undefined;
  /** until one pass succeeded (Postgres may be down at start-up), ticks sweep as at start-up */
  let recovered = false;
  const batchSize = deps.batchSize ?? 100;

  /**
   * One pass. `unstartedAfterMs` overrides the grace period: start() passes 0, because an ingest
   * that died between insert and publish left rows that say published (published_at is set at
   * insert) and have no message; on coming back, every event without a workflow is re-published
   * at once instead of after the grace period. Events of other replicas still in flight get a
   * second message, which starts no second workflow.
   */
  async function sweepOnce(opts: { unstartedAfterMs?: number } = {}): Promise<number> {
    // A backlog (a long Temporal outage dead-letters every message) is worked off in one pass,
    // batch after batch, not batchSize per tick; bounded so a pass ends.
    let published = 0;
    const asOf = await deps.events.now();
    for (let pass = 0; pass < MAX_BATCHES_PER_PASS; pass++) {
      const unpublished = await deps.events.findUnpublished(deps.minAgeMs, batchSize);
      // re-published ones leave this set for the grace period (markRepublished): no paging needed
      const unstarted = await deps.events.findUnstarted(
        opts.unstartedAfterMs ?? deps.unstartedAfterMs ?? DEFAULT_UNSTARTED_AFTER_MS,
        batchSize,
        asOf,
      );
      // both kinds are accepted events with no known message: the gauge counts them alike
      if (pass === 0) deps.metrics.unpublishedEvents.set(unpublished.length + unstarted.length);
      const ids = [...unpublished.map((e) => ({ ...e, via: 'sweeper' })), ...unstarted.map((e) => ({ ...e, via: 'sweeper_unstarted' }))];
      if (ids.length === 0) break;
      deps.logger.info(
        { unpublished: unpublished.map((e) => e.id), unstarted: unstarted.map((e) => e.id) },
        'sweeper re-publishing events',
      );
      // concurrently: the ingest's publisher batches them into PublishBatch calls
      const results = await Promise.allSettled(
        ids.map(async ({ id, traceparent, via }) => {
          await (tracingOn() ? republishInTrace(id, traceparent, via) : deps.publisher.publish(id));
          // an unstarted one waits the grace period again before its next copy
          await (via === 'sweeper' ? deps.events.markPublished(id) : deps.events.markRepublished(id));
          deps.metrics.republished.inc({ via });
          return id;
        }),
      );
      const done = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      published += done.length;
      if (done.length > 0) deps.logger.info({ eventIds: done }, 'sweeper re-published events');
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) {
        deps.metrics.publishFailures.inc(results.length - done.length);
        deps.logger.warn({ failed: results.length - done.length, err: String(failed.reason) }, 'sweeper could not publish; will retry');
        break; // the topic is likely down: wait for the next tick
      }
      if (unpublished.length < batchSize && unstarted.length < batchSize) break;
    }
    return published;
  }

  /**
   * The re-publish as a producer span of the event's stored trace, whose context the message
   * carries on to the consumer: the delivery joins the trace of the request that brought the
   * event, however late (docs/tracing.md). An event stored untraced gets a trace of its own.
   */
  const republishInTrace = (eventId: string, traceparent: string | null, via: string): Promise<void> =>
    inEventTrace(
      'republish event',
      traceparent,
      { kind: SpanKind.PRODUCER, attributes: { ...PUBLISH_ATTRIBUTES, 'webhook.event_id': eventId, 'webhook.republished_by': via } },
      () => deps.publisher.publish(eventId, activeTraceCarrier()),
    );

  /**
   * The outbox of operational events (docs/operations-events.md): each is written unpublished in
   * the transaction of its change, and published here, at once rather than after the grace period
   * the other unpublished events get (no sender will retry them). A second publish of one, by
   * another replica or after a crash between the publish and the mark, starts no second fanout.
   */
  async function publishOperational(): Promise<number> {
    // a bulk replay that ended is recorded here, then published below in the same pass
    await deps.bulkReplays?.completeSettled();
    let published = 0;
    for (let pass = 0; pass < MAX_BATCHES_PER_PASS; pass++) {
      const due = await deps.events.findUnpublishedOperational(batchSize);
      if (due.length === 0) break;
      const results = await Promise.allSettled(
        due.map(async ({ id, traceparent }) => {
          await (tracingOn() ? republishInTrace(id, traceparent, 'operational') : deps.publisher.publish(id));
          await deps.events.markPublished(id);
          deps.metrics.republished.inc({ via: 'operational' });
        }),
      );
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      published += results.length - failed.length;
      if (failed.length > 0) {
        deps.metrics.publishFailures.inc(failed.length);
        deps.logger.warn({ failed: failed.length, err: String(failed[0]?.reason) }, 'could not publish operational events; will retry');
        break;
      }
      if (due.length < batchSize) break;
    }
    return published;
  }

  const operationalTick = (): void => {
    if (operationalRunning) return;
    operationalRunning = publishOperational()
      .catch((err: unknown) => {
        deps.logger.warn({ err: String(err) }, 'operational events pass failed; the next tick retries');
        return 0;
      })
      .finally(() => {
        operationalRunning = undefined;
      });
  };

  const tick = (): void => {
    if (running) return;
    running = sweepOnce(recovered ? {} : { unstartedAfterMs: 0 })
      .then((n) => {
        recovered = true;
        return n;
      })
      .catch((err: unknown) => {
        deps.logger.warn({ err: String(err) }, 'sweep failed; the next tick retries');
        return 0;
      })
      .finally(() => {
        running = undefined;
      });
  };

  return {
    sweepOnce,
    publishOperational,
    start(): void {
      if (timer) return;
      timer = setInterval(tick, deps.intervalMs);
      timer.unref();
      operationalTimer = setInterval(operationalTick, deps.operationalIntervalMs ?? 1000);
      operationalTimer.unref();
      tick(); // recovery after a crash: see sweepOnce
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      if (operationalTimer) clearInterval(operationalTimer);
      timer = undefined;
      operationalTimer = undefined;
      await Promise.all([running, operationalRunning]);
    },
  };
}
