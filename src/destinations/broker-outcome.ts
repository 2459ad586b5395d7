import type { DeliveryOutcome } from '../delivery/types.js';
import { ERROR_CODES } from '../domain/error-codes.js';
import type { Receipt } from '../domain/records.js';

/**
 * How a broker's publish failed, one code of the error registry each (src/domain/error-codes.ts):
 * the registry's kind says whether the delivery retries it (transient) or ends FAILED at once
 * (permanent). Kafka, RabbitMQ and NATS classify their clients' errors into these.
 */
export type BrokerErrorCode =
  | 'broker_unavailable'
  | 'broker_throttled'
  | 'broker_unroutable'
  | 'broker_error'
  | 'broker_unknown_destination'
  | 'broker_auth_refused'
  | 'broker_message_too_large'
  /** a record the broker will never take as it is (Kafka INVALID_RECORD, INVALID_TIMESTAMP) */
  | 'broker_record_invalid'
  /** a broker host the outbound address policy refuses (cloud metadata, link-local) */
  | 'address_blocked';

/** A broker's failure: the code and one line of what it said (never a credential). */
export interface BrokerFailure {
  code: BrokerErrorCode;
  detail: string;
  /** the publish did not finish in the endpoint's time */
  timedOut?: boolean;
}

export function brokerFailureOutcome(failure: BrokerFailure, durationMs: number): DeliveryOutcome {
  const permanent = ERROR_CODES[failure.code].kind === 'permanent';
  return {
    kind: permanent ? 'permanent' : 'retryable',
    status: null,
    body: null,
    error: `${failure.code}: ${oneLine(failure.detail)}`,
    durationMs,
    statusClass: failure.timedOut
      ? 'timeout'
      : failure.code === 'address_blocked'
        ? 'blocked'
        : failure.code === 'broker_unavailable'
          ? 'network'
          : 'refused',
  };
}

export function brokerSuccess(receipt: Receipt, answer: string, durationMs: number): DeliveryOutcome {
  return { kind: 'success', status: null, body: answer, durationMs, statusClass: '2xx', receipt };
}

/** Broker messages may span lines or carry a long server dump: one line, bounded. */
function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/**
 * Resolves with what `work` resolves to, or with `onTimeout()` after timeoutMs (the publish may
 * still complete later: a retry may then publish it again, which the broker's de-duplication
 * removes where it has one, NATS's Nats-Msg-Id).
 */
export async function withDeadline<T>(work: Promise<T>, timeoutMs: number, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(onTimeout()), timeoutMs);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
