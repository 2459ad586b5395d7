import type { BackoffSettings } from '../config/settings.js';
import type { DeliveryOutcome, TokenAnswer, TokenWaitReason } from '../delivery/types.js';
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
  endpoints: Pick<EndpointRepository, 'recordTokenRefusal' | 'recordTokenUnavailable' | 'clearTokenFailures' | 'clearTokenUnavailable'>;
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
 * console show both); the token endpoint's next answer that is not a wait clears them (`answered`).
 */
export function createTokenWait({ metrics, endpoints, logger, backoff }: TokenWaitDeps) {
  return {
    async wait(endpoint: Endpoint, outcome: TokenDeferred, temporalAttempt: number, log: object): Promise<never> {
      const delayMs = tokenWaitMs(backoff, temporalAttempt, outcome.reason);
      metrics.deliveryTokenFailures.inc({ endpoint: endpoint.name, reason: outcome.reason });
      metrics.deliveryDeferrals.inc({ endpoint: endpoint.name, reason: 'token' });
      // on the endpoint's row, for the operator (a refusal) and the admin API and console (both):
      // its waiting deliveries say nothing of it themselves (no attempt, no error). Always asked of
      // the row, which skips the same words: the endpoint this attempt read may be older than what
      // another delivery (another worker) wrote or cleared since
      if (outcome.reason === 'refused') await endpoints.recordTokenRefusal(endpoint, outcome.error);
      else await endpoints.recordTokenUnavailable(endpoint, outcome.error);
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
     * The token endpoint answered this attempt's token request with something other than a wait
     * (`token`: it granted one, whatever the receiver then did; `answered`: it refused the request
     * itself, invalid_scope...): it is not unavailable, and with a token our credentials are not
     * refused either. Only an attempt that asked the token endpoint comes here (a kept token asks
     * nothing, so a delivery's common path costs no statement); the row decides whether there is
     * anything to clear. Never throws: the request was sent, and a failure here must not make the
     * attempt run again (the next token request, or the operator's next write, clears it).
     */
    async answered(endpoint: Endpoint, answer: TokenAnswer, log: object): Promise<void> {
      try {
        const cleared = answer === 'token' ? await endpoints.clearTokenFailures(endpoint) : await endpoints.clearTokenUnavailable(endpoint);
        if (cleared)
          logger.info({ ...log, tokenAnswer: answer }, 'the token endpoint answers again: its failure on the endpoint is cleared');
      } catch (err) {
        logger.warn({ ...log, err }, 'could not clear the token failure of the endpoint; the next token request will');
      }
    },
  };
}
