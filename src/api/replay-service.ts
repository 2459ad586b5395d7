import type { BulkReplayCriteria, BulkReplays } from '../db/bulk-replays.js';
import type { EventRepository } from '../db/events.js';
import type { Repositories } from '../db/repositories.js';
import type { FailedDeliveryFilter, ReplayEndpoint, ReplayQueries } from '../db/replay-queries.js';
import type { TenantScope } from '../db/tenant-scope.js';
import { describeError, permanent, transient } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';
import { inEventTrace, SpanKind, tracingOn } from '../observability/spans.js';
import { skipOrderedDelivery, type SignalTurn } from '../temporal/ordering-skip.js';
import type { BulkReplayResult, ReplayStarted } from './route-schemas.js';

/** startReplay bound to a Temporal client and task queue. */
export type StartReplay = (req: {
  eventId: string;
  deliveryIds: string[];
  /** a run id the caller chose (a WebhookReplay's); a second start of it is refused (WorkflowExecutionAlreadyStartedError) */
  workflowId?: string;
}) => Promise<{ workflowId: string }>;

export interface ReplayServiceDeps {
  events: Pick<EventRepository, 'getMeta'>;
  replays: ReplayQueries;
  startReplay: StartReplay;
  /** ordered delivery's skip (docs/ordering.md) */
  ordering: Pick<Repositories['ordering'], 'skip'>;
  signalTurn: SignalTurn;
  logger: Logger;
  /** replay runs started at once by a bulk replay */
  startConcurrency?: number;
  /** where a bulk replay is recorded so that its end raises replay.completed (absent: it is not) */
  bulkReplays?: Pick<BulkReplays, 'open'>;
}

/**
 * Every replay takes the caller's scope (db/tenant-scope.ts): what it does not see is not found
 * (404, or matched by no filter), so a tenant replays its own namespaces' deliveries only.
 */
export interface ReplayService {
  replayDelivery(scope: TenantScope, id: string, actor: string): Promise<ReplayStarted>;
  replayEvent(scope: TenantScope, eventId: string, actor: string): Promise<ReplayStarted>;
  replayMatching(scope: TenantScope, f: FailedDeliveryFilter, limit: number, dryRun: boolean, actor: string): Promise<BulkReplayResult>;
  /** an ordered delivery that holds its key after it FAILED stops holding it; the next one of its key goes */
  skipDelivery(scope: TenantScope, id: string, actor: string): Promise<void>;
}

const MAX_NAMED = 5;

/**
 * 409 endpoint_not_allowed: a replay to an endpoint its source's credential does not allow
 * (migration 071's denied_reason, set by the operator or dev mode) would be sent nowhere; the
 * refusal names the endpoint and why, until it is allowed again.
 */
export function notAllowed(endpoints: readonly ReplayEndpoint[]): Error {
  const why = (e: ReplayEndpoint): string => {
    const where = e.namespace === null ? '' : ` in namespace "${e.namespace}"`;
    const reason =
      e.deniedReason === 'SourceNotFound'
        ? `SourceNotFound (no InboundCredential configures source "${e.source}")`
        : `NotAllowedBySource (the InboundCredential of source "${e.source}" does not allow endpoints of its namespace in spec.allowedEndpoints)`;
    return `endpoint ${e.name}${where} is not allowed by its source: ${reason}`;
  };
  const named = endpoints.slice(0, MAX_NAMED).map(why);
  const more = endpoints.length > MAX_NAMED ? `; and ${endpoints.length - MAX_NAMED} more` : '';
  return permanent(
    'endpoint_not_allowed',
    `${named.join('; ')}${more}. Nothing is sent to it and replays to it are refused until its source allows it (docs/tenancy.md)`,
  );
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

  /** The event is still there (for this scope) with its payload (and its stored trace context); else the refusal that says why not. */
  const replayableEvent = async (scope: TenantScope, eventId: string): Promise<{ traceparent: string | null }> => {
    const e = await deps.replays.replayableEvent(scope, eventId);
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
    async skipDelivery(scope, id, actor) {
      const skipped = await skipOrderedDelivery(deps, scope, id, actor);
      if (skipped.outcome === 'not_found') throw permanent('not_found', `no delivery ${id}`);
      if (skipped.outcome === 'already_skipped') {
        throw permanent(
          'not_skippable',
          `delivery ${id} no longer holds its key (skipped before, or FAILED under onFailure Skip): nothing to skip (docs/ordering.md)`,
        );
      }
      if (skipped.outcome === 'not_skippable') {
        throw permanent('not_skippable', `delivery ${id} can not be skipped: ${skipped.why} (docs/ordering.md)`);
      }
    },

    async replayDelivery(scope, id, actor) {
      const d = await deps.replays.target(scope, id);
      if (!d) throw permanent('not_found', `no delivery ${id}`);
      const { traceparent } = await replayableEvent(scope, d.eventId);
      if (d.deniedReason !== null) throw notAllowed([d]);
      if (!(await deps.replays.reopenFailed(id))) {
        // retention may have dropped the payload since, or the source revoked the endpoint: say
        // so rather than "not FAILED"
        await replayableEvent(scope, d.eventId);
        const now = (await deps.replays.target(scope, id)) ?? d;
        if (now.deniedReason !== null) throw notAllowed([now]);
        throw permanent('not_replayable', `delivery ${id} is ${now.status}; only FAILED deliveries are replayed`);
      }
      return start(d.eventId, [id], actor, traceparent);
    },

    async replayEvent(scope, eventId, actor) {
      const { traceparent } = await replayableEvent(scope, eventId);
      // deliveries to endpoints their source does not allow stay FAILED; the others are replayed
      const ids = await deps.replays.reopenFailedOfEvent(scope, eventId);
      if (ids.length === 0) {
        await replayableEvent(scope, eventId);
        const denied = await deps.replays.deniedEndpointsOfEvent(scope, eventId);
        if (denied.length > 0) throw notAllowed(denied);
        throw permanent('not_replayable', `event ${eventId} has no FAILED delivery`);
      }
      return start(eventId, ids, actor, traceparent);
    },

    async replayMatching(scope, f, limit, dryRun, actor) {
      // naming an endpoint its source does not allow is refused, dry run included (it answers
      // what the replay would do); one the scope does not see matches nothing, as if absent
      if (f.endpointId !== undefined) {
        const endpoint = await deps.replays.endpoint(scope, f.endpointId);
        if (endpoint && endpoint.deniedReason !== null) throw notAllowed([endpoint]);
      }
      const matched = await deps.replays.countFailed(scope, f);
      if (dryRun) return { dryRun, matched, limit, replayed: Math.min(matched, limit), replays: [], failed: [] };

      const criteria: BulkReplayCriteria = {
        source: f.source,
        endpointId: f.endpointId,
        eventType: f.eventType,
        from: f.from?.toISOString(),
        to: f.to?.toISOString(),
        limit,
        namespaces: scope?.namespaces,
      };
      const { reopened, bulkReplayId } = await deps.replays.reopenFailedMatching(
        scope,
        f,
        limit,
        deps.bulkReplays && { replays: deps.bulkReplays, criteria },
      );
      const byEvent = new Map<string, string[]>();
      for (const r of reopened) byEvent.set(r.eventId, [...(byEvent.get(r.eventId) ?? []), r.id]);

      // one run per event, a few started at a time
      const result: BulkReplayResult = {
        dryRun,
        matched,
        limit,
        replayed: 0,
        replays: [],
        failed: [],
        ...(bulkReplayId !== null ? { bulkReplayId } : {}),
      };
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
