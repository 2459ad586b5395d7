import { Context } from '@temporalio/activity';
import { permanent } from '../domain/errors.js';
import type { Delivery, Endpoint, WebhookEvent } from '../domain/records.js';
import type { AttemptHandoff } from './attempt-handoff.js';
import { contentEvent, type ContentEvent } from '../content/event-view.js';
import type { ExpressionCache } from '../content/expression-cache.js';
import { formatExpressionError } from '../content/filter.js';
import type { FilterForecast } from './filter-forecast.js';
import type { ActivityDeps, ActivityLogger } from './deps.js';
import type { OrderingWait, PlannedDelivery, PrepareInput, PrepareResult } from './types.js';
import type { ContentRouting, OrderingKeyOf } from '../db/deliveries.js';
import type { SequenceJudge } from '../db/ordering.js';
import { runningWorkflowId, waitOf } from './ordering.js';
import { continuationWorkflowId } from '../domain/ordering.js';
import type { BackoffSettings } from '../config/settings.js';

type PrepareDeps = Pick<ActivityDeps, 'repos' | 'metrics'> & {
  logger: ActivityLogger;
  backoff: BackoffSettings;
  handoff: AttemptHandoff;
  expressions: ExpressionCache;
  forecast: FilterForecast;
  /** which earlier events not prepared yet hold an ordered delivery back (activities/sequence-judge.ts) */
  judge: SequenceJudge;
  /**
   * Whether an ordered delivery that must wait is left to its key's chain (docs/ordering.md): on
   * with the handoff, in a worker that can start a continuation (ActivityDeps.signalTurn).
   */
  detach: boolean;
  now: () => number;
};

/** A filter that fails on every event would log on every event: once per endpoint and this long. */
const FILTER_ERROR_LOG_EVERY_MS = 60_000;

/**
 * The filters of the endpoints that have one (docs/content-routing.md), over the event prepare
 * read: an endpoint gets the event when its filter is true. An evaluation error counts as not
 * matched (counted, logged once per endpoint and minute); nothing here fails the workflow. Each
 * answer goes to the forecast, which says whether the endpoint's next event is expected to pass.
 */
function createContentRouting({
  metrics,
  logger,
  expressions,
  forecast,
  now,
}: Pick<PrepareDeps, 'metrics' | 'logger' | 'expressions' | 'forecast' | 'now'>): ContentRouting {
  const lastLogged = new Map<string, number>();
  const noteError = (endpoint: Endpoint, eventId: string, error: string) => {
    metrics.filterErrors.inc({ endpoint: endpoint.name });
    const at = now();
    if (at - (lastLogged.get(endpoint.id) ?? -Infinity) < FILTER_ERROR_LOG_EVERY_MS) return;
    lastLogged.set(endpoint.id, at);
    if (lastLogged.size > 10_000) lastLogged.clear();
    logger.warn(
      { endpoint: endpoint.name, endpointId: endpoint.id, eventId, error },
      'filter failed: counted as not matched (logged once a minute per endpoint)',
    );
  };
  const matches = (endpoint: Endpoint, event: WebhookEvent, view: ContentEvent): boolean => {
    const compiled = expressions.filter(endpoint.filter ?? '');
    if (!compiled.ok) {
      // the operator stores only filters that compiled: a row written some other way
      noteError(endpoint, event.id, `filter does not compile: ${formatExpressionError(compiled.error)}`);
      return false;
    }
    const outcome = compiled.value.evaluate(view);
    if ('error' in outcome) {
      noteError(endpoint, event.id, outcome.error);
      return false;
    }
    if (!outcome.matched) metrics.filtered.inc({ endpoint: endpoint.name });
    return outcome.matched;
  };
  return (event, candidates) => {
    const view = contentEvent(event);
    return candidates.map(({ endpoint, expected }) => {
      const accepted = matches(endpoint, event, view);
      return { accepted, expectNext: forecast.note(endpoint.id, accepted, expected) };
    });
  };
}

const plan = (
  d: Pick<Delivery, 'id' | 'attempts'>,
  e: Pick<Endpoint, 'id' | 'maxAttempts' | 'timeoutSeconds'>,
  ordering?: OrderingWait,
): PlannedDelivery => ({
  deliveryId: d.id,
  endpointId: e.id,
  maxAttempts: e.maxAttempts,
  timeoutSeconds: e.timeoutSeconds,
  priorAttempts: d.attempts,
  ...(ordering === undefined ? {} : { ordering }),
});

/**
 * The keys of ordered deliveries (docs/ordering.md): spec.ordering.key over the event prepare
 * read; a key that fails or is no string puts the event in the endpoint's no-key sequence
 * (logged once per endpoint and minute, like a failing filter).
 */
function createOrderingKeys({ logger, expressions, now }: Pick<PrepareDeps, 'logger' | 'expressions' | 'now'>): OrderingKeyOf {
  const lastLogged = new Map<string, number>();
  const noKey = (endpoint: Endpoint, eventId: string, error: string): null => {
    const at = now();
    if (at - (lastLogged.get(endpoint.id) ?? -Infinity) >= FILTER_ERROR_LOG_EVERY_MS) {
      lastLogged.set(endpoint.id, at);
      if (lastLogged.size > 10_000) lastLogged.clear();
      logger.warn(
        { endpoint: endpoint.name, endpointId: endpoint.id, eventId, error },
        'ordering key failed: the event goes into the no-key sequence (logged once a minute per endpoint)',
      );
    }
    return null;
  };
  return (event, endpoint) => {
    const text = endpoint.ordering?.key ?? null;
    if (text === null) return '';
    const compiled = expressions.orderingKey(text);
    if (!compiled.ok) return noKey(endpoint, event.id, `key does not compile: ${formatExpressionError(compiled.error)}`);
    const outcome = compiled.value.keyOf(contentEvent(event));
    return 'key' in outcome ? outcome.key : noKey(endpoint, event.id, outcome.error);
  };
}

