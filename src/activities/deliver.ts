import { ApplicationFailure, Context } from '@temporalio/activity';
import type { AttemptResult, Settled } from '../db/deliveries.js';
import type { DeliveryOutcome, OutboundRequest } from '../delivery/types.js';
import { ENDPOINT_DISABLED_ERROR, type Delivery, type Endpoint, type WebhookEvent } from '../domain/records.js';
import { describeError, isAppError } from '../domain/errors.js';
import { backoffDelayMs, type ActivityDeps, type ActivityLogger } from './deps.js';
import type { BackoffSettings, DeliverFailureDetails, DeliverInput, DeliverResult } from './types.js';
import { DELIVERY_FAILURE } from './failures.js';
import { createLimitGate } from './limit-gate.js';
import type { AttemptHandoff } from './attempt-handoff.js';
import type { RecordAttempt } from './attempt-recorder.js';
import { activeTraceCarrier, failed, inSpan, SpanKind, tracingOn } from '../observability/spans.js';

type DeliverDeps = Pick<ActivityDeps, 'repos' | 'send' | 'metrics'> & {
  logger: ActivityLogger;
  backoff: BackoffSettings;
  /** the rows prepare read, for a first attempt on this worker (attempt-handoff.ts) */
  handoff: AttemptHandoff;
  /** records an attempt's outcome, batched with those that end at the same time (attempt-recorder.ts) */
  recordAttempt: RecordAttempt;
};

/** The longest wait between retries after a database outage (the budget: workflows/names.ts DATABASE_RETRY_BUDGET). */
const DATABASE_RETRY_MAX_MS = 10_000;

/** How long a settled outcome (above all a 200) is retried for recording before giving up. */
const RECORD_RETRY_FOR_MS = 20_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An outage of a dependency (Postgres, classified where it arises): worth a retry that spends no attempt. */
const isTransient = (err: unknown): boolean => isAppError(err) && err.kind === 'transient';

/**
 * A transient database failure (database_unavailable, classified in db/db-errors.ts): retried by
 * Temporal like any retryable failure, but it spends no endpoint attempt, because the endpoint's
 * attempt number is the row's count of recorded attempts, not Temporal's attempt number.
 */
function databaseFailure(err: unknown, temporalAttempt: number): ApplicationFailure {
  return ApplicationFailure.create({
    message: `database unavailable: ${describeError(err)}`,
    type: DELIVERY_FAILURE.database,
    nonRetryable: false,
    nextRetryDelay: Math.min(500 * 2 ** Math.min(temporalAttempt, 10), DATABASE_RETRY_MAX_MS),
  });
}

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
 * One attempt as an HTTP client span (docs/tracing.md): the endpoint, the attempt number, the
 * status and the outcome; its context goes to the receiver as traceparent unless the endpoint
 * says no (spec.propagateTraceContext). The URL's path and query stay out: they may carry tokens.
 */
function sendInSpan(send: DeliverDeps['send'], req: OutboundRequest, endpoint: Endpoint): Promise<DeliveryOutcome> {
  let target: URL | undefined;
  try {
    target = new URL(req.url);
  } catch {
    // the sender refuses it with its own outcome
  }
  const attributes = {
    'http.request.method': req.method,
    ...(target
      ? {
          'server.address': target.hostname,
          'server.port': Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
          'url.scheme': target.protocol.replace(':', ''),
        }
      : {}),
    'webhook.endpoint': endpoint.name,
    'webhook.endpoint_id': endpoint.id,
    'webhook.delivery_id': req.meta.deliveryId,
    'webhook.event_id': req.meta.eventId,
    'webhook.attempt': req.meta.attempt,
  };
  return inSpan(req.method, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const outcome = await sendSafely(send, endpoint.propagateTraceContext ? { ...req, trace: activeTraceCarrier() } : req);
    span?.setAttributes({
      'webhook.outcome': outcome.kind,
      'webhook.status_class': outcome.statusClass,
      ...(outcome.status !== null ? { 'http.response.status_code': outcome.status } : {}),
    });
    if (outcome.kind !== 'success') failed(span, new Error(outcome.error));
    return outcome;
  });
}

