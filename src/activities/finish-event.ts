import { permanent } from '../domain/errors.js';
import type { ActivityDeps, ActivityLogger } from './deps.js';
import type { FinishedEvent } from '../db/events.js';
import type { FinishEventInput, FinishedEventStatus, UnsettledDelivery } from './types.js';

type FinishDeps = Pick<ActivityDeps, 'repos' | 'metrics'> & { logger: ActivityLogger; now: () => number };

/**
 * A delivery whose activity ended without settling its row (e.g. its last attempt timed out or
 * its worker died) would stay PENDING and not be replayable: that attempt is counted and the
 * delivery FAILED. Nothing when the row is settled already.
 */
export async function settleUnsettled(
  { repos, metrics, logger }: Pick<ActivityDeps, 'repos' | 'metrics'> & { logger: ActivityLogger },
  u: UnsettledDelivery,
): Promise<void> {
  const d = await repos.deliveries.get(u.deliveryId);
  if (d?.status !== 'PENDING') return;
  const settled = await repos.deliveries.recordAttempt(d.id, {
    status: 'FAILED',
    responseStatus: d.lastResponseStatus,
    responseBody: d.lastResponseBody,
    error: `attempt did not complete: ${u.reason}`.slice(0, 500),
    // the attempt that never reported: its start is not known here, its end is now
    startedAt: new Date(),
    durationMs: null,
  });
  logger.warn({ eventId: d.eventId, deliveryId: d.id, reason: u.reason }, 'unsettled delivery marked FAILED');
  // it counts towards its endpoint's failures like any FAILED delivery, and may be the one that disables it
  if (settled?.autoDisabled) {
    const endpoint = await repos.endpoints.get(d.endpointId);
    metrics.endpointAutoDisables.inc({ endpoint: endpoint?.name ?? d.endpointId });
    logger.warn({ endpointId: d.endpointId, endpoint: endpoint?.name }, 'endpoint auto-disabled');
  }
}

/**
 * Counts an event that has just reached its final status: once per event, not again on an
 * activity retry nor on a replay's recomputation (previous is RECEIVED only the first time).
 */
export function countFinished(
  { metrics, logger, now }: Pick<FinishDeps, 'metrics' | 'logger' | 'now'>,
  eventId: string,
  finished: FinishedEvent,
): void {
  const { status, previous } = finished;
  if (previous === 'RECEIVED') {
    metrics.eventsFinished.inc({ status });
    metrics.eventEndToEnd.observe({ status }, Math.max(0, now() - finished.receivedAt.getTime()) / 1000);
  }
  logger.info({ eventId, status, previous }, 'event finished');
}

/**
 * Settles the event once its run's deliveries are done: the status follows from ALL its deliveries
 * (the rule: events.finish), so a replay recomputes it from the whole picture. A run that left a
 * delivery to its key's chain (settledOnly) finishes it only when no delivery is PENDING any more.
 */
export function createFinishEvent({ repos, metrics, logger, now }: FinishDeps) {
  return async function finishEvent(input: FinishEventInput): Promise<FinishedEventStatus> {
    for (const u of input.unsettled ?? []) await settleUnsettled({ repos, metrics, logger }, u);

    // after the unsettled ones are settled: the status from all the deliveries, in one statement
    const finished =
      input.settledOnly === true ? await repos.events.finishIfSettled(input.eventId) : await repos.events.finish(input.eventId);
    if (!finished) throw permanent('event_not_found', `event ${input.eventId} not found`);
    if (finished === 'pending') {
      // the key's chain ends the delivery left to it, and finishes the event then
      logger.debug({ eventId: input.eventId }, 'event left RECEIVED: a delivery left to its key is PENDING');
      return 'RECEIVED';
    }
    countFinished({ metrics, logger, now }, input.eventId, finished);
    return finished.status;
  };
}