/**
 * Resolves the deliveries one workflow run makes. A fanout matches the event's active endpoints
 * that its source allows (specific type or catch-all) and creates their PENDING rows, idempotently so a retry is safe.
 * A replay takes the given deliveries, which the caller reopened to PENDING.
 */
export function createPrepare({ repos, metrics, logger, backoff, handoff, expressions, forecast, judge, detach, now }: PrepareDeps) {
  const contentRouting = createContentRouting({ metrics, logger, expressions, forecast, now });
  const orderingKeys = createOrderingKeys({ logger, expressions, now });
  /** An ordered delivery's turn (recording this run as its waiter when it has not come); undefined when it is not ordered. */
  const turnOf = async (d: Pick<Delivery, 'id' | 'ordering'>, fallbackId: string, takes: boolean): Promise<OrderingWait | undefined> =>
    d.ordering === null ? undefined : waitOf(await repos.ordering.turn(d.id, runningWorkflowId(fallbackId), judge, takes));
  return async function prepare(input: PrepareInput): Promise<PrepareResult> {
    if (input.deliveryIds === undefined) {
      // one round trip: the run records itself on the event (the consumer does not write per
      // start), matches the endpoints and creates their rows
      const rows = await repos.deliveries.prepareRun(
        input.eventId,
        Context.current().info.workflowExecution?.workflowId ?? input.eventId,
        contentRouting,
        orderingKeys,
        // an ordered delivery's key is written by its turn check's statement below
        { deferKeys: true },
      );
      if (!rows) throw permanent('event_not_found', `event ${input.eventId} not found`);
      // Rows an earlier fanout already settled are not delivered again.
      const pending = rows.filter((r) => r.delivery.status === 'PENDING');
      // an ordered delivery waiting behind this event (for it to be prepared) now waits behind its
      // delivery, whose end wakes it (db/ordering.ts pointNextAt): nothing to signal from here
      // one that must wait behind a delivery whose end will wake it is left to its key's chain
      // when the run lets it go: its waiter is its continuation, which is started only when the
      // releasing activity does not make its attempt (docs/ordering.md)
      const detaches = detach && input.detaches === true && input.takesHandoff === true;
      const turns = await Promise.all(
        pending.map(async (r) => {
          if (r.delivery.ordering === null) return undefined;
          const detachTo = detaches ? { detachTo: continuationWorkflowId(input.eventId, r.delivery.id) } : {};
          const turn = await repos.ordering.firstTurn(r.delivery.id, runningWorkflowId(input.eventId), judge, input.takesHandoff === true, {
            ...detachTo,
            ...(r.keyToStore === undefined ? {} : { key: r.keyToStore }),
          });
          return turn.turn === 'wait' && turn.detached === true ? 'detached' : waitOf(turn);
        }),
      );
      // their first attempts run next, on this worker: they take these rows instead of reading them
      // again (an ordered one whose turn has not come reads them when it comes)
      handoff.put(pending.filter((_, i) => turns[i] === undefined || turns[i] === 'go'));
      const deliveries = pending.map((r, i) => plan(r.delivery, r.endpoint, turns[i]));
      logger.debug({ eventId: input.eventId, matched: rows.length, pending: deliveries.length }, 'fanout prepared');
      return { deliveries, backoff };
    }

    const event = await repos.events.getMeta(input.eventId);
    if (!event) throw permanent('event_not_found', `event ${input.eventId} not found`);
    if (input.resumes === true) return { deliveries: await resumed(input.deliveryIds, event.id), backoff };
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
      // a replayed delivery that holds its key goes first; one that no longer does goes at once, out of order
      deliveries.push(plan(d, e, await turnOf(d, input.eventId, input.takesHandoff === true)));
    }
    logger.info({ eventId: event.id, replay: deliveries.length }, 'replay prepared');
    return { deliveries, backoff };
  };

  /**
   * A continuation's delivery (docs/ordering.md): planned as woken, since the signal that started
   * the run is its wake-up, so its first step is the turn check that also reads what a handoff
   * left (a retry's delay). Its attempts count from the row's first: only a fanout's delivery is
   * left to its key's chain, and the attempts made since (the handoff's) are that run's.
   */
  async function resumed(ids: readonly string[], eventId: string): Promise<PlannedDelivery[]> {
    const deliveries: PlannedDelivery[] = [];
    for (const id of ids) {
      const d = await repos.deliveries.get(id);
      if (d?.eventId !== eventId) continue;
      // an ordered one that ended with no run told (its handoff's worker lost after the attempt,
      // before its release): its turn check and release apply the end (the key's hold, the
      // blocked mark, the next one's wake); its attempt sends nothing for a settled row
      if (d.status !== 'PENDING' && d.ordering === null) continue;
      const e = await repos.endpoints.get(d.endpointId);
      if (!e) throw permanent('endpoint_not_found', `endpoint ${d.endpointId} not found`);
      deliveries.push(plan({ id: d.id, attempts: 0 }, e, d.ordering === null ? undefined : 'signal'));
    }
    logger.debug({ eventId, resumed: deliveries.length }, 'continuation prepared');
    return deliveries;
  }
}
