import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  condition,
  defineSignal,
  getExternalWorkflowHandle,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
  type ActivityOptions,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { BackoffSettings } from '../config/settings.js';
import type {
  DeliverFailureDetails,
  DeliverResult,
  FanoutActivities,
  FanoutInput,
  FinishedEventStatus,
  OrderingTurnResult,
  OrderingWait,
  OrderingWake,
  PlannedDelivery,
  UnsettledDelivery,
} from '../activities/types.js';
import { DATABASE_RETRY_BUDGET, ORDERING_TURN_SIGNAL } from './names.js';

/**
 * Bookkeeping activities (database only), run as local activities: no task-queue round trip and
 * no extra history events, which were much of the Temporal cost of a fanout (docs/benchmarks.md).
 * Retried without an attempt limit: a Postgres outage must delay an event, never lose it;
 * permanent problems are thrown as non-retryable by the activity.
 */
const BOOKKEEPING_RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' } as const;
const { prepare, finishEvent, orderingTurn } = proxyLocalActivities<Pick<FanoutActivities, 'prepare' | 'finishEvent' | 'orderingTurn'>>({
  startToCloseTimeout: '30 seconds',
  retry: BOOKKEEPING_RETRY,
});
/**
 * The release of an ordered key may deliver the key's next deliveries itself (the handoff,
 * docs/ordering.md): room for an attempt at the longest endpoint timeout (120 s) and its lease's
 * margin; the activity starts no attempt it has not the time left for.
 */
const { orderingRelease } = proxyLocalActivities<Pick<FanoutActivities, 'orderingRelease'>>({
  startToCloseTimeout: '3 minutes',
  retry: BOOKKEEPING_RETRY,
});

/** Time on top of the endpoint's request timeout for loading rows and recording the attempt. */
const DELIVER_MARGIN_MS = 30_000;

/** A delivery's activity options: its endpoint's attempts and timeout, the global backoff. Pure, unit-tested. */
export function deliveryActivityOptions(
  d: Pick<PlannedDelivery, 'maxAttempts' | 'timeoutSeconds'>,
  backoff: BackoffSettings,
): ActivityOptions {
  return {
    startToCloseTimeout: d.timeoutSeconds * 1000 + DELIVER_MARGIN_MS,
    retry: {
      // the activity counts the endpoint's attempts in the row and fails the delivery itself
      // after the last; Temporal's own limit leaves room for retries after database failures
      // (which spend none) and stops a delivery that crashes its worker every time
      maximumAttempts: d.maxAttempts + DATABASE_RETRY_BUDGET,
      initialInterval: backoff.initialIntervalMs,
      backoffCoefficient: backoff.backoffCoefficient,
      maximumInterval: backoff.maximumIntervalMs,
    },
  };
}

/**
 * Marks histories whose deliveries start with a local activity; runs recorded before it replay the
 * old path (one activity per delivery from the first attempt). Asked only by runs whose input does
 * not say (FanoutInput.localFirstAttempt): the patch costs every run a marker and a
 * search-attribute update (TemporalChangeVersion). docs/decisions.md, "Changing the workflow" and
 * "First delivery attempt as a local activity".
 */
export const LOCAL_FIRST_ATTEMPT_PATCH = 'deliver-first-attempt-local';

/** A first attempt's options: the endpoint's timeout, no retry of its own (the fallback below retries). */
export function localFirstAttemptOptions(d: Pick<PlannedDelivery, 'timeoutSeconds'>): LocalActivityOptions {
  return { startToCloseTimeout: d.timeoutSeconds * 1000 + DELIVER_MARGIN_MS, retry: { maximumAttempts: 1 } };
}

/**
 * The retries after a failed local first attempt, as a normal activity: the attempts left, and the
 * backoff continued where the first attempt left it (its first retry is the policy's second delay),
 * so the delays are those of deliveryActivityOptions. The activity sets each delay itself from the
 * endpoint's attempt number; this policy applies when it could not (a timeout, a lost worker).
 */
export function retryActivityOptions(
  d: Pick<PlannedDelivery, 'maxAttempts' | 'timeoutSeconds'>,
  backoff: BackoffSettings,
): ActivityOptions {
  const base = deliveryActivityOptions({ ...d, maxAttempts: Math.max(1, d.maxAttempts - 1) }, backoff);
  return {
    ...base,
    retry: { ...base.retry, initialInterval: Math.min(backoff.initialIntervalMs * backoff.backoffCoefficient, backoff.maximumIntervalMs) },
  };
}

/**
 * The delay before the first retry after a local first attempt failed with `err`, or undefined
 * when the failure is final (4xx, attempts used up, cancelled): then it is rethrown as it is. Pure.
 */
