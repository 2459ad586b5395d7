import type { BackoffSettings } from '../config/settings.js';
import type { DeliveryOutcome } from '../delivery/types.js';
import type { Endpoint } from '../domain/records.js';
import type { Metrics } from '../metrics/metrics.js';
import { spanEvent } from '../observability/spans.js';
import { backoffDelayMs, type ActivityLogger } from './deps.js';
import { deliveryDeferred } from './failures.js';

/** The longest wait between tries while the forward proxy fails: it is back within a minute of being fixed. */
export const PROXY_WAIT_MAX_MS = 60_000;

/** The wait after the forward proxy failed a delivery for the n-th Temporal attempt: the backoff, capped at PROXY_WAIT_MAX_MS. */
export function proxyWaitMs(backoff: BackoffSettings, temporalAttempt: number): number {
  return Math.min(backoffDelayMs(backoff, temporalAttempt), PROXY_WAIT_MAX_MS);
}

export interface ProxyWaitDeps {
  metrics: Pick<Metrics, 'deliveryProxyFailures' | 'deliveryDeferrals'>;
  logger: ActivityLogger;
  backoff: BackoffSettings;
}

/**
 * A delivery the installation's forward proxy failed (refused, unreachable, 407, its own 502/503;
 * destinations/http/forward-proxy.ts): the receiver was never asked, so it is not the endpoint's
 * failure. Like a limit wait (limit-gate.ts) it ends the activity with a retryable
 * DeliveryDeferred: no attempt recorded, none spent, nothing towards auto-disable; Temporal tries
 * again after the wait, with the delivery's next attempt number unchanged. Counted and logged so
 * the proxy's alert fires (WebhookFanoutDeliveryProxyFailing).
 */
export function createProxyWait({ metrics, logger, backoff }: ProxyWaitDeps) {
  return (
    endpoint: Endpoint,
    outcome: Extract<DeliveryOutcome, { kind: 'deferred'; cause: 'proxy' }>,
    temporalAttempt: number,
    log: object,
  ): never => {
    const delayMs = proxyWaitMs(backoff, temporalAttempt);
    metrics.deliveryProxyFailures.inc({ reason: outcome.reason });
    metrics.deliveryDeferrals.inc({ endpoint: endpoint.name, reason: 'proxy' });
    spanEvent('forward proxy failed', { 'webhook.proxy_failure': outcome.reason, 'webhook.wait_ms': delayMs });
    logger.warn(
      { ...log, reason: outcome.reason, proxyStatus: outcome.status, error: outcome.error, waitMs: delayMs },
      'delivery waits: the forward proxy failed it (no attempt spent)',
    );
    throw deliveryDeferred(`waiting ${delayMs} ms on the forward proxy: ${outcome.error}`, delayMs);
  };
}
