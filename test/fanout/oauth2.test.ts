import { randomUUID } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../src/dev/identity-provider.js';
import type { OAuth2Client } from '../../src/domain/records.js';
import { addEndpoint, addEvent, deliveryOf, endpointSpec, finishedEvents, uniqueSource } from './support/harness.js';
import { counterDelta, it } from './support/fixtures.js';
import { waitingOnUnavailableTokens } from './support/token-unavailable.js';
import { eventually } from '../support/wait.js';

// An OAuth2 endpoint through the real workflow, the worker's destinations and Postgres: the
// token of the test identity provider reaches the receiver. A token endpoint that refuses our
// credentials (invalid_client), answers 503 or does not answer makes the delivery wait without
// spending an attempt or counting towards auto-disable (maxAttempts 1, autoDisableAfter 1: a
// spent attempt would FAIL it and disable the endpoint); a refusal is written on the endpoint's
// row (the operator shows it as Ready=False); the secret fixed in the row (as the operator writes
// it) clears it and the waiting deliveries go, in order.

const AUDIENCE = 'https://api.partner.example';
const SECRET = `secret-${randomUUID()}`;
let idp: IdentityProvider;

beforeAll(async () => {
  idp = await startIdentityProvider({
    audience: AUDIENCE,
    clients: ['fanout', 'flaky'].map((clientId) => ({
      clientId,
      clientSecret: SECRET,
      permissions: ['read:webhooks'],
      tokenEndpointAuthMethod: 'client_secret_basic' as const,
    })),
  });
});
afterAll(async () => {
  await idp?.close();
});

const client = (clientId = 'fanout'): OAuth2Client => ({
  tokenUrl: `${idp.url}/oauth/token`,
  clientId,
  scopes: ['read:webhooks'],
  audience: AUDIENCE,
  clientAuthentication: 'ClientSecretBasic',
  keyId: null,
});

const seqOf = (body: Buffer): number => (JSON.parse(body.toString('utf8')) as { seq: number }).seq;

