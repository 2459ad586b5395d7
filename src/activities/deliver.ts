import { Context } from '@temporalio/activity';
import type { AttemptResult } from '../db/deliveries.js';
import { invalidRequest, type DeliveryOutcome } from '../delivery/types.js';
import { spanTargetOf, targetOf, type DestinationTarget, type SendOptions } from '../delivery/destination.js';
import { messageOf, type Message } from '../delivery/message.js';
import { ENDPOINT_DISABLED_ERROR, REVOKED_ERROR, type Delivery, type Endpoint, type WebhookEvent } from '../domain/records.js';
import { describeError, isAppError } from '../domain/errors.js';
import { inAttemptSpan } from '../observability/attempt-span.js';
import { backoffDelayMs, type ActivityDeps, type ActivityLogger } from './deps.js';
import type { DeliverInput, DeliverResult } from './types.js';
import type { BackoffSettings } from '../config/settings.js';
import {
  deliveryDatabaseUnavailable,
  deliveryNotFound,
  finalDeliveryFailure,
  unrecordedDeliveryFailure,
  isDecidedFailure,
  retryableDeliveryFailure,
} from './failures.js';
import { createLimitGate } from './limit-gate.js';
import { createProxyWait } from './proxy-wait.js';
import { createTokenWait } from './token-wait.js';
import type { AttemptHandoff } from './attempt-handoff.js';
import { createPatientRecorder, type RecordAttempt } from './attempt-recorder.js';
import { contentEvent } from '../content/event-view.js';
import type { ExpressionCache } from '../content/expression-cache.js';
import { formatExpressionError } from '../content/filter.js';

type DeliverDeps = Pick<ActivityDeps, 'repos' | 'destinations' | 'metrics'> & {
  logger: ActivityLogger;
  backoff: BackoffSettings;
  /** the rows prepare read, for a first attempt on this worker (attempt-handoff.ts) */
  handoff: AttemptHandoff;
  /** records an attempt's outcome, batched with those that end at the same time (attempt-recorder.ts) */
  recordAttempt: RecordAttempt;
  /** compiled transforms (spec.transform.jsonata) by text */
  expressions: ExpressionCache;
};

/** An outage of a dependency (Postgres, classified where it arises): worth a retry that spends no attempt. */
const isTransient = (err: unknown): boolean => isAppError(err) && err.kind === 'transient';

/** A reason a delivery ends FAILED at once, without a request (failsAtOnce below). */
interface FailsAtOnce {
  /** the attempt's last_error */
  error: string;
  /** recorded on the attempt: whether it counts towards auto-disable and is held for a redrive (db/deliveries.ts); absent: it counts */
  skipped?: AttemptResult['skipped'];
  /** the answer the row keeps: the last one it had, or none */
  keepLastResponse: boolean;
  note: (logger: ActivityLogger, log: object) => void;
}

/**
 * The reasons a delivery ends FAILED at once, without a request, checked before every attempt in
 * this order: a new reason is one more entry here, with its `skipped` value in db/deliveries.ts.
 */
function failsAtOnce(endpoint: Endpoint): FailsAtOnce | undefined {
  // a removed endpoint (deactivated row) is not called any more, even mid-retry
  if (!endpoint.active) {
    return {
      error: 'endpoint is no longer active',
      skipped: 'endpoint_inactive',
      keepLastResponse: true,
      note: (logger, log) => logger.warn(log, 'delivery failed: endpoint deactivated'),
    };
  }
  // an endpoint its source no longer allows (docs/tenancy.md): revoked, nothing more is sent to it;
  // checked before disabled, so a revoked delivery is not held for a redrive
  if (endpoint.deniedReason !== null) {
    const reason = endpoint.deniedReason;
    return {
      error: `${REVOKED_ERROR} (${reason})`,
      skipped: 'endpoint_not_allowed',
      keepLastResponse: true,
      note: (logger, log) => logger.warn({ ...log, reason }, 'delivery failed: revoked, the endpoint is no longer allowed by its source'),
    };
  }
  // a disabled endpoint is not called (docs/endpoint-health.md): held to be redriven when enabled again
  if (endpoint.disabledAt !== null) {
    return {
      error: ENDPOINT_DISABLED_ERROR,
      skipped: 'endpoint_disabled',
      keepLastResponse: false,
      note: (logger, log) => logger.info(log, 'delivery failed at once: endpoint disabled; held for the redrive on enable'),
    };
  }
  return undefined;
}

