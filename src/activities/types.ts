import type { BackoffSettings } from '../config/settings.js';
import type { DeliveryStatus, EventStatus } from '../domain/statuses.js';

// The activity contract between the workflow and the activity implementations. Types only:
// the workflow bundle imports this file, so it must never gain runtime Node.js code.

export interface FanoutInput {
  eventId: string;
  /** replay: deliver only these (PENDING) deliveries instead of matching endpoints */
  deliveryIds?: string[];
  /**
   * Set by every starter of this version (temporal/fanout-input.ts): first delivery attempts run
   * as local activities. Absent in the input of runs started by an earlier consumer: those decide
   * by patched() as they did (docs/decisions.md, "Changing the workflow"). Part of the input, so
   * a run decides it once, deterministically, without the patch's marker and search-attribute
   * update in every history.
   */
  localFirstAttempt?: boolean;
  /**
   * A continuation (workflows/names.ts continuationWorkflowId): the run of one ordered delivery its
   * event's run left to its key's chain, started by signal-with-start when it needs a run of its
   * own. Its delivery is planned as woken (its turn is checked at once), its attempts count from
   * the row's first, and the event is finished only once none of its deliveries is PENDING.
   */
  resumes?: boolean;
}

/** What prepare needs of the run's input. */
export type PrepareInput = Pick<FanoutInput, 'eventId' | 'deliveryIds' | 'resumes'> &
  TakesHandoff & {
    /**
     * Set by the workflow code that lets an ordered delivery which must wait go (OrderingWait
     * 'detached'): the worker then leaves it to its key's chain when its handoff is on.
     */
    detaches?: boolean;
  };

/**
 * Set by the workflow code that takes an ordered key's handoff (docs/ordering.md, "The handoff"):
 * a turn check that records a wait says so in the row, and only such a delivery is claimed and
 * attempted by the activity that releases its key. Absent from the workflow code before it: its
 * runs are signalled and deliver themselves, whatever the worker that releases the key.
 */
export interface TakesHandoff {
  takesHandoff?: boolean;
}

/** One delivery the workflow will run, with what its retry policy is built from. */
export interface PlannedDelivery {
  deliveryId: string;
  endpointId: string;
  maxAttempts: number;
  timeoutSeconds: number;
  /** attempts recorded before this run (a replay reopens a row that has some): a run's attempts count from here */
  priorAttempts: number;
  /**
   * An ordered delivery (docs/ordering.md): whether its turn has come ('go'), or how the run learns
   * that it may have: a signal (orderingTurn) from the delivery before it, or a timer. Absent: not
   * ordered (and in the plans of runs recorded before ordering existed).
   */
  ordering?: OrderingWait;
}

/**
 * An ordered delivery's turn, as the workflow acts on it. 'detached': it waits, and is left to its
 * key's chain (docs/ordering.md): the releasing activity makes its attempt, or starts a run for it
 * (a continuation); this run neither waits for it nor delivers it.
 */
export type OrderingWait = 'go' | 'signal' | 'timer' | 'detached';

export interface OrderingTurnInput extends TakesHandoff {
  deliveryId: string;
}

export interface OrderingTurnResult {
  turn: OrderingWait;
  /**
   * With 'go': the activity that released the key made this delivery's attempt (the handoff).
   * 'ended': it ended the delivery (and did its release): the run completes without a request.
   * retryInMs: it failed and is retried by the run after that delay (a normal activity; the row
   * counts the attempt). Absent: the run delivers it itself (and in histories before the handoff).
   */
  handedOff?: 'ended' | { retryInMs: number };
}

export interface OrderingReleaseInput {
  deliveryId: string;
  /** the delivery's activity ended without settling it (as UnsettledDelivery): it is settled FAILED first */
  unsettled?: string;
}

export interface OrderingReleaseResult {
  /** the run to signal (orderingTurn): it waits for the turn of the delivery after this one */
  wake?: OrderingWake;
  /** more runs to signal: those of deliveries handed off whose signal the activity could not send */
  wakes?: OrderingWake[];
}

export interface PrepareResult {
  deliveries: PlannedDelivery[];
  backoff: BackoffSettings;
  /**
   * Runs to signal (orderingTurn) once prepared: ordered deliveries after this event's in their
   * sequence that waited for it to be prepared (docs/ordering.md). Absent: none.
   */
  wakes?: OrderingWake[];
}

/** A run to signal: it waits for the turn of `deliveryId`. */
export interface OrderingWake {
  workflowId: string;
  deliveryId: string;
}

export interface DeliverInput {
  deliveryId: string;
  /** the endpoint's max_attempts when prepared: endpoint attempts this run may make */
  maxAttempts: number;
  /** attempts recorded before this run; absent (0) in runs started before it existed */
  priorAttempts?: number;
  /**
   * An ordered delivery whose run lets the activity release its key after a SUCCESS with nothing to
   * wake (DeliverResult.released); absent in runs of workflow code before it, which release it
   * themselves (orderingRelease)
   */
  releases?: true;
}

export interface DeliverResult {
  status: DeliveryStatus;
  /**
   * The delivery ended SUCCESS and the activity released its key, with nothing waiting behind it
   * to wake or claim (DeliverInput.releases): the run does not call orderingRelease. Absent in
   * histories before it, and whenever the release is left to the run.
   */
  released?: true;
}

/**
 * The details a failed deliver attempt carries (ApplicationFailure.details[0]). The workflow reads
 * retryDelayMs after a first attempt run as a local activity: the SDK does not hand a failure's
 * nextRetryDelay to workflow code, and the delay follows the endpoint's attempt and Retry-After.
 */
export interface DeliverFailureDetails {
  responseStatus: number | null;
  statusClass: string;
  /** set on a retryable outcome: the delay before the next attempt (the production backoff, Retry-After as a floor) */
  retryDelayMs?: number;
  /** set on a final failure whose row the activity wrote FAILED: the workflow leaves the row alone */
  rowSettled?: true;
}

/** A delivery whose activity ended without settling its row (timeout, lost worker, DB error). */
export interface UnsettledDelivery {
  deliveryId: string;
  reason: string;
}

export interface FinishEventInput {
  eventId: string;
  unsettled?: UnsettledDelivery[];
  /**
   * The run left a delivery of the event to its key's chain, is a continuation, or is a replay's
   * (a redrive's) run: the event is finished only when none of its deliveries is PENDING (else
   * whoever ends the last one finishes it), and the answer is then RECEIVED.
   */
  settledOnly?: boolean;
}

export type FinalEventStatus = Exclude<EventStatus, 'RECEIVED'>;

/** What finishEvent answers: the event's final status, or RECEIVED while a delivery left to its key's chain is PENDING. */
export type FinishedEventStatus = FinalEventStatus | 'RECEIVED';

export interface FanoutActivities {
  prepare(input: PrepareInput): Promise<PrepareResult>;
  deliver(input: DeliverInput): Promise<DeliverResult>;
  finishEvent(input: FinishEventInput): Promise<FinishedEventStatus>;
  orderingTurn(input: OrderingTurnInput): Promise<OrderingTurnResult>;
  orderingRelease(input: OrderingReleaseInput): Promise<OrderingReleaseResult>;
}
