import type { BackoffSettings } from '../config/settings.js';
import type { DeliveryOutcome, TokenWaitReason } from '../delivery/types.js';
import type { EndpointRepository } from '../db/endpoints.js';
import type { Endpoint } from '../domain/records.js';
import type { Metrics } from '../metrics/metrics.js';
import { spanEvent } from '../observability/spans.js';
import { backoffDelayMs, type ActivityLogger } from './deps.js';
import { deliveryDeferred } from './failures.js';

/**
 * The longest wait between tries while an OAuth2 endpoint's token endpoint fails: a minute while
 * it is unavailable (back within a minute of it), five while it refuses our credentials (a person
 * fixes the Secret; the endpoint shows Ready=False meanwhile). Each try spends one of the
 * delivery's Temporal attempts (maxAttempts + DATABASE_RETRY_BUDGET, 400): about six hours of an
 * unavailable token endpoint, about a day and a half of refused credentials, before the delivery
 * ends FAILED (docs/endpoints.md says so: replay it).
 */
export const TOKEN_WAIT_MAX_MS: Readonly<Record<TokenWaitReason, number>> = { unavailable: 60_000, refused: 300_000 };

/** The wait after the token endpoint failed a delivery for the n-th Temporal attempt: the backoff, capped by the reason. Pure. */
export function tokenWaitMs(backoff: BackoffSettings, temporalAttempt: number, reason: TokenWaitReason): number {
  return Math.min(backoffDelayMs(backoff, temporalAttempt), TOKEN_WAIT_MAX_MS[reason]);
}

export interface TokenWaitDeps {
  metrics: Pick<Metrics, 'deliveryTokenFailures' | 'deliveryDeferrals'>;
  endpoints: Pick<EndpointRepository, 'recordTokenRefusal' | 'recordTokenUnavailable' | 'clearTokenFailures'>;
  logger: ActivityLogger;
  backoff: BackoffSettings;
}

type TokenDeferred = Extract<DeliveryOutcome, { kind: 'deferred'; cause: 'token' }>;

/**
 * A delivery an OAuth2 endpoint's token endpoint failed before the receiver was asked
 * (destinations/http/oauth2-destination.ts): like the forward proxy's (proxy-wait.ts) it ends
 * the activity with a retryable DeliveryDeferred: no attempt recorded, none spent, nothing
 * towards auto-disable, the delivery's next attempt number unchanged. A refusal of our
 * credentials is also written on the endpoint's row, which the operator shows as Ready=False
 * TokenRequestRefused, and so is an unavailable token endpoint and since when (the admin API and the
 * console show both); a token obtained later clears them (`obtained`).
 */
export function createTokenWait({ metrics, endpoints, logger, backoff }: TokenWaitDeps) {
  return {
    async wait(endpoint: Endpoint, outcome: TokenDeferred, temporalAttempt: number, log: object): Promise<never> {
      const delayMs = tokenWaitMs(backoff, temporalAttempt, outcome.reason);
      metrics.deliveryTokenFailures.inc({ endpoint: endpoint.name, reason: outcome.reason });
      metrics.deliveryDeferrals.inc({ endpoint: endpoint.name, reason: 'token' });
      // on the endpoint's row, for the operator (a refusal) and the admin API and console (both):
      // its waiting deliveries say nothing of it themselves (no attempt, no error)
      if (outcome.reason === 'refused') await endpoints.recordTokenRefusal(endpoint, outcome.error);
      else if (endpoint.tokenUnavailable?.message !== outcome.error) await endpoints.recordTokenUnavailable(endpoint, outcome.error);
      spanEvent('token endpoint failed', { 'webhook.token_failure': outcome.reason, 'webhook.wait_ms': delayMs });
      logger.warn(
        { ...log, reason: outcome.reason, error: outcome.error, waitMs: delayMs },
        outcome.reason === 'refused'
          ? 'delivery waits: the token endpoint refuses our client credentials (fix the Secret; no attempt spent)'
          : 'delivery waits: the token endpoint failed it (no attempt spent)',
      );
      throw deliveryDeferred(`waiting ${delayMs} ms on the token endpoint: ${outcome.error}`, delayMs);
    },

    /**
     * The receiver answered, so a token was obtained: a refusal the row still shows is over. Never
     * throws: the request was sent, and a failure here must not make the attempt run again (the
     * next delivery, or the operator's next write, clears it).
     */
    async obtained(endpoint: Endpoint, log: object): Promise<void> {
      if (endpoint.tokenRefusal === null && endpoint.tokenUnavailable === null) return;
      try {
        await endpoints.clearTokenFailures(endpoint.id);
        logger.info(
          log,
          endpoint.tokenRefusal ? 'the token endpoint accepts our client credentials again' : 'the token endpoint is available again',
        );
      } catch (err) {
        logger.warn({ ...log, err }, 'could not clear the token refusal of the endpoint; the next delivery will');
      }
    },
  };
}
