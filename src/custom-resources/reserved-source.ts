import { permanent, type AppError } from '../domain/errors.js';

/**
 * An InboundCredential for the reserved source of operational events (OPERATIONS_EVENTS_SOURCE):
 * the service is that source's only sender (docs/operations-events.md), so the operator and dev
 * mode refuse it alike, with the same words.
 */
export const reservedSource = (source: string): AppError =>
  permanent(
    'reserved_source',
    `source "${source}" is reserved for webhook-fanout's own events (OPERATIONS_EVENTS_SOURCE, docs/operations-events.md): no InboundCredential may configure it`,
  );
