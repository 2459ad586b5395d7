import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ActivityDeps, ActivityLogger } from './deps.js';
import { failureTypeOf } from './failures.js';
import { countFinished, settleUnsettled } from './finish-event.js';
import type {
  DeliverFailureDetails,
  DeliverInput,
  DeliverResult,
  OrderingReleaseInput,
  OrderingReleaseResult,
  OrderingTurnInput,
  OrderingTurnResult,
  OrderingWait,
  OrderingWake,
} from './types.js';
import type { Claim, HandoffEnd, HandoffOptions, Release, SequenceJudge, Turn } from '../db/ordering.js';
import { describeError } from '../domain/errors.js';
import type { KeepsClaim } from './deliver.js';

type OrderingDeps = Pick<ActivityDeps, 'repos' | 'metrics' | 'signalTurn'> & { logger: ActivityLogger };

/** A claimed delivery's attempt, by the deliver activity's own code (deliver.ts handedOff). */
export type HandedOffAttempt = (input: DeliverInput, keepsClaim: KeepsClaim) => Promise<DeliverResult>;

/**
 * A claim's lease beyond the endpoint's timeout: the rows read before the request and the attempt
 * recorded after it. A worker lost mid-handoff holds the key this long past the timeout, then the
 * waker (ORDERING_STALLED_AFTER_SECONDS, its interval) gives the delivery back to its run.
 */
export const HANDOFF_LEASE_MARGIN_MS = 10_000;
/**
 * The longest lease a handoff takes: a worker lost mid-handoff must not hold the key over issue
 * 41's 30 s, and the waker's pass (5 s) comes on top of the lease. An endpoint whose timeout plus
 * the margin is longer (a timeout over 15 s) is not handed off: its deliveries are woken by a
 * signal, as with ORDERING_HANDOFF=false.
 */
export const HANDOFF_MAX_LEASE_MS = 25_000;

/** The lease a handed-off attempt holds for a request of the endpoint's timeout; undefined: over HANDOFF_MAX_LEASE_MS. */
export function handoffLeaseMs(timeoutSeconds: number): number | undefined {
  const lease = timeoutSeconds * 1000 + HANDOFF_LEASE_MARGIN_MS;
  return lease <= HANDOFF_MAX_LEASE_MS ? lease : undefined;
}
/**
 * A chain of handoffs stops after this many deliveries, or once it has run this long, and
 * signals the next run as before (whose own release starts a chain again): the releasing run's
 * workflow task waits for its local activity, and beyond Temporal's workflow task timeout (10 s)
 * the SDK heartbeats the task (more history).
 */
export const HANDOFF_CHAIN = { maxDeliveries: 50, maxMs: 4_000 } as const;

/** The workflow's side of a turn check: go, or wait for a signal or a timer. */
export const waitOf = (t: Turn): OrderingWait => (t.turn === 'go' ? 'go' : t.wake);

/** The id of the run this activity belongs to: the waiter a turn check records. */
export const runningWorkflowId = (fallback: string): string => Context.current().info.workflowExecution?.workflowId ?? fallback;

/**
 * Asks Postgres whether an ordered delivery's turn has come (db/ordering.ts), after a signal or a
 * timer woke its run; a delivery whose turn has not come is recorded as waiting again.
 */
export function createOrderingTurn({ repos, logger, judge }: OrderingDeps & { judge: SequenceJudge }) {
  return async function orderingTurn(input: OrderingTurnInput): Promise<OrderingTurnResult> {
    const turn = await repos.ordering.turn(input.deliveryId, runningWorkflowId(input.deliveryId), judge, input.takesHandoff === true);
    logger.debug(
      { deliveryId: input.deliveryId, turn },
      turn.turn === 'go' ? 'ordered delivery: its turn' : 'ordered delivery waits for its turn',
    );
    return turn.turn === 'go' && turn.handedOff !== undefined ? { turn: 'go', handedOff: turn.handedOff } : { turn: waitOf(turn) };
  };
}

/**
 * The deliver activity of an ordered delivery whose run lets it release the key
 * (DeliverInput.releases): after a SUCCESS with nothing behind it to wake or claim (most
 * deliveries, with many keys) the release is one statement here (db/ordering.ts
 * releaseQuietly), and the run skips its orderingRelease local activity, a round trip between the
 * workflow and the activity and a marker in its history (issue 41's cost). Anything else, and a
 * release that fails here, is left to orderingRelease as before (the row's SUCCESS is recorded).
 */
