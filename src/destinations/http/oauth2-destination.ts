import { performance } from 'node:perf_hooks';
import type { Destination, HttpTarget } from '../../delivery/destination.js';
import { invalidRequest, type DeliveryOutcome } from '../../delivery/types.js';
import { ERROR_CODES } from '../../domain/error-codes.js';
import { proxyDeferred } from './forward-proxy.js';
import type { OAuth2Tokens, TokenFailure } from './oauth2-tokens.js';

/**
 * The HTTP destination for endpoints whose auth is OAuth2 client credentials (docs/endpoints.md):
 * the request carries a Bearer token from the endpoint's token endpoint, kept and shared by
 * oauth2-tokens.ts; other endpoints pass through untouched. A 401 from the receiver drops the
 * token, and when it was a kept one (revoked, or the server's keys rotated) the request is sent
 * once more, in the same attempt and its time, with a new one. A token endpoint that can not be
 * reached, times out or answers 5xx, or that says our client credentials are wrong, makes the
 * delivery wait without spending an attempt (a `deferred` outcome, cause token:
 * activities/token-wait.ts); any other refusal (invalid_scope...) is the attempt's failure. The
 * code (error registry) and the server's words are in the log, never the secret nor a token.
 */
export function createOAuth2Destination(http: Destination<HttpTarget>, tokens: OAuth2Tokens): Destination<HttpTarget> {
  return {
    async send(message, target, options) {
      const { auth } = target;
      if (auth.type !== 'OAUTH2_CLIENT_CREDENTIALS') return http.send(message, target, options);
      const { oauth2, secret } = auth;
      if (!oauth2 || secret === null) return invalidRequest('OAuth2 client credentials need a token endpoint and a client secret or key');
      const started = performance.now();
      const elapsed = (): number => Math.round(performance.now() - started);
      // the token request and the delivery share the attempt's time
      const left = (): number => Math.max(1, options.timeoutMs - elapsed());
      const withToken = (token: string) =>
        http.send(message, { ...target, auth: { type: 'BEARER', username: null, secret: token } }, { ...options, timeoutMs: left() });

      const first = await tokens.token(oauth2, secret, options.timeoutMs);
      if (!first.ok) return tokenFailureOutcome(first.failure, elapsed());
      // a token the token endpoint granted in this attempt (not a kept one): said on the outcome
      // whatever the receiver does, so the worker clears the endpoint's token failure
      let fetched = first.fetched;
      let outcome = await withToken(first.token);
      if (outcome.status === 401) {
        tokens.invalidate(oauth2, secret, first.token);
        if (!first.fetched) {
          const again = await tokens.token(oauth2, secret, left());
          if (!again.ok) return tokenFailureOutcome(again.failure, elapsed());
          fetched = again.fetched;
          outcome = await withToken(again.token);
          if (outcome.status === 401) tokens.invalidate(oauth2, secret, again.token);
        }
      }
      if (outcome.kind === 'deferred') return { ...outcome, durationMs: elapsed() };
      return { ...outcome, durationMs: elapsed(), ...(fetched ? { tokenAnswer: 'token' as const } : {}) };
    },
    async close() {
      await Promise.all([http.close(), tokens.close()]);
    },
  };
}

/**
 * A failed token request as the delivery's outcome: it waits (deferred, no attempt spent) when the
 * token endpoint is unavailable or refuses our credentials; else FAILED at once when the registry
 * calls its code permanent, or retried.
 */
export function tokenFailureOutcome(failure: TokenFailure, durationMs: number): DeliveryOutcome {
  const error = `${failure.code}: ${failure.detail}`;
  // the forward proxy failed on the way to the token endpoint: the delivery waits, as a proxied one does
  if (failure.proxy) return proxyDeferred({ ...failure.proxy, error }, durationMs);
  const wait = failure.code === 'oauth2_token_unavailable' ? 'unavailable' : failure.credentialsRefused ? 'refused' : undefined;
  if (wait) return { kind: 'deferred', cause: 'token', reason: wait, status: null, body: null, error, durationMs, statusClass: 'token' };
  return {
    kind: ERROR_CODES[failure.code].kind === 'permanent' ? 'permanent' : 'retryable',
    status: null,
    body: null,
    error,
    durationMs,
    statusClass: failure.code === 'address_blocked' ? 'blocked' : 'token',
    // not unavailable: the worker clears what the endpoint's row says of that
    tokenAnswer: 'answered',
  };
}