/**
 * One attempt of one delivery. The endpoint is read on every attempt (the first one's by prepare,
 * a moment before) so a rotated secret or a changed URL applies to the next retry. The row records every attempt; Temporal's retry policy
 * (built from the endpoint's max_attempts) schedules the next one.
 */
export function createDeliver({ repos, send, metrics, logger, backoff, handoff, recordAttempt }: DeliverDeps) {
  // per-endpoint limits and Retry-After pauses (docs/limits.md): a wait spends no endpoint attempt
  const gate = createLimitGate({ limits: repos.endpointLimits, metrics, logger, maxPauseMs: backoff.maximumIntervalMs });

  /**
   * Records an attempt's outcome. Postgres may be down right after the endpoint answered: retry
   * in-process with backoff so a 200 is not re-sent by the next attempt, up to RECORD_RETRY_FOR_MS
   * (the activity's timeout leaves a 30 s margin). null when another run settled the row first;
   * then that run's status is what counts. Throws the last database error when time runs out.
   */
  async function record(id: string, r: AttemptResult, log: object): Promise<Settled | null> {
    const deadline = Date.now() + RECORD_RETRY_FOR_MS;
    for (let wait = 250; ; wait = Math.min(wait * 2, 4_000)) {
      try {
        return await recordAttempt(id, r);
      } catch (err) {
        // only an outage passes; any other error would fail the same way again
        if (!isTransient(err) || Date.now() + wait > deadline) {
          logger.warn(
            { ...log, outcome: r.status, err: describeError(err) },
            r.status === 'SUCCESS'
              ? 'delivery succeeded but could not be recorded; the next attempt re-sends it'
              : 'delivery attempt could not be recorded; the next attempt re-sends it',
          );
          throw err;
        }
        logger.info({ ...log, err: describeError(err) }, 'recording the delivery attempt failed; retrying');
        await sleep(wait);
      }
    }
  }

  async function currentStatus(id: string): Promise<DeliverResult> {
    const d = await repos.deliveries.get(id);
    if (!d) throw ApplicationFailure.nonRetryable(`delivery ${id} not found`, DELIVERY_FAILURE.missing);
    return { status: d.status };
  }

  return async function deliver(input: DeliverInput): Promise<DeliverResult> {
    const { attempt: temporalAttempt, isLocal } = Context.current().info;
    try {
      return await deliverOnce(input, temporalAttempt, isLocal);
    } catch (err) {
      // decided failures pass as they are; an outage spends no endpoint attempt
      if (err instanceof ApplicationFailure) throw err;
      if (isTransient(err)) throw databaseFailure(err, temporalAttempt);
      // permanent AppErrors are non-retryable at the activity boundary; the workflow settles the row
      if (isAppError(err) && err.kind === 'permanent') throw err;
      return spendAttemptOnInternalError(input, err);
    }
  };

  /**
   * A bug (an internal error, or anything nothing classified): logged with its stack, and it
   * spends one of the endpoint's attempts like a failed request, so a delivery that hits it on
   * every attempt ends FAILED (replayable once fixed) after its attempts instead of looping on
   * Temporal's retries. When even recording the attempt fails that way, the failure is final at
   * once: the workflow settles the row FAILED with the reason.
   */
  async function spendAttemptOnInternalError(input: DeliverInput, err: unknown): Promise<DeliverResult> {
    const error = `internal error: ${describeError(err)}`;
    const log = { deliveryId: input.deliveryId, code: isAppError(err) ? err.code : 'internal' };
    logger.error({ ...log, err }, 'internal error in the deliver activity; it spends an attempt');
    let settled: Settled | null;
    let attempt: number;
    let final: boolean;
    try {
      const delivery = await repos.deliveries.get(input.deliveryId);
      if (!delivery) throw ApplicationFailure.nonRetryable(`delivery ${input.deliveryId} not found`, DELIVERY_FAILURE.missing);
      if (delivery.status !== 'PENDING') return { status: delivery.status };
      attempt = delivery.attempts - Math.min(input.priorAttempts ?? 0, delivery.attempts) + 1;
      final = attempt >= input.maxAttempts;
      settled = await record(
        delivery.id,
        { status: final ? 'FAILED' : 'PENDING', responseStatus: null, responseBody: null, error, startedAt: new Date(), durationMs: null },
        { ...log, attempt },
      );
    } catch (recordErr) {
      if (recordErr instanceof ApplicationFailure) throw recordErr;
      if (isTransient(recordErr)) throw databaseFailure(recordErr, Context.current().info.attempt);
      logger.error({ ...log, err: recordErr }, 'the attempt of an internal error could not be recorded; the delivery fails');
      throw ApplicationFailure.create({ message: error, type: DELIVERY_FAILURE.internal, nonRetryable: true });
    }
    if (!settled) return currentStatus(input.deliveryId);
    if (final) throw ApplicationFailure.create({ message: error, type: DELIVERY_FAILURE.internal, nonRetryable: true });
    const retryDelayMs = backoffDelayMs(backoff, attempt);
    throw ApplicationFailure.create({
      message: error,
      type: DELIVERY_FAILURE.internal,
      nonRetryable: false,
      details: [{ responseStatus: null, statusClass: 'internal', retryDelayMs } satisfies DeliverFailureDetails],
      nextRetryDelay: retryDelayMs,
    });
  }

  /**
   * A delivery FAILED at once without a request (its endpoint removed or disabled): recorded as
   * an attempt that sent nothing, then a non-retryable failure; when another run settled it
   * first, its status.
   */
  async function failWithoutRequest(
    delivery: Delivery,
    why: Pick<AttemptResult, 'error' | 'responseStatus' | 'responseBody'> & {
      error: string;
      skipped: NonNullable<AttemptResult['skipped']>;
    },
    log: object,
    logged: () => void,
  ): Promise<DeliverResult> {
    const { error, skipped, responseStatus, responseBody } = why;
    const settled = await record(
      delivery.id,
      { status: 'FAILED', responseStatus, responseBody, error, startedAt: new Date(), durationMs: null, skipped },
      log,
    );
    if (!settled) return currentStatus(delivery.id);
    logged();
    throw ApplicationFailure.nonRetryable(error, DELIVERY_FAILURE.permanent);
  }

  /**
   * A disabled endpoint is not called (docs/endpoint-health.md): its new deliveries end FAILED at
   * once, not counted, and held to be redriven when the endpoint is enabled again.
   */
  function failDisabled(delivery: Delivery, log: object): Promise<DeliverResult> {
    return failWithoutRequest(
      delivery,
      { error: ENDPOINT_DISABLED_ERROR, skipped: 'endpoint_disabled', responseStatus: null, responseBody: null },
      log,
      () => logger.info(log, 'delivery failed at once: endpoint disabled; held for the redrive on enable'),
    );
  }

  function noteAutoDisabled(endpoint: Endpoint, log: object): void {
    metrics.endpointAutoDisables.inc({ endpoint: endpoint.name });
    logger.warn(
      { ...log, endpoint: endpoint.name, afterConsecutiveFailures: endpoint.autoDisableAfter },
      'endpoint auto-disabled: its deliveries fail at once and are held until it is enabled again',
    );
  }

  async function deliverOnce(input: DeliverInput, temporalAttempt: number, firstLocal: boolean): Promise<DeliverResult> {
    // the first attempt (the local activity, right after prepare) takes the rows prepare read; a retry reads
    // the delivery, its endpoint (fresh: rotated secrets apply) and its event in one round trip
    const loaded = (firstLocal ? handoff.take(input.deliveryId) : undefined) ?? (await repos.deliveries.loadAttempt(input.deliveryId));
    if (!loaded) {
      throw ApplicationFailure.nonRetryable(`delivery ${input.deliveryId} not found`, DELIVERY_FAILURE.missing);
    }
    const { delivery, endpoint, event } = loaded;
    // Idempotent: a settled delivery (an earlier attempt finished but its completion was lost).
    if (delivery.status !== 'PENDING') return { status: delivery.status };
    // The endpoint's attempt number in this run: attempts recorded since the run began + 1.
    // Temporal's attempt also counts retries after database failures, which must not spend the
    // endpoint's attempts; a replay run starts again at 1 on a row that has earlier attempts.
    const attempt = delivery.attempts - Math.min(input.priorAttempts ?? 0, delivery.attempts) + 1;
    const log = { deliveryId: delivery.id, eventId: event.id, endpointId: endpoint.id, attempt, temporalAttempt };

    // A removed endpoint (deactivated row) is not called any more, even mid-retry.
    if (!endpoint.active) {
      return failWithoutRequest(
        delivery,
        {
          error: 'endpoint is no longer active',
          skipped: 'endpoint_inactive',
          responseStatus: delivery.lastResponseStatus,
          responseBody: delivery.lastResponseBody,
        },
        log,
        () => logger.warn(log, 'delivery failed: endpoint deactivated'),
      );
    }
    if (endpoint.disabledAt !== null) return failDisabled(delivery, log);

    const release = await gate.enter(endpoint, delivery.id, log);
    const startedAt = new Date();
    const request = buildRequest(delivery, endpoint, event, attempt);
    const outcome = await (tracingOn() ? sendInSpan(send, request, endpoint) : sendSafely(send, request));
    await Promise.all([release?.(outcome.durationMs), gate.afterAnswer(endpoint, outcome, log)]);
    metrics.deliveryAttempts.inc({ outcome: outcome.kind, status_class: outcome.statusClass });
    metrics.endpointAttempts.inc({ endpoint: endpoint.name, outcome: outcome.kind });
    metrics.deliveryDuration.observe({ outcome: outcome.kind }, outcome.durationMs / 1000);
    const outcomeLog = {
      ...log,
      responseStatus: outcome.status,
      statusClass: outcome.statusClass,
      durationMs: Math.round(outcome.durationMs),
    };

    if (outcome.kind === 'success') {
      const settled = await record(
        delivery.id,
        {
          status: 'SUCCESS',
          responseStatus: outcome.status,
          responseBody: outcome.body,
          error: null,
          startedAt,
          durationMs: outcome.durationMs,
        },
        outcomeLog,
      );
      if (!settled) return currentStatus(delivery.id);
      // per-delivery success is debug: the event's outcome is logged once by finishEvent
      logger.debug(outcomeLog, 'delivery succeeded');
      return { status: 'SUCCESS' };
    }

    const lastAttempt = attempt >= input.maxAttempts;
    const final = outcome.kind === 'permanent' || lastAttempt;
    const settled = await record(
      delivery.id,
      {
        status: final ? 'FAILED' : 'PENDING',
        responseStatus: outcome.status,
        responseBody: outcome.body,
        error: outcome.error,
        startedAt,
        durationMs: outcome.durationMs,
      },
      outcomeLog,
    );
    if (!settled) return currentStatus(delivery.id);
    if (settled.autoDisabled) noteAutoDisabled(endpoint, outcomeLog);

    const details: DeliverFailureDetails[] = [{ responseStatus: outcome.status, statusClass: outcome.statusClass }];
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
    // The delay follows the endpoint's attempt number (Temporal's own backoff would follow its
    // attempt number, database retries included). Retry-After is a floor on it, capped so an
    // endpoint can't park the run.
    const delay = backoffDelayMs(backoff, attempt);
    const nextRetryDelay =
      outcome.retryAfterMs === undefined ? delay : Math.min(Math.max(outcome.retryAfterMs, delay), backoff.maximumIntervalMs);
    throw ApplicationFailure.create({
      message: outcome.error,
      type: DELIVERY_FAILURE.retryable,
      nonRetryable: false,
      // the workflow reads the delay from the details after a local first attempt
      details: details.map((d) => ({ ...d, retryDelayMs: nextRetryDelay })),
      nextRetryDelay,
    });
  }
}