export function releasingDeliver(
  deliver: (input: DeliverInput) => Promise<DeliverResult>,
  { repos, logger }: Pick<OrderingDeps, 'repos' | 'logger'>,
): (input: DeliverInput) => Promise<DeliverResult> {
  return async (input) => {
    const result = await deliver(input);
    if (input.releases !== true || result.status !== 'SUCCESS') return result;
    try {
      return (await repos.ordering.releaseQuietly(input.deliveryId)) ? { ...result, released: true } : result;
    } catch (err) {
      logger.debug({ deliveryId: input.deliveryId, err: describeError(err) }, 'ordered delivery: its run releases it');
      return result;
    }
  };
}

/**
 * What a handed-off attempt did: ended its delivery (SUCCESS, or FAILED written by the activity),
 * failed and is retried by the run (an attempt recorded, its delay decided by the activity), or
 * nothing the run should not do again itself (a limit or a wait deferred it, the database failed,
 * a failure the workflow would settle): then the delivery goes back to its run as it was.
 */
export function handoffEndOf(outcome: { result: DeliverResult } | { err: unknown }): HandoffEnd {
  if ('result' in outcome) return outcome.result.status === 'PENDING' ? 'dropped' : 'ended';
  const { err } = outcome;
  if (!(err instanceof ApplicationFailure)) return 'dropped';
  const details = err.details?.[0] as Partial<DeliverFailureDetails> | undefined;
  if (details?.rowSettled === true) return 'ended';
  const recorded = err.type === failureTypeOf('delivery_attempt_failed') || err.type === failureTypeOf('delivery_internal_error');
  if (recorded && !err.nonRetryable && typeof details?.retryDelayMs === 'number') return { retryInMs: details.retryDelayMs };
  return 'dropped';
}

/**
 * After an ordered delivery ended: settles it when its activity could not (as finishEvent
 * would, so the key is not held by a row no run settles), marks whether it released its key, and
 * wakes the run waiting behind it. A FAILED delivery that holds its key under Block is logged: the
 * key is blocked until it is replayed or skipped.
 *
 * The wake-up is signalled from here, at once. Left to the workflow (a command of its history),
 * the signal went out only when the workflow task completed, after finishEvent, and then through
 * the server's transfer queue: most of a key's hop from one delivery to the next (docs/ordering.md,
 * "How fast a key moves"). Sent, it is in the waiting run's history (durable); when it can not be
 * sent, the wake-up is returned and the workflow sends it. The same number of signals either way.
 */