export function retryDelayAfterFirstAttempt(err: unknown, backoff: BackoffSettings): number | undefined {
  if (err instanceof CancelledFailure) return undefined;
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof CancelledFailure) return undefined;
  if (cause instanceof ApplicationFailure) {
    if (cause.nonRetryable) return undefined;
    const details = cause.details?.[0] as Partial<DeliverFailureDetails> | undefined;
    if (typeof details?.retryDelayMs === 'number' && details.retryDelayMs >= 0) return details.retryDelayMs;
  }
  // a database failure (no endpoint attempt spent), a timeout, a crash: the policy's first delay
  return backoff.initialIntervalMs;
}

/**
 * One delivery, each endpoint with its own attempts, timeout and backoff. Its first attempt runs as
 * a local activity: on the happy path no activity task, no task-queue round trip and no history
 * events of its own (a marker in the workflow task), which was most of Temporal's cost per
 * delivery. A retryable failure continues as a normal activity after the backoff's delay (a
 * timer), so retries keep their durable schedule and a failing endpoint does not hold the workflow
 * task. The attempt number in Postgres is the row's count of attempts, so it runs on across both.
 */
async function deliverWithPolicy(d: PlannedDelivery, backoff: BackoffSettings, localFirstAttempt: boolean | undefined, releases = false) {
  const input = { deliveryId: d.deliveryId, maxAttempts: d.maxAttempts, priorAttempts: d.priorAttempts, ...(releases ? { releases } : {}) };
  // a run started by this version says so in its input; one started before asks the patch, at
  // the point where it always did (its history has the marker there, or no marker at all)
  if (!(localFirstAttempt ?? patched(LOCAL_FIRST_ATTEMPT_PATCH))) {
    const { deliver } = proxyActivities<Pick<FanoutActivities, 'deliver'>>(deliveryActivityOptions(d, backoff));
    return deliver(input);
  }
  const { deliver: firstAttempt } = proxyLocalActivities<Pick<FanoutActivities, 'deliver'>>(localFirstAttemptOptions(d));
  try {
    return await firstAttempt(input);
  } catch (err) {
    const delayMs = retryDelayAfterFirstAttempt(err, backoff);
    if (delayMs === undefined) throw err;
    if (delayMs > 0) await sleep(delayMs);
    const { deliver } = proxyActivities<Pick<FanoutActivities, 'deliver'>>(retryActivityOptions(d, backoff));
    return deliver(input);
  }
}

/**
 * Whether a delivery's failure left its row FAILED already (the activity wrote it: DeliverFailureDetails.rowSettled),
 * so the workflow does not settle it again: a replay may have reopened the row since, and settled
 * again it would be FAILED under the replay's run, which then sends nothing. Failures of histories
 * recorded before the flag count as unsettled, as they did (settling a FAILED row changes nothing). Pure.
 */
export function rowSettledBy(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure)) return false;
  const details = cause.details?.[0] as Partial<DeliverFailureDetails> | undefined;
  return details?.rowSettled === true;
}

export const orderingTurnSignal = defineSignal<[string]>(ORDERING_TURN_SIGNAL);

/**
 * The re-check timer of a delivery that waits behind what sends no signal (an event not prepared
 * yet, which a burst of runs started out of order leaves for a moment): 250 ms doubling to 10 s.
 */
export const ORDERING_RECHECK_MS = { first: 250, max: 10_000 } as const;

/** How many orderingTurn signals the run has had: a wait ends when the count moves past what it saw. */
interface Wakes {
  count: number;
}

/**
 * An ordered delivery (docs/ordering.md): waits for its turn without a timer, an activity or a
 * worker slot (a condition on the signal count), asking Postgres again after each signal; delivers
 * it; then says whether it released its key and wakes the run waiting behind it. A wait ends at
 * the first signal of the run (the count starts before prepare's turn check, so a signal sent
 * after that check counts).
 */
async function deliverInOrder(
  d: PlannedDelivery & { ordering: OrderingWait },
  wakes: Wakes,
  backoff: BackoffSettings,
  localFirstAttempt: boolean | undefined,
): Promise<unknown> {
  let wait = d.ordering;
  let recheckMs: number = ORDERING_RECHECK_MS.first;
  let saw = 0;
  let handedOff: OrderingTurnResult['handedOff'];
  while (wait !== 'go') {
    const before = saw;
    if (wait === 'signal') await condition(() => wakes.count > before);
    else {
      await condition(() => wakes.count > before, recheckMs);
      recheckMs = Math.min(recheckMs * 2, ORDERING_RECHECK_MS.max);
    }
    saw = wakes.count;
    ({ turn: wait, handedOff } = await orderingTurn({ deliveryId: d.deliveryId, takesHandoff: true }));
  }
  // the activity that released the key made this delivery's attempt and its release (the
  // handoff): its row says how it ended, finishEvent reads it. Only a turn check of this code
  // answers handedOff, so histories recorded before it replay the path below.
  if (handedOff === 'ended') return undefined;
  let failure: { err: unknown } | undefined;
  let result: unknown;
  try {
    result =
      handedOff === undefined ? await deliverWithPolicy(d, backoff, localFirstAttempt, true) : await retryHandedOff(d, backoff, handedOff);
  } catch (err) {
    failure = { err };
  }
  // the deliver activity released the key itself, with nothing to wake: no orderingRelease (its
  // result says so only to this code, which asks it to: histories before it release below)
  if (failure === undefined && releasedBy(result)) return result;
  const unsettled = failure && !rowSettledBy(failure.err) ? { unsettled: reasonOf(failure.err) } : {};
  const { wake, wakes: more } = await orderingRelease({ deliveryId: d.deliveryId, ...unsettled });
  if (wake) await signalTurn(wake, wakes);
  if (more) await Promise.all(more.map((w) => signalTurn(w, wakes)));
  if (failure) throw failure.err;
  return result;
}

