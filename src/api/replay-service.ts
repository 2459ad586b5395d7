import type { DeliveryRepository } from '../db/deliveries.js';
import type { EventRepository } from '../db/events.js';
import type { FailedDeliveryFilter, ReplayQueries } from '../db/replay-queries.js';
import { describeError, permanent, transient } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';
import { inEventTrace, SpanKind, tracingOn } from '../observability/spans.js';
import type { BulkReplayResult, ReplayStarted } from './route-schemas.js';

/** startReplay bound to a Temporal client and task queue. */
export type StartReplay = (req: {
  eventId: string;
  deliveryIds: string[];
  /** a run id the caller chose (a WebhookReplay's); a second start of it is refused (WorkflowExecutionAlreadyStartedError) */
  workflowId?: string;
}) => Promise<{ workflowId: string }>;

export interface ReplayServiceDeps {
  deliveries: Pick<DeliveryRepository, 'get' | 'reopenFailed'>;
  events: Pick<EventRepository, 'get' | 'getMeta'>;
  replays: ReplayQueries;
  startReplay: StartReplay;
  logger: Logger;
  /** replay runs started at once by a bulk replay */
  startConcurrency?: number;
}

export interface ReplayService {
  replayDelivery(id: string, actor: string): Promise<ReplayStarted>;
  replayEvent(eventId: string, actor: string): Promise<ReplayStarted>;
  replayMatching(f: FailedDeliveryFilter, limit: number, dryRun: boolean, actor: string): Promise<BulkReplayResult>;
}

/**
 * Replay = FAILED rows back to PENDING, then a new workflow run (its own id) that delivers them
 * again and recomputes the event's status. Reopening first is what makes a replay exclusive: of
 * two concurrent replays of one delivery exactly one reopens it, the other gets 409. If the run
 * cannot be started the rows go back to FAILED, so nothing is left PENDING with no run behind it.
 */
export function createReplayService(deps: ReplayServiceDeps): ReplayService {
  const { logger } = deps;

  /**
   * Starts the run in a span of the event's stored trace (linked to the admin request's span), so
   * the replay's workflow, activities and attempts join the event's trace (docs/tracing.md).
   */
  const start = async (eventId: string, deliveryIds: string[], actor: string, traceparent: string | null): Promise<ReplayStarted> => {
    try {
      const attributes = { 'webhook.event_id': eventId, 'webhook.replay.deliveries': deliveryIds.length };
      const { workflowId } = await inEventTrace('replay event', traceparent, { kind: SpanKind.PRODUCER, attributes }, async (span) => {
        const started = await deps.startReplay({ eventId, deliveryIds });
        span?.setAttribute('webhook.workflow_id', started.workflowId);
        return started;
      });
      logger.info({ eventId, deliveryIds, workflowId, actor }, 'replay started');
      return { eventId, workflowId, deliveryIds };
    } catch (err) {
      const reverted = await deps.replays.revertReopened(deliveryIds);
      logger.warn({ eventId, deliveryIds, reverted, err: describeError(err) }, 'replay could not be started; deliveries left FAILED');
      throw transient(
        'replay_unavailable',
        'the replay could not be started (workflow service unavailable); the deliveries stay FAILED',
        err,
      );
    }
  };

  /** The event is still there with its payload (and its stored trace context); else the refusal that says why not. */
  const replayableEvent = async (eventId: string): Promise<{ traceparent: string | null }> => {
    const e = await deps.events.getMeta(eventId);
    if (!e) throw permanent('not_found', `no event ${eventId} (deleted by retention, RETENTION_MAX_AGE, if it existed)`);
    if (e.payloadDroppedAt) {
      throw permanent(
        'payload_dropped',
        `event ${eventId} can not be replayed: its payload was dropped by retention (RETENTION_PAYLOAD_MAX_AGE) at ${e.payloadDroppedAt.toISOString()}; its deliveries and attempts stay readable`,
      );
    }
    return { traceparent: e.traceparent };
  };

  return {
    async replayDelivery(id, actor) {
      const d = await deps.deliveries.get(id);
      if (!d) throw permanent('not_found', `no delivery ${id}`);
      const { traceparent } = await replayableEvent(d.eventId);
      if (!(await deps.deliveries.reopenFailed(id))) {
        // retention may have dropped the payload since: say so rather than "not FAILED"
        await replayableEvent(d.eventId);
        const now = (await deps.deliveries.get(id))?.status ?? d.status;
        throw permanent('not_replayable', `delivery ${id} is ${now}; only FAILED deliveries are replayed`);
      }
      return start(d.eventId, [id], actor, traceparent);
    },

    async replayEvent(eventId, actor) {
      const { traceparent } = await replayableEvent(eventId);
      const ids = await deps.replays.reopenFailedOfEvent(eventId);
      if (ids.length === 0) {
        await replayableEvent(eventId);
        throw permanent('not_replayable', `event ${eventId} has no FAILED delivery`);
      }
      return start(eventId, ids, actor, traceparent);
    },

    async replayMatching(f, limit, dryRun, actor) {
      const matched = await deps.replays.countFailed(f);
      if (dryRun) return { dryRun, matched, limit, replayed: Math.min(matched, limit), replays: [], failed: [] };

      const reopened = await deps.replays.reopenFailedMatching(f, limit);
      const byEvent = new Map<string, string[]>();
      for (const r of reopened) byEvent.set(r.eventId, [...(byEvent.get(r.eventId) ?? []), r.id]);

      // one run per event, a few started at a time
      const result: BulkReplayResult = { dryRun, matched, limit, replayed: 0, replays: [], failed: [] };
      const queue = [...byEvent.entries()];
      const worker = async () => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          const [eventId, deliveryIds] = next;
          try {
            // the event's trace, only looked up when there is a tracer to continue it
            const traceparent = tracingOn() ? ((await deps.events.getMeta(eventId))?.traceparent ?? null) : null;
            result.replays.push(await start(eventId, deliveryIds, actor, traceparent));
            result.replayed += deliveryIds.length;
          } catch (err) {
            result.failed.push({ eventId, deliveryIds, error: describeError(err) });
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(deps.startConcurrency ?? 8, queue.length) }, worker));
      if (result.replays.length === 0 && result.failed.length > 0) {
        throw transient('replay_unavailable', 'no replay could be started (workflow service unavailable); the deliveries stay FAILED');
      }
      return result;
    },
  };
}