describe('an OAuth2 client credentials endpoint', () => {
  it('credentials refused (invalid_client): the deliveries wait, no attempt spent, the row says why; the fixed secret sends them in order', async ({
    h,
    receiver,
  }) => {
    const r = await receiver([{ status: 204, body: '' }]);
    const source = uniqueSource('oauth2');
    const uid = `test:${randomUUID()}`;
    const name = `oauth2-refused-${randomUUID().slice(0, 8)}`;
    const wrong = endpointSpec({
      name,
      source,
      url: r.url,
      maxAttempts: 1,
      autoDisableAfter: 1,
      ordering: { key: null, onFailure: 'Block' },
      authType: 'OAUTH2_CLIENT_CREDENTIALS',
      authSecret: 'not-the-secret',
      authOAuth2: client(),
    });
    const { id: endpointId } = await h.repos.endpoints.upsertByResourceUid(uid, wrong);
    const refused = await counterDelta(h.metrics.deliveryTokenFailures, { endpoint: name, reason: 'refused' });
    const tokenRequests = idp.tokenRequests();

    const events: string[] = [];
    for (const seq of [1, 2]) events.push(await addEvent(h.repos, { source, payload: JSON.stringify({ seq }) }));
    for (const id of events) await h.start(id);
    // several tries (the test backoff: 50 ms doubling to 500 ms)
    await eventually(async () => (await refused()) >= 3, { what: 'three waits on the refused credentials' });
    const endpoint = await h.repos.endpoints.get(endpointId);
    expect(endpoint).toMatchObject({ consecutiveFailures: 0, disabledAt: null });
    expect(endpoint?.tokenRefusal?.message).toMatch(/^oauth2_token_refused: the token endpoint answered HTTP 401 invalid_client/);
    expect(endpoint?.tokenRefusal?.message).not.toContain('not-the-secret');
    for (const id of events) {
      expect(await deliveryOf(h.repos, id, endpointId)).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
    }
    expect(r.requests).toHaveLength(0);
    // refused credentials are not asked again at every try: one request for the waits so far
    expect(idp.tokenRequests() - tokenRequests).toBe(1);

    // the Secret fixed: the operator writes the row (which clears the refusal), the waiting deliveries go
    await h.repos.endpoints.upsertByResourceUid(uid, { ...wrong, authSecret: SECRET });
    expect((await h.repos.endpoints.get(endpointId))?.tokenRefusal).toBeNull();
    // ordered: a delivery that waited was left to its key's chain, which finishes its event
    expect(await finishedEvents(h, events)).toEqual(events.map(() => 'COMPLETED'));
    for (const id of events) {
      expect(await deliveryOf(h.repos, id, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1, lastResponseStatus: 204 });
    }
    expect(r.requests.map((q) => seqOf(q.body))).toEqual([1, 2]);
    const token = /^Bearer (.+)$/.exec(String(r.requests[0]?.headers.authorization))?.[1] ?? '';
    const jwks = createRemoteJWKSet(new URL(`${idp.url}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(token, jwks, { issuer: idp.issuer, audience: AUDIENCE });
    expect(payload.client_id).toBe('fanout');
    // the token is nowhere in what the service recorded
    for (const id of events) expect(JSON.stringify(await deliveryOf(h.repos, id, endpointId))).not.toContain(token);
    expect(JSON.stringify(await h.repos.endpoints.get(endpointId))).not.toContain(token);
  });

  it('a refusal the token endpoint lifts itself (same secret): the worker clears the row once it gets a token', async ({ h, receiver }) => {
    const r = await receiver([{ status: 200, body: 'ok' }]);
    const source = uniqueSource('oauth2');
    const name = `oauth2-lifted-${randomUUID().slice(0, 8)}`;
    const endpointId = await addEndpoint(h.repos, {
      name,
      source,
      url: r.url,
      maxAttempts: 1,
      authType: 'OAUTH2_CLIENT_CREDENTIALS',
      authSecret: SECRET,
      // scopes other than the next test's: another material, so neither finds the other's token kept
      authOAuth2: client('flaky'),
    });
    const refused = await counterDelta(h.metrics.deliveryTokenFailures, { endpoint: name, reason: 'refused' });
    const eventId = await addEvent(h.repos, { source });
    idp.failTokenRequests('flaky', 'invalid_client');
    try {
      await h.start(eventId);
      await eventually(async () => (await refused()) >= 1 && (await h.repos.endpoints.get(endpointId))?.tokenRefusal, {
        what: 'the refusal on the row',
      });
      expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'PENDING', attempts: 0 });
    } finally {
      idp.failTokenRequests('flaky', undefined);
    }
    // the refusal is kept 30 s by the worker before it asks again (REFUSAL_KEPT_MS)
    expect(await h.client.workflow.getHandle(eventId).result()).toBe('COMPLETED');
    expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expect((await h.repos.endpoints.get(endpointId))?.tokenRefusal).toBeNull();
  }, 90_000); // the worker asks again 30 s after a refusal (REFUSAL_KEPT_MS)

  it('the token endpoint answering 503, then not answering: the delivery waits, no attempt spent; back, it is delivered', async ({
    h,
    receiver,
  }) => {
    const r = await receiver([{ status: 200, body: 'ok' }]);
    const source = uniqueSource('oauth2');
    const name = `oauth2-flaky-${randomUUID().slice(0, 8)}`;
    const endpointId = await addEndpoint(h.repos, {
      name,
      source,
      url: r.url,
      maxAttempts: 1,
      autoDisableAfter: 1,
      // the token request shares the attempt's time: 1 s, so that a token endpoint that does not answer times out soon
      timeoutSeconds: 1,
      authType: 'OAUTH2_CLIENT_CREDENTIALS',
      authSecret: SECRET,
      authOAuth2: { ...client('flaky'), scopes: [] },
    });
    const unavailable = await counterDelta(h.metrics.deliveryTokenFailures, { endpoint: name, reason: 'unavailable' });
    const waits = await counterDelta(h.metrics.deliveryDeferrals, { endpoint: name, reason: 'token' });
    const eventId = await addEvent(h.repos, { source });
    idp.failTokenRequests('flaky', 'unavailable');
    try {
      await h.start(eventId);
      await eventually(async () => (await unavailable()) >= 3, { what: 'three waits on the 503' });
      // the endpoint's row says what failed and since when (migration 092: the admin API and console show it)
      const on503 = (await h.repos.endpoints.get(endpointId))?.tokenUnavailable;
      expect(on503).toMatchObject({ message: expect.stringMatching(/^oauth2_token_unavailable: .*HTTP 503/), since: expect.any(Date) });
      expect(on503?.message).not.toContain(SECRET);
      idp.failTokenRequests('flaky', 'timeout');
      const before = await unavailable();
      await eventually(async () => (await unavailable()) >= before + 2, { what: 'two waits on the timeout' });
      expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'PENDING', attempts: 0, lastError: null });
      expect(await h.repos.endpoints.get(endpointId)).toMatchObject({ consecutiveFailures: 0, disabledAt: null, tokenRefusal: null });
      // other words, the same spell: since is the 503's
      expect((await h.repos.endpoints.get(endpointId))?.tokenUnavailable).toEqual({
        message: expect.stringMatching(/did not answer within/),
        since: on503!.since,
      });
      expect(r.requests).toHaveLength(0);
      expect(await waits()).toBe(await unavailable());
    } finally {
      idp.failTokenRequests('flaky', undefined);
    }
    expect(await h.client.workflow.getHandle(eventId).result()).toBe('COMPLETED');
    expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expect(r.requests).toHaveLength(1);
    // a token obtained: no longer unavailable
    expect((await h.repos.endpoints.get(endpointId))?.tokenUnavailable).toBeNull();
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

  // the token endpoint was unavailable (written on the row, migration 092) and answers again: the row
  // says so at once, whatever becomes of the delivery (review5, finding 1)
  it('unavailable, then it answers 400 invalid_scope: the delivery ends FAILED on it, and the row no longer says the token endpoint is unavailable', async ({
    h,
    receiver,
  }) => {
    const r = await receiver([{ status: 200, body: 'ok' }]);
    const tokens = await receiver([
      { status: 503, body: JSON.stringify({ error: 'temporarily_unavailable' }), headers: { 'content-type': 'application/json' } },
    ]);
    const { endpointId, eventId } = await waitingOnUnavailableTokens(h, {
      url: r.url,
      tokenOrigin: tokens.origin,
      scopes: ['write:everything'],
    });

    // back, and it answers: this client may not have that scope
    tokens.setScript([
      {
        status: 400,
        body: JSON.stringify({ error: 'invalid_scope', error_description: 'write:everything is not granted' }),
        headers: { 'content-type': 'application/json' },
      },
    ]);
    await eventually(async () => (await deliveryOf(h.repos, eventId, endpointId)).status === 'FAILED', {
      timeoutMs: 90_000,
      what: 'the delivery to end FAILED on invalid_scope',
    });
    expect((await deliveryOf(h.repos, eventId, endpointId)).lastError).toMatch(/invalid_scope/);
    expect(r.requests).toHaveLength(0);
    // the token endpoint answered: the endpoint must not read WAITING "unavailable since" any more
    expect((await h.repos.endpoints.get(endpointId))?.tokenUnavailable).toBeNull();
  }, 120_000);
  it('a token granted again, but the receiver does not answer: the delivery spends its attempt and FAILs, and the row no longer says the token endpoint is unavailable', async ({
    h,
    receiver,
  }) => {
    // a receiver that is gone: its port closed, the connection refused (no status)
    const gone = await receiver([{ status: 200, body: 'ok' }]);
    const goneUrl = gone.url;
    await gone.close();
    const tokens = await receiver([
      { status: 503, body: JSON.stringify({ error: 'temporarily_unavailable' }), headers: { 'content-type': 'application/json' } },
    ]);
    const { endpointId, eventId } = await waitingOnUnavailableTokens(h, { url: goneUrl, tokenOrigin: tokens.origin, scopes: [] });

    // the token endpoint is back and grants a token
    tokens.setScript([
      {
        status: 200,
        body: JSON.stringify({ access_token: `token-${randomUUID()}`, token_type: 'Bearer', expires_in: 3600 }),
        headers: { 'content-type': 'application/json' },
      },
    ]);
    await eventually(async () => (await deliveryOf(h.repos, eventId, endpointId)).status === 'FAILED', {
      timeoutMs: 90_000,
      what: 'the delivery to end FAILED on the refused connection',
    });
    const tokenRequests = tokens.requests.length;
    expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'FAILED', attempts: 1 });
    expect(tokenRequests).toBeGreaterThanOrEqual(3);
    // a token was granted: the token endpoint is available
    expect((await h.repos.endpoints.get(endpointId))?.tokenUnavailable).toBeNull();
  }, 120_000);
});
