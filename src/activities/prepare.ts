import { Context } from '@temporalio/activity';
import { permanent } from '../domain/errors.js';
import type { Delivery, Endpoint } from '../domain/records.js';
import type { ActivityDeps, ActivityLogger } from './deps.js';
import type { BackoffSettings, PlannedDelivery, PrepareInput, PrepareResult } from './types.js';

type PrepareDeps = Pick<ActivityDeps, 'repos'> & { logger: ActivityLogger; backoff: BackoffSettings };

const plan = (d: Delivery, e: Endpoint): PlannedDelivery => ({
  deliveryId: d.id,
  endpointId: e.id,
  maxAttempts: e.maxAttempts,
  timeoutSeconds: e.timeoutSeconds,
  priorAttempts: d.attempts,
});

/**
 * Resolves the deliveries one workflow run makes. A fanout matches the event's active endpoints
 * (specific type or catch-all) and creates their PENDING rows, idempotently so a retry is safe.
 * A replay takes the given deliveries, which the caller reopened to PENDING.
 */
export function createPrepare({ repos, logger, backoff }: PrepareDeps) {
  return async function prepare(input: PrepareInput): Promise<PrepareResult> {
    // the run that fans the event out records itself (the consumer no longer writes per start),
    // in the same round trip as the read
    const event =
      input.deliveryIds === undefined
        ? await repos.events.getMetaForRun(input.eventId, Context.current().info.workflowExecution?.workflowId ?? input.eventId)
        : await repos.events.getMeta(input.eventId);
    if (!event) throw permanent('event_not_found', `event ${input.eventId} not found`);

    if (input.deliveryIds === undefined) {
      const endpoints = await repos.endpoints.matchActive(event.source, event.eventType);
      const byId = new Map(endpoints.map((e) => [e.id, e]));
      const rows = await repos.deliveries.createPending(event.id, [...byId.keys()]);
      // Rows an earlier fanout already settled are not delivered again.
      const deliveries = rows.filter((d) => d.status === 'PENDING').flatMap((d) => {
        const e = byId.get(d.endpointId);
        return e ? [plan(d, e)] : [];
      });
      logger.debug({ eventId: event.id, matched: endpoints.length, pending: deliveries.length }, 'fanout prepared');
      return { deliveries, backoff };
    }

    const deliveries: PlannedDelivery[] = [];
    for (const id of input.deliveryIds) {
      const d = await repos.deliveries.get(id);
      if (!d || d.eventId !== event.id) {
        throw permanent('delivery_not_found', `delivery ${id} does not belong to event ${event.id}`);
      }
      if (d.status !== 'PENDING') {
        // Already settled (e.g. a second replay of the same row): nothing to do for it.
        logger.warn({ eventId: event.id, deliveryId: id, status: d.status }, 'replay skips a settled delivery');
        continue;
      }
      const e = await repos.endpoints.get(d.endpointId);
      if (!e) throw permanent('endpoint_not_found', `endpoint ${d.endpointId} not found`);
      deliveries.push(plan(d, e));
    }
    logger.info({ eventId: event.id, replay: deliveries.length }, 'replay prepared');
    return { deliveries, backoff };
  };
}
