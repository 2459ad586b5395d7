import { permanent } from '../domain/errors.js';
import { eventOutcome } from '../domain/statuses.js';
import type { ActivityDeps, ActivityLogger } from './deps.js';
import type { FinalEventStatus, FinishEventInput } from './types.js';

type FinishDeps = Pick<ActivityDeps, 'repos' | 'metrics'> & { logger: ActivityLogger; now: () => number };

/**
 * Settles the event once its run's deliveries are done: the status follows from ALL its deliveries
 * (COMPLETED also when none matched), so a replay recomputes it from the whole picture.
 */
export function createFinishEvent({ repos, metrics, logger, now }: FinishDeps) {
  return async function finishEvent(input: FinishEventInput): Promise<FinalEventStatus> {
    // A delivery whose activity ended without settling its row (e.g. its last attempt timed out
    // or its worker died) would stay PENDING and not be replayable: count that attempt and fail it.
    for (const u of input.unsettled ?? []) {
      const d = await repos.deliveries.get(u.deliveryId);
      if (d?.status !== 'PENDING') continue;
      const settled = await repos.deliveries.recordAttempt(d.id, {
        status: 'FAILED',
        responseStatus: d.lastResponseStatus,
        responseBody: d.lastResponseBody,
        error: `attempt did not complete: ${u.reason}`.slice(0, 500),
        // the attempt that never reported: its start is not known here, its end is now
        startedAt: new Date(),
        durationMs: null,
      });
      logger.warn({ eventId: input.eventId, deliveryId: d.id, reason: u.reason }, 'unsettled delivery marked FAILED');
      // it counts towards its endpoint's failures like any FAILED delivery, and may be the one that disables it
      if (settled?.autoDisabled) {
        const endpoint = await repos.endpoints.get(d.endpointId);
        metrics.endpointAutoDisables.inc({ endpoint: endpoint?.name ?? d.endpointId });
        logger.warn({ endpointId: d.endpointId, endpoint: endpoint?.name }, 'endpoint auto-disabled');
      }
    }

    // read after the unsettled ones are settled: the event and all its deliveries' statuses at once
    const loaded = await repos.events.getMetaWithDeliveryStatuses(input.eventId);
    if (!loaded) throw permanent('event_not_found', `event ${input.eventId} not found`);
    const { event } = loaded;
    const status = eventOutcome(loaded.statuses);
    await repos.events.setStatus(event.id, status);
    // Counted once per event: not again on an activity retry, nor on a replay's recomputation.
    if (event.status === 'RECEIVED') {
      metrics.eventsFinished.inc({ status });
      metrics.eventEndToEnd.observe({ status }, Math.max(0, now() - event.receivedAt.getTime()) / 1000);
    }
    logger.info({ eventId: event.id, status, previous: event.status }, 'event finished');
    return status;
  };
}
