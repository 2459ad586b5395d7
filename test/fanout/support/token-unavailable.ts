import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { eventually } from '../../support/wait.js';
import { counterDelta } from './fixtures.js';
import { addEndpoint, addEvent, uniqueSource, type FanoutHarness } from './harness.js';

/**
 * An OAuth2 endpoint of one attempt (a 2 s timeout) sending to `url`, its token asked of
 * `tokenOrigin` (a receiver scripted to answer 503), and an event for it started: resolves once the
 * delivery has waited twice on the 503 and the endpoint's row says the token endpoint is
 * unavailable (migration 092). The test then scripts the token endpoint's next answer.
 */
export async function waitingOnUnavailableTokens(
  h: FanoutHarness,
  opts: { url: string; tokenOrigin: string; scopes: string[] },
): Promise<{ endpointId: string; eventId: string }> {
  const source = uniqueSource('oauth2');
  const name = `answers-${randomUUID().slice(0, 8)}`;
  const endpointId = await addEndpoint(h.repos, {
    name,
    source,
    url: opts.url,
    maxAttempts: 1,
    autoDisableAfter: 100,
    timeoutSeconds: 2,
    authType: 'OAUTH2_CLIENT_CREDENTIALS',
    authSecret: `secret-${randomUUID()}`,
    authOAuth2: {
      tokenUrl: `${opts.tokenOrigin}/oauth/token`,
      clientId: 'fanout',
      scopes: opts.scopes,
      audience: null,
      clientAuthentication: 'ClientSecretBasic',
      keyId: null,
    },
  });
  const unavailable = await counterDelta(h.metrics.deliveryTokenFailures, { endpoint: name, reason: 'unavailable' });
  const eventId = await addEvent(h.repos, { source });
  await h.start(eventId);
  await eventually(async () => (await unavailable()) >= 2, { what: 'two waits on the 503' });
  expect((await h.repos.endpoints.get(endpointId))?.tokenUnavailable?.message).toMatch(/HTTP 503/);
  return { endpointId, eventId };
}
