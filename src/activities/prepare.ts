import { ApplicationFailure, Context } from '@temporalio/activity';
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
    const event = await repos.events.getMeta(input.eventId);
    if (!event) throw ApplicationFailure.nonRetryable(`event ${input.eventId} not found`, 'EventNotFound');

    if (input.deliveryIds === undefined) {
      // the run that fans the event out records itself (the consumer no longer writes per start)
      if (event.workflowId === null) {
        await repos.events.setWorkflowId(event.id, Context.current().info.workflowExecution?.workflowId ?? event.id);
      }
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
        throw ApplicationFailure.nonRetryable(`delivery ${id} does not belong to event ${event.id}`, 'DeliveryNotFound');
      }
      if (d.status !== 'PENDING') {
        // Already settled (e.g. a second replay of the same row): nothing to do for it.
        logger.warn({ eventId: event.id, deliveryId: id, status: d.status }, 'replay skips a settled delivery');
        continue;
      }
      const e = await repos.endpoints.get(d.endpointId);
      if (!e) throw ApplicationFailure.nonRetryable(`endpoint ${d.endpointId} not found`, 'EndpointNotFound');
      deliveries.push(plan(d, e));
    }
    logger.info({ eventId: event.id, replay: deliveries.length }, 'replay prepared');
    return { deliveries, backoff };
  };
}
