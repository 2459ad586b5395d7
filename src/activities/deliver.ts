import { ApplicationFailure, Context } from '@temporalio/activity';
import type { AttemptResult } from '../db/deliveries.js';
import type { DeliveryOutcome, OutboundRequest } from '../delivery/types.js';
import type { Delivery, Endpoint, WebhookEvent } from '../domain/records.js';
import { describeError } from '../domain/errors.js';
import { backoffDelayMs, type ActivityDeps, type ActivityLogger } from './deps.js';
import type { BackoffSettings, DeliverInput, DeliverResult } from './types.js';
import { DELIVERY_FAILURE } from './failures.js';

type DeliverDeps = Pick<ActivityDeps, 'repos' | 'send' | 'metrics'> & {
  logger: ActivityLogger;
  backoff: BackoffSettings;
};

export { DELIVERY_FAILURE };

function buildRequest(d: Delivery, e: Endpoint, ev: WebhookEvent, attempt: number): OutboundRequest {
  return {
    url: e.url,
    method: e.method,
    body: ev.payload,
    contentType: ev.contentType,
    auth: {
      type: e.authType,
      username: e.authUsername,
      secret: e.authSecret,
      signingSecret: e.signingSecret,
      previousSigningSecret: e.previousSigningSecret,
    },
    customHeaders: e.customHeaders,
    timeoutMs: e.timeoutSeconds * 1000,
    retryOnStatus: e.retryOnStatus,
    meta: { eventId: ev.id, source: ev.source, eventType: ev.eventType, deliveryId: d.id, attempt },
  };
}

/** The sender's contract is to return an outcome; a throw is a bug, handled as a retryable failure. */
async function sendSafely(send: DeliverDeps['send'], req: OutboundRequest): Promise<DeliveryOutcome> {
  const started = performance.now();
  try {
    return await send(req);
  } catch (err) {
    return {
      kind: 'retryable',
      status: null,
      body: null,
      error: `sender error: ${describeError(err)}`,
      durationMs: performance.now() - started,
      statusClass: 'network',
    };
  }
}

/**
 * One attempt of one delivery. The endpoint is read on every attempt so a rotated secret or a
 * changed URL applies to the next retry. The row records every attempt; Temporal's retry policy
 * (built from the endpoint's max_attempts) schedules the next one.
 */
export function createDeliver({ repos, send, metrics, logger, backoff }: DeliverDeps) {
  // false when another run settled the row first; then that run's status is what counts
  const record = (id: string, r: AttemptResult): Promise<boolean> => repos.deliveries.recordAttempt(id, r);

  async function currentStatus(id: string): Promise<DeliverResult> {
    const d = await repos.deliveries.get(id);
    if (!d) throw ApplicationFailure.nonRetryable(`delivery ${id} not found`, DELIVERY_FAILURE.missing);
    return { status: d.status };
  }

  return async function deliver(input: DeliverInput): Promise<DeliverResult> {
    const attempt = Context.current().info.attempt;
    // one round trip for the delivery, its endpoint (fresh: rotated secrets apply) and its event
    const loaded = await repos.deliveries.loadAttempt(input.deliveryId);
    if (!loaded) {
      throw ApplicationFailure.nonRetryable(`delivery ${input.deliveryId} not found`, DELIVERY_FAILURE.missing);
    }
    const { delivery, endpoint, event } = loaded;
    // Idempotent: a settled delivery (an earlier attempt finished but its completion was lost).
    if (delivery.status !== 'PENDING') return { status: delivery.status };
    const log = { deliveryId: delivery.id, eventId: event.id, endpointId: endpoint.id, attempt };

    // A removed endpoint (deactivated row) is not called any more, even mid-retry.
    if (!endpoint.active) {
      const settled = await record(delivery.id, {
        status: 'FAILED',
        responseStatus: delivery.lastResponseStatus,
        responseBody: delivery.lastResponseBody,
        error: 'endpoint is no longer active',
        startedAt: new Date(),
        durationMs: null,
      });
      if (!settled) return currentStatus(delivery.id);
      logger.warn(log, 'delivery failed: endpoint deactivated');
      throw ApplicationFailure.nonRetryable('endpoint is no longer active', DELIVERY_FAILURE.permanent);
    }

    const startedAt = new Date();
    const outcome = await sendSafely(send, buildRequest(delivery, endpoint, event, attempt));
    metrics.deliveryAttempts.inc({ outcome: outcome.kind, status_class: outcome.statusClass });
    metrics.deliveryDuration.observe({ outcome: outcome.kind }, outcome.durationMs / 1000);
    const outcomeLog = { ...log, responseStatus: outcome.status, statusClass: outcome.statusClass, durationMs: Math.round(outcome.durationMs) };

    if (outcome.kind === 'success') {
      const settled = await record(delivery.id, {
        status: 'SUCCESS',
        responseStatus: outcome.status,
        responseBody: outcome.body,
        error: null,
        startedAt,
        durationMs: outcome.durationMs,
      });
      if (!settled) return currentStatus(delivery.id);
      // per-delivery success is debug: the event's outcome is logged once by finishEvent
      logger.debug(outcomeLog, 'delivery succeeded');
      return { status: 'SUCCESS' };
    }

    const lastAttempt = attempt >= input.maxAttempts;
    const final = outcome.kind === 'permanent' || lastAttempt;
    const settled = await record(delivery.id, {
      status: final ? 'FAILED' : 'PENDING',
      responseStatus: outcome.status,
      responseBody: outcome.body,
      error: outcome.error,
      startedAt,
      durationMs: outcome.durationMs,
    });
    if (!settled) return currentStatus(delivery.id);

    const details = [{ responseStatus: outcome.status, statusClass: outcome.statusClass }];
    if (final) {
      logger.warn({ ...outcomeLog, error: outcome.error }, 'delivery failed');
      throw ApplicationFailure.create({
        message: outcome.error,
        type: outcome.kind === 'permanent' ? DELIVERY_FAILURE.permanent : DELIVERY_FAILURE.exhausted,
        nonRetryable: true,
        details,
      });
    }
    logger.info({ ...outcomeLog, error: outcome.error }, 'delivery attempt failed, will retry');
    // Retry-After is a floor on the policy's own delay, capped so an endpoint can't park the run.
    const nextRetryDelay =
      outcome.retryAfterMs === undefined
        ? undefined
        : Math.min(Math.max(outcome.retryAfterMs, backoffDelayMs(backoff, attempt)), backoff.maximumIntervalMs);
    throw ApplicationFailure.create({
      message: outcome.error,
      type: DELIVERY_FAILURE.retryable,
      nonRetryable: false,
      details,
      ...(nextRetryDelay === undefined ? {} : { nextRetryDelay }),
    });
  };
}
