import { randomUUID } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../src/dev/identity-provider.js';
import type { OAuth2Client } from '../../src/domain/records.js';
import { addEndpoint, addEvent, deliveryOf, endpointSpec, uniqueSource } from './support/harness.js';
import { counterDelta, it } from './support/fixtures.js';

// An OAuth2 endpoint through the real workflow, the worker's destinations and Postgres: the
// token of the test identity provider reaches the receiver, a wrong client secret ends the
// delivery FAILED with the provider's invalid_client in the attempt log (no request sent), and
// the secret fixed in the endpoint's row applies to the next delivery, without a restart.

const AUDIENCE = 'https://api.partner.example';
const SECRET = `secret-${randomUUID()}`;
let idp: IdentityProvider;

beforeAll(async () => {
  idp = await startIdentityProvider({
    audience: AUDIENCE,
    clients: [{ clientId: 'fanout', clientSecret: SECRET, permissions: ['read:webhooks'], tokenEndpointAuthMethod: 'client_secret_basic' }],
  });
});
afterAll(async () => {
  await idp?.close();
});

const client = (): OAuth2Client => ({
  tokenUrl: `${idp.url}/oauth/token`,
  clientId: 'fanout',
  scopes: ['read:webhooks'],
  audience: AUDIENCE,
  clientAuthentication: 'ClientSecretBasic',
  keyId: null,
});

describe('an OAuth2 client credentials endpoint', () => {
  it('a wrong secret: FAILED at once, the attempt log says invalid_client; the fixed secret delivers with a verified token', async ({
    h,
    receiver,
  }) => {
    const r = await receiver([{ status: 204, body: '' }]);
    const source = uniqueSource('oauth2');
    const uid = `test:${randomUUID()}`;
    const wrong = endpointSpec({
      source,
      url: r.url,
      maxAttempts: 3,
      authType: 'OAUTH2_CLIENT_CREDENTIALS',
      authSecret: 'not-the-secret',
      authOAuth2: client(),
    });
    const { id: endpointId } = await h.repos.endpoints.upsertByResourceUid(uid, wrong);
    const tokenFailures = await counterDelta(h.metrics.deliveryAttempts, { outcome: 'permanent', status_class: 'token' });

    const first = await addEvent(h.repos, { source });
    expect(await h.runFanout(first)).toBe('FAILED');
    const failed = await deliveryOf(h.repos, first, endpointId);
    expect(failed).toMatchObject({ status: 'FAILED', attempts: 1, lastResponseStatus: null });
    expect(failed.lastError).toMatch(/^oauth2_token_refused: the token endpoint answered HTTP 401 invalid_client/);
    expect(failed.lastError).not.toContain('not-the-secret');
    expect(r.requests).toHaveLength(0);
    expect(await tokenFailures()).toBe(1);

    // the Secret fixed: the operator writes the row, the running worker reads it on the next attempt
    await h.repos.endpoints.upsertByResourceUid(uid, { ...wrong, authSecret: SECRET });
    const second = await addEvent(h.repos, { source });
    expect(await h.runFanout(second)).toBe('COMPLETED');
    expect(await deliveryOf(h.repos, second, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1, lastResponseStatus: 204 });
    const token = /^Bearer (.+)$/.exec(String(r.requests[0]?.headers.authorization))?.[1] ?? '';
    const jwks = createRemoteJWKSet(new URL(`${idp.url}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(token, jwks, { issuer: idp.issuer, audience: AUDIENCE });
    expect(payload.client_id).toBe('fanout');
    // the token is nowhere in what the service recorded
    expect(JSON.stringify(await deliveryOf(h.repos, second, endpointId))).not.toContain(token);
  });

  it('an endpoint whose token is kept: a second event costs no token request', async ({ h, receiver }) => {
    const r = await receiver([{ status: 200, body: 'ok' }]);
    const source = uniqueSource('oauth2');
    const endpointId = await addEndpoint(h.repos, {
      source,
      url: r.url,
      authType: 'OAUTH2_CLIENT_CREDENTIALS',
      authSecret: SECRET,
      authOAuth2: { ...client(), scopes: [] },
    });
    const before = idp.tokenRequests();
    for (let i = 0; i < 3; i++) {
      const eventId = await addEvent(h.repos, { source });
      expect(await h.runFanout(eventId)).toBe('COMPLETED');
      expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS' });
    }
    expect(idp.tokenRequests()).toBe(before + 1);
    expect(new Set(r.requests.map((q) => q.headers.authorization)).size).toBe(1);
  });
});
