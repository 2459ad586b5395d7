import type { DeliveryStatus, EventStatus } from '../domain/statuses.js';

// The activity contract between the workflow and the activity implementations. Types only:
// the workflow bundle imports this file, so it must never gain runtime Node.js code.

/** Exponential backoff of delivery retries, global for all endpoints. */
export interface BackoffSettings {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
}

export interface FanoutInput {
  eventId: string;
  /** replay: deliver only these (PENDING) deliveries instead of matching endpoints */
  deliveryIds?: string[];
}

export type PrepareInput = FanoutInput;

/** One delivery the workflow will run, with what its retry policy is built from. */
export interface PlannedDelivery {
  deliveryId: string;
  endpointId: string;
  maxAttempts: number;
  timeoutSeconds: number;
  /** attempts the row had when this run was planned: 0 for a fanout, earlier attempts for a replay */
  priorAttempts: number;
}

export interface PrepareResult {
  deliveries: PlannedDelivery[];
  backoff: BackoffSettings;
}

export interface DeliverInput {
  deliveryId: string;
  /** the endpoint's max_attempts when prepared; the same number bounds the activity's retries */
  maxAttempts: number;
  /**
   * The row's attempts before this run (a replay's earlier ones): this run's attempt number is
   * the row's count minus these, so a replay has the endpoint's whole budget again and its first
   * request says X-Webhook-Attempt 1. Absent in runs scheduled before it existed: counted as 0.
   */
  priorAttempts?: number;
}

export interface DeliverResult {
  status: DeliveryStatus;
}

/** A delivery whose activity ended without settling its row (timeout, lost worker, DB error). */
export interface UnsettledDelivery {
  deliveryId: string;
  reason: string;
}

export interface FinishEventInput {
  eventId: string;
  unsettled?: UnsettledDelivery[];
}

export type FinalEventStatus = Exclude<EventStatus, 'RECEIVED'>;

export interface FanoutActivities {
  prepare(input: PrepareInput): Promise<PrepareResult>;
  deliver(input: DeliverInput): Promise<DeliverResult>;
  finishEvent(input: FinishEventInput): Promise<FinalEventStatus>;
}