/** What an attempt sends before its format: the stored payload, or what the endpoint's transform made of it. */
interface Body {
  body: Buffer;
  contentType: string | null;
  /** true: a transform made it (the attempt log records what was sent) */
  transformed: boolean;
}

/** A destination's contract is to return an outcome; a throw is a bug, handled as a retryable failure. */
async function sendSafely(
  destinations: DeliverDeps['destinations'],
  message: Message,
  target: DestinationTarget,
  options: SendOptions,
): Promise<DeliveryOutcome> {
  const started = performance.now();
  try {
    return await destinations.send(message, target, options);
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

/** The attempt's message, or the reason it can not be built (a signing type without its key): an invalid request, final. */
function tryMessage(build: () => Message): Message | { invalid: DeliveryOutcome } {
  try {
    return build();
  } catch (err) {
    if (isAppError(err) && err.kind === 'permanent') return { invalid: invalidRequest(err.message) };
    throw err;
  }
}

/**
 * The endpoint's attempt number in this run: attempts recorded since the run began + 1. Temporal's
 * attempt also counts retries after database failures, which must not spend the endpoint's
 * attempts; a replay run starts again at 1 on a row that has earlier attempts.
 */
const attemptOf = (delivery: Delivery, input: DeliverInput): number =>
  delivery.attempts - Math.min(input.priorAttempts ?? 0, delivery.attempts) + 1;

/**
 * A handed-off attempt's last word before its request (docs/ordering.md, "The handoff"): whether
 * the claim is still this attempt's, its lease renewed to cover a request of the endpoint's
 * timeout (false: the request is not made, the delivery stays its run's).
 */
export type KeepsClaim = (timeoutSeconds: number) => Promise<boolean>;

/**
 * One attempt of one delivery. The endpoint is read on every attempt (the first one's by prepare,
 * a moment before) so a rotated secret or a changed URL applies to the next retry. The row records
 * every attempt; Temporal's retry policy (built from the endpoint's max_attempts) schedules the next
 * one. Every failure it raises is built by failures.ts.
 */
export function createDeliver({ repos, destinations, metrics, logger, backoff, handoff, recordAttempt, expressions }: DeliverDeps) {
  // per-endpoint limits and Retry-After pauses (docs/limits.md): a wait spends no endpoint attempt
  const gate = createLimitGate({ limits: repos.endpointLimits, metrics, logger, maxPauseMs: backoff.maximumIntervalMs });
  const record = createPatientRecorder({ recordAttempt, logger });
  // the forward proxy failed: the installation's failure, not the endpoint's (no attempt spent)
  const proxyWait = createProxyWait({ metrics, logger, backoff });
  // an OAuth2 endpoint's token endpoint failed or refused our credentials: waits too (no attempt spent)
  const tokenWait = createTokenWait({ metrics, endpoints: repos.endpoints, logger, backoff });

  /** When another run settled the row first, its status is what counts. */
  async function currentStatus(id: string): Promise<DeliverResult> {
    const d = await repos.deliveries.get(id);
    if (!d) throw deliveryNotFound(id);
    return { status: d.status };
  }

  async function runAttempt(
    input: DeliverInput,
    temporalAttempt: number,
    firstLocal: boolean,
    waits: boolean,
    keepsClaim?: KeepsClaim,
  ): Promise<DeliverResult> {
    try {
      return await deliverOnce(input, temporalAttempt, firstLocal, waits, keepsClaim);
    } catch (err) {
      // decided failures pass as they are; an outage spends no endpoint attempt
      if (isDecidedFailure(err)) throw err;
      if (isTransient(err)) throw deliveryDatabaseUnavailable(err, temporalAttempt);
      // permanent AppErrors are non-retryable at the activity boundary; the workflow settles the row
      if (isAppError(err) && err.kind === 'permanent') throw err;
      return spendAttemptOnInternalError(input, err, keepsClaim !== undefined);
    }
  }

  return {
    /** The deliver activity. */
    deliver(input: DeliverInput): Promise<DeliverResult> {
      const { attempt: temporalAttempt, isLocal } = Context.current().info;
      return runAttempt(input, temporalAttempt, isLocal, true);
    },
    /**
     * An ordered key's handoff (docs/ordering.md, "The handoff"): the first attempt of a delivery
     * that the activity releasing its key claimed, made by this same code (the rows read fresh,
     * the limits, the transforms, the signature, the attempt log, the metrics, the span). It
     * throws what the activity throws; a limit that would wait defers at once instead, and the
     * delivery goes back to its own run.
     */
    handedOff(input: DeliverInput, keepsClaim: KeepsClaim): Promise<DeliverResult> {
      return runAttempt(input, 1, false, false, keepsClaim);
    },
  };

  /**
   * A bug (an internal error, or anything nothing classified): logged with its stack, and it
   * spends one of the endpoint's attempts like a failed request, so a delivery that hits it on
   * every attempt ends FAILED (replayable once fixed) after its attempts instead of looping on
   * Temporal's retries. When even recording the attempt fails that way, the failure is final at
   * once: the workflow settles the row FAILED with the reason.
   */
  async function spendAttemptOnInternalError(input: DeliverInput, err: unknown, handedOff: boolean): Promise<DeliverResult> {
    const error = `internal error: ${describeError(err)}`;
    const log = { deliveryId: input.deliveryId, code: isAppError(err) ? err.code : 'internal' };
    logger.error({ ...log, err }, 'internal error in the deliver activity; it spends an attempt');
    const delivery = await repos.deliveries
      .get(input.deliveryId)
      .catch((readErr: unknown) => failRecordingInternalError(readErr, error, log));
    if (!delivery) throw deliveryNotFound(input.deliveryId);
    if (delivery.status !== 'PENDING') return { status: delivery.status };
    return spendAttempt(delivery, attemptOf(delivery, input), input.maxAttempts, error, log, {
      code: 'delivery_internal_error',
      statusClass: 'internal',
      recordFailed: (recordErr) => failRecordingInternalError(recordErr, error, log),
      handedOff,
    });
  }

  /**
   * An attempt that sent no request but spends one of the endpoint's attempts (an internal error;
   * a transform past its time limit): recorded, then retried with the backoff, or FAILED when it
   * was the last, so one that never passes ends like a failing endpoint.
   */
  async function spendAttempt(
    delivery: Delivery,
    attempt: number,
    maxAttempts: number,
    error: string,
    log: object,
    how: {
      code: 'delivery_attempt_failed' | 'delivery_internal_error';
      statusClass: string;
      recordFailed?: (err: unknown) => never;
      /** an ordered key's handoff: its retry's time goes into the row with the attempt (below) */
      handedOff: boolean;
    },
  ): Promise<DeliverResult> {
    const final = attempt >= maxAttempts;
    const retryDelayMs = backoffDelayMs(backoff, attempt);
    const result = {
      responseStatus: null,
      responseBody: null,
      error,
      startedAt: new Date(),
      durationMs: null,
      ...(how.handedOff && !final ? { handoffRetryMs: retryDelayMs } : {}),
    };
    const recording = record(delivery.id, { ...result, status: final ? 'FAILED' : 'PENDING' }, { ...log, attempt });
    const settled = await (how.recordFailed ? recording.catch(how.recordFailed) : recording);
    if (!settled) return currentStatus(delivery.id);
    const answer = { responseStatus: null, statusClass: how.statusClass };
    if (final) throw finalDeliveryFailure(how.code === 'delivery_internal_error' ? how.code : 'delivery_attempts_exhausted', error, answer);
    throw retryableDeliveryFailure(how.code, error, answer, retryDelayMs);
  }

  /** The attempt of an internal error could not be recorded: an outage is retried, anything else is final. */
  function failRecordingInternalError(err: unknown, error: string, log: object): never {
    if (isTransient(err)) throw deliveryDatabaseUnavailable(err, Context.current().info.attempt);
    logger.error({ ...log, err }, 'the attempt of an internal error could not be recorded; the delivery fails');
    throw unrecordedDeliveryFailure('delivery_internal_error', error);
  }

  /** Records an attempt that sent nothing, then a final failure; when another run settled it first, its status. */
  async function failWithoutRequest(delivery: Delivery, why: FailsAtOnce, log: object): Promise<DeliverResult> {
    const settled = await record(
      delivery.id,
      {
        status: 'FAILED',
        responseStatus: why.keepLastResponse ? delivery.lastResponseStatus : null,
        responseBody: why.keepLastResponse ? delivery.lastResponseBody : null,
        error: why.error,
        startedAt: new Date(),
        durationMs: null,
        skipped: why.skipped,
      },
      log,
    );
    if (!settled) return currentStatus(delivery.id);
    why.note(logger, log);
    throw finalDeliveryFailure('delivery_rejected', why.error);
  }

  /**
   * The body of this attempt (docs/content-routing.md): the endpoint's transform as it is now (a
   * replay sends what the current one makes), over the stored event. A failure is the same for the
   * same input every time: the delivery ends FAILED at once with the reason, not retried; only
   * running past the time limit (wall-clock) is retried as a spent attempt.
   */
  async function bodyOf(endpoint: Endpoint, event: WebhookEvent): Promise<Body | FailsAtOnce | { retryable: string }> {
    if (endpoint.transform === null) return { body: event.payload, contentType: event.contentType, transformed: false };
    const compiled = expressions.transform(endpoint.transform);
    const out = compiled.ok
      ? await compiled.value.apply(contentEvent(event))
      : { error: `transform does not compile: ${formatExpressionError(compiled.error)}` };
    if ('body' in out) return { body: out.body, contentType: 'application/json', transformed: true };
    if ('retryable' in out) return { retryable: out.error };
    return {
      error: out.error,
      keepLastResponse: false,
      note: (l, log) =>
        l.warn({ ...log, error: out.error }, "delivery failed at once: the endpoint's transform failed (fix it, then replay)"),
    };
  }

  async function deliverOnce(
    input: DeliverInput,
    temporalAttempt: number,
    firstLocal: boolean,
    waits: boolean,
    keepsClaim?: KeepsClaim,
  ): Promise<DeliverResult> {
    // the first attempt (the local activity, right after prepare) takes the rows prepare read; a retry reads
    // the delivery, its endpoint (fresh: rotated secrets apply) and its event in one round trip
    const loaded = (firstLocal ? handoff.take(input.deliveryId) : undefined) ?? (await repos.deliveries.loadAttempt(input.deliveryId));
    if (!loaded) throw deliveryNotFound(input.deliveryId);
    const { delivery, endpoint, event } = loaded;
    // Idempotent: a settled delivery (an earlier attempt finished but its completion was lost).
    if (delivery.status !== 'PENDING') return { status: delivery.status };
    const attempt = attemptOf(delivery, input);
    const log = { deliveryId: delivery.id, eventId: event.id, endpointId: endpoint.id, attempt, temporalAttempt };

    const atOnce = failsAtOnce(endpoint);
    if (atOnce) return failWithoutRequest(delivery, atOnce, log);

    const shaped = await bodyOf(endpoint, event);
    if ('retryable' in shaped) {
      logger.warn({ ...log, error: shaped.retryable }, 'delivery attempt failed without a request: the transform ran out of time');
      return spendAttempt(delivery, attempt, input.maxAttempts, shaped.retryable, log, {
        code: 'delivery_attempt_failed',
        statusClass: 'timeout',
        handedOff: keepsClaim !== undefined,
      });
    }
    if ('error' in shaped) return failWithoutRequest(delivery, shaped, log);

    const release = await gate.enter(endpoint, delivery.id, log, waits);
    // a handed-off attempt sends only while its claim is still its own, renewed for this request's
    // timeout: a claim whose lease ran out meanwhile (a stall before this point) may have gone back
    // to the delivery's run, which sends it itself; two requests of one key at once otherwise
    if (keepsClaim && !(await keepsClaim(endpoint.timeoutSeconds))) {
      await release?.(0);
      logger.debug(log, 'ordered delivery: the handoff lost its claim before the request; its run sends it');
      return { status: 'PENDING' };
    }
    const startedAt = new Date();
    // the message is built once, whatever the destination: the endpoint's format (Raw or a CloudEvent)
    // shapes the body, the transform's when it has one; the signatures are over what is sent
    const message = tryMessage(() => messageOf(delivery, endpoint, event, attempt, shaped.transformed ? shaped : undefined));
    const target = targetOf(endpoint);
    const spanTarget = spanTargetOf(target);
    const outcome =
      'invalid' in message
        ? message.invalid
        : await inAttemptSpan(
            {
              method: spanTarget.operation,
              url: spanTarget.address,
              endpointName: endpoint.name,
              endpointId: endpoint.id,
              deliveryId: delivery.id,
              eventId: event.id,
              attempt,
              propagate: endpoint.propagateTraceContext,
            },
            (trace) =>
              sendSafely(destinations, trace ? { ...message, trace } : message, target, { timeoutMs: endpoint.timeoutSeconds * 1000 }),
          );
    if (outcome.kind === 'deferred') {
      await release?.(outcome.durationMs);
      if (outcome.cause === 'token') return tokenWait.wait(endpoint, outcome, temporalAttempt, log);
      // a token fetched before the proxy failed the receiver's request: the token endpoint answered
      if (outcome.tokenAnswer) await tokenWait.answered(endpoint, outcome.tokenAnswer, log);
      return proxyWait(endpoint, outcome, temporalAttempt, log);
    }
    // an OAuth2 endpoint's token endpoint answered this attempt (a token, or a refusal of the request)
    if (outcome.tokenAnswer) await tokenWait.answered(endpoint, outcome.tokenAnswer, log);
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
    const answer = {
      responseStatus: outcome.status,
      responseBody: outcome.body,
      startedAt,
      durationMs: outcome.durationMs,
      ...(shaped.transformed && !('invalid' in message) ? { requestBody: message.body.toString('utf8') } : {}),
    };

    if (outcome.kind === 'success') {
      const settled = await record(
        delivery.id,
        { ...answer, status: 'SUCCESS', error: null, receipt: outcome.receipt ?? null },
        outcomeLog,
      );
      if (!settled) return currentStatus(delivery.id);
      // per-delivery success is debug: the event's outcome is logged once by finishEvent
      logger.debug(outcomeLog, 'delivery succeeded');
      return { status: 'SUCCESS' };
    }

    const final = outcome.kind === 'permanent' || attempt >= input.maxAttempts;
    // The delay follows the endpoint's attempt number (Temporal's own backoff would follow its
    // attempt number, database retries included). Retry-After is a floor on it, capped so an
    // endpoint can't park the run.
    const delay = backoffDelayMs(backoff, attempt);
    const retryDelayMs =
      outcome.retryAfterMs === undefined ? delay : Math.min(Math.max(outcome.retryAfterMs, delay), backoff.maximumIntervalMs);
    // a handed-off attempt's retry time goes into its row with the attempt: should the chain's
    // 'retry' be lost after it, the release that finds it keeps the floor (docs/ordering.md)
    const handoffRetry = keepsClaim && !final ? { handoffRetryMs: retryDelayMs } : {};
    const settled = await record(
      delivery.id,
      { ...answer, status: final ? 'FAILED' : 'PENDING', error: outcome.error, ...handoffRetry },
      outcomeLog,
    );
    if (!settled) return currentStatus(delivery.id);
    if (settled.autoDisabled) {
      metrics.endpointAutoDisables.inc({ endpoint: endpoint.name });
      logger.warn(
        { ...outcomeLog, endpoint: endpoint.name, afterConsecutiveFailures: endpoint.autoDisableAfter },
        'endpoint auto-disabled: its deliveries fail at once and are held until it is enabled again',
      );
    }

    const details = { responseStatus: outcome.status, statusClass: outcome.statusClass };
    if (final) {
      logger.warn({ ...outcomeLog, error: outcome.error }, 'delivery failed');
      const code = outcome.kind === 'permanent' ? 'delivery_rejected' : 'delivery_attempts_exhausted';
      throw finalDeliveryFailure(code, outcome.error, details);
    }
    logger.info({ ...outcomeLog, error: outcome.error }, 'delivery attempt failed, will retry');
    throw retryableDeliveryFailure('delivery_attempt_failed', outcome.error, details, retryDelayMs);
  }
}