export function createOrderingRelease(
  deps: OrderingDeps & {
    judge: SequenceJudge;
    handedOff?: HandedOffAttempt;
    draining?: () => boolean;
    /**
     * the delay after a delivery's first attempt (the endpoint's backoff): a handed-off attempt is
     * always its row's first, and a release that finds its failure's 'retry' not written (the
     * chain's handoffEnd failed) leaves it to its run's retry after this (db/ordering.ts strandedAfter)
     */
    firstRetryMs?: number;
  },
) {
  const { repos, logger } = deps;

  function noteHeld(deliveryId: string, released: Release): void {
    if (!released.holds) return;
    // ordering.key_blocked (issue 41): the operational event goes here once the outbox exists
    logger.warn(
      { deliveryId, endpointId: released.endpointId },
      'ordering key blocked: a FAILED delivery holds its key until it is replayed or skipped (docs/ordering.md)',
    );
  }

  /** An event the end of a delivery left to its key's chain finished: counted as finishEvent counts it. */
  function noteFinished({ eventId, event }: NonNullable<Release['finished']>): void {
    if (event !== undefined && event !== 'pending') countFinished({ metrics: deps.metrics, logger, now: Date.now }, eventId, event);
  }

  /** The handed-off attempt of a claimed delivery, and what it did. */
  async function attempt(claimed: Claim, attemptOf: HandedOffAttempt): Promise<HandoffEnd> {
    const input: DeliverInput = { deliveryId: claimed.deliveryId, maxAttempts: claimed.maxAttempts, priorAttempts: 0 };
    // right before the request: the claim still this activity's, its lease renewed for the
    // endpoint's timeout as read for this attempt (it may have changed since the claim)
    const keepsClaim: KeepsClaim = async (timeoutSeconds) => {
      const leaseMs = handoffLeaseMs(timeoutSeconds);
      return leaseMs !== undefined && (await repos.ordering.renewClaim(claimed.deliveryId, leaseMs));
    };
    const end = handoffEndOf(
      await attemptOf(input, keepsClaim).then(
        (result) => ({ result }),
        (err: unknown) => ({ err }),
      ),
    );
    deps.metrics.orderingHandoffs.inc({ outcome: typeof end === 'string' ? end : 'retry' });
    logger.debug({ deliveryId: claimed.deliveryId, end }, 'ordered delivery: attempt handed off');
    return end;
  }

  return async function orderingRelease(input: OrderingReleaseInput): Promise<OrderingReleaseResult> {
    if (input.unsettled !== undefined) await settleUnsettled(deps, { deliveryId: input.deliveryId, reason: input.unsettled });
    const self = runningWorkflowId(input.deliveryId);
    const started = Date.now();
    const { info, cancellationSignal } = Context.current();
    const { startToCloseTimeoutMs } = info;
    let handed = 0;
    const handoff: HandoffOptions | undefined = deps.handedOff && {
      judge: deps.judge,
      leaseMarginMs: HANDOFF_LEASE_MARGIN_MS,
      workflowId: self,
      // the chain's bound, and the time this activity has left for one more attempt and its lease
      mayAttempt: (timeoutSeconds) => {
        const elapsed = Date.now() - started;
        // a worker that drains (or an activity cancelled) claims nothing more: the drain waits for
        // the attempt in hand, and the next delivery is signalled to its run as without a handoff
        if (deps.draining?.() === true || cancellationSignal.aborted) return false;
        return (
          handoffLeaseMs(timeoutSeconds) !== undefined &&
          handed < HANDOFF_CHAIN.maxDeliveries &&
          elapsed < HANDOFF_CHAIN.maxMs &&
          startToCloseTimeoutMs - elapsed > timeoutSeconds * 1000 + HANDOFF_LEASE_MARGIN_MS
        );
      },
    };
    // each run whose delivery was handed off is signalled once its row says how it went; a signal
    // not sent is left to the workflow (wakes), and to the waker should this worker be lost
    const unsent: OrderingWake[] = [];
    const signals: Array<Promise<void>> = [];
    const signal = (wake: OrderingWake) => {
      if (!deps.signalTurn) {
        unsent.push(wake);
        return;
      }
      signals.push(
        deps.signalTurn(wake).catch((err: unknown) => {
          logger.debug({ wake, err: describeError(err) }, 'ordered delivery: the workflow signals the handed-off one');
          unsent.push(wake);
        }),
      );
    };
    /**
     * A release's outcome: its blocked key logged; a delivery it ended for a chain whose own
     * release failed (adopted: this activity retried) told as that release would have told it, and
     * one whose failed attempt's handoffEnd failed (adopted, retried) told as after handoffEnd.
     */
    const settle = (deliveryId: string, r: Release): Release => {
      noteHeld(r.adopted?.deliveryId ?? deliveryId, r);
      if (r.adopted?.finished) noteFinished(r.adopted.finished);
      else if (r.adopted?.wake) signal(r.adopted.wake);
      return r;
    };
    const retryInMs = deps.firstRetryMs ?? 0;
    // a retry of this activity (its attempt before failed, e.g. a chain's release cut by a blip)
    // also looks for a delivery that chain ended and did not release (db/ordering.ts endedAfter)
    const retried = info.attempt > 1;
    let released = settle(
      input.deliveryId,
      await repos.ordering.release(input.deliveryId, { retryInMs, ...(retried ? { retried } : {}), ...(handoff ? { handoff } : {}) }),
    );

    while (released.claimed && released.wake && deps.handedOff) {
      const { claimed, wake } = released;
      handed++;
      const end = await attempt(claimed, deps.handedOff);
      if (end === 'ended') {
        // its release, in turn: the key moves on to the next one, claimed when it can be
        released = settle(
          claimed.deliveryId,
          await repos.ordering.release(claimed.deliveryId, { ended: true, retryInMs, ...(handoff ? { handoff } : {}) }),
        );
        // left to its key's chain: no run waits to be told, and its end finished its event if it
        // was the last (the release's transaction); else its run is signalled
        if (released.finished) noteFinished(released.finished);
        else signal(wake);
        continue;
      }
      await repos.ordering.handoffEnd(claimed.deliveryId, end);
      signal(wake);
      released = { holds: false };
    }
    await Promise.all(signals);
    const more = unsent.length > 0 ? { wakes: unsent } : {};

    const { wake } = released;
    if (!wake) return more;
    // a run waiting behind itself counts its own wake-up (workflows/fanout.ts signalTurn)
    if (deps.signalTurn && wake.workflowId !== self) {
      try {
        await deps.signalTurn(wake);
        return more;
      } catch (err) {
        logger.debug(
          { deliveryId: input.deliveryId, wake, err: describeError(err) },
          'ordered delivery: the workflow signals the next one',
        );
      }
    }
    return { wake, ...more };
  };
}