/**
 * A handed-off attempt failed (its row counts it): the run's retries go on from it as after a
 * local first attempt, after the delay the attempt decided (from its end), as a normal activity.
 */
async function retryHandedOff(d: PlannedDelivery, backoff: BackoffSettings, handedOff: { retryInMs: number }): Promise<unknown> {
  if (handedOff.retryInMs > 0) await sleep(handedOff.retryInMs);
  const { deliver } = proxyActivities<Pick<FanoutActivities, 'deliver'>>(retryActivityOptions(d, backoff));
  return deliver({ deliveryId: d.deliveryId, maxAttempts: d.maxAttempts, priorAttempts: d.priorAttempts, releases: true });
}

/** Whether a deliver activity's result says it released its ordered delivery's key (DeliverResult.released). Pure. */
export function releasedBy(result: unknown): boolean {
  return (result as Partial<DeliverResult> | undefined)?.released === true;
}

/** Wakes the run waiting for a delivery's turn (this run itself: its own count). */
async function signalTurn(wake: OrderingWake, wakes: Wakes): Promise<void> {
  if (wake.workflowId === workflowInfo().workflowId) {
    wakes.count++;
    return;
  }
  // a run that has ended meanwhile can not be signalled: nothing waits there any more
  await getExternalWorkflowHandle(wake.workflowId)
    .signal(orderingTurnSignal, wake.deliveryId)
    .catch(() => undefined);
}

function reasonOf(err: unknown): string {
  if (err instanceof ActivityFailure) return err.cause?.message ?? err.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Fans one received event out to its endpoints: prepare (routing + PENDING rows), every delivery
 * concurrently, then the event's final status. With deliveryIds it replays just those deliveries.
 */
export async function WebhookFanoutWorkflow(input: FanoutInput): Promise<FinishedEventStatus> {
  // before prepare: a signal that comes after prepare's turn check must end the wait it answered
  const wakes: Wakes = { count: 0 };
  setHandler(orderingTurnSignal, () => {
    wakes.count++;
  });
  const plan = await prepare({
    eventId: input.eventId,
    ...(input.deliveryIds === undefined ? {} : { deliveryIds: input.deliveryIds }),
    ...(input.resumes === true ? { resumes: true } : {}),
    takesHandoff: true,
    detaches: true,
  });
  // an ordered delivery left to its key's chain (docs/ordering.md): not this run's to deliver,
  // and the event is finished by whoever ends its last delivery (absent in histories before it)
  const deliveries = plan.deliveries.filter((d) => d.ordering !== 'detached');
  // a replay's run (a redrive's too) delivers some of the event's deliveries only: another may be
  // PENDING (left to its key's chain, another replay's, the event's own run still retrying), and
  // the event's status waits for it (its end finishes the event)
  const settledOnly = deliveries.length < plan.deliveries.length || input.resumes === true || input.deliveryIds !== undefined;
  // every delivery left to the chain: its ends finish the event, there is nothing for this run to
  // settle or finish (a transaction saved per waiting event)
  if (deliveries.length === 0 && plan.deliveries.length > 0 && plan.wakes === undefined) return 'RECEIVED';
  // ordered deliveries after this event's that waited for it to be prepared (absent in histories
  // before ordering); sent beside this event's deliveries, not before them
  const woken = plan.wakes ? Promise.all(plan.wakes.map((w) => signalTurn(w, wakes))) : undefined;
  const results = await Promise.allSettled(
    deliveries.map((d) =>
      d.ordering === undefined
        ? deliverWithPolicy(d, plan.backoff, input.localFirstAttempt)
        : deliverInOrder({ ...d, ordering: d.ordering }, wakes, plan.backoff, input.localFirstAttempt),
    ),
  );
  // A delivery that failed normally is already FAILED in its row (and left alone: rowSettledBy);
  // finishEvent settles any other (e.g. the last attempt timed out) so no row stays PENDING once
  // its workflow is done.
  if (woken) await woken;
  const unsettled: UnsettledDelivery[] = [];
  results.forEach((r, i) => {
    const d = deliveries[i];
    if (r.status === 'rejected' && d && !rowSettledBy(r.reason)) unsettled.push({ deliveryId: d.deliveryId, reason: reasonOf(r.reason) });
  });
  return finishEvent({ eventId: input.eventId, unsettled, ...(settledOnly ? { settledOnly } : {}) });
}
