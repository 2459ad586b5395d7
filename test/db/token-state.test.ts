import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { createTokenWait } from '../../src/activities/token-wait.js';
import { DEFAULT_BACKOFF } from '../../src/config/settings.js';
import { tokenFailureOutcome } from '../../src/destinations/http/oauth2-destination.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { fileDatabase } from '../support/db.js';
import { OAUTH2_CLIENT, oauth2EndpointSpec } from '../support/process-stack.js';

// The worker writes and clears migration 092's columns as the row decides, not as the endpoint it
// read when the attempt began (prepare's rows for the first attempt): two deliveries of one
// endpoint (two workers, a flapping token endpoint) interleave, and the row still ends saying what
// is true now (review5, finding 3). Real Postgres, the real repository and token-wait (as
// deliver.ts wires them).

const spec = (name: string) => oauth2EndpointSpec(name, 's');

describe('the token-unavailable state against two deliveries of one endpoint', () => {
  const t = fileDatabase();
  const tokenWait = () =>
    createTokenWait({
      metrics: createMetrics(),
      endpoints: t.repos.endpoints,
      logger: pino({ level: 'silent' }),
      backoff: DEFAULT_BACKOFF,
    });
  const down = tokenFailureOutcome({ code: 'oauth2_token_unavailable', detail: 'the token endpoint answered HTTP 503' }, 5);
  if (down.kind !== 'deferred' || down.cause !== 'token') throw new Error('expected a token wait');

  it('a delivery that read the row while it said unavailable, failing on the same words after another delivery got a token, writes them: the row says why it waits again', async () => {
    const row = await t.repos.endpoints.upsertByResourceUid('test:snap-1', spec('snap-1'));
    await t.repos.endpoints.recordTokenUnavailable(row, down.error);
    // delivery A reads its endpoint (prepare): unavailable, HTTP 503
    const readByA = (await t.repos.endpoints.get(row.id))!;
    expect(readByA.tokenUnavailable?.message).toBe(down.error);
    // delivery B gets a token: cleared
    await t.repos.endpoints.clearTokenFailures(row);
    // A's token request meets the 503 again: A waits (deferred, up to a minute) ...
    await expect(tokenWait().wait(readByA, down, 1, {})).rejects.toThrow(/waiting/);
    // ... and the row, the admin API and the console should say why
    expect((await t.repos.endpoints.get(row.id))?.tokenUnavailable?.message).toBe(down.error);
  });

  it('a delivery that read the row before another delivery recorded the token endpoint unavailable, then got a token, is cleared: the token endpoint answered', async () => {
    const row = await t.repos.endpoints.upsertByResourceUid('test:snap-2', spec('snap-2'));
    // delivery A reads its endpoint (prepare): nothing recorded
    const readByA = (await t.repos.endpoints.get(row.id))!;
    // delivery B's token request fails: recorded
    await t.repos.endpoints.recordTokenUnavailable(row, down.error);
    // A gets a token (the token endpoint is back) and its receiver answers
    await tokenWait().answered(readByA, 'token', {});
    // the token endpoint answered: the row should no longer say unavailable (an idle endpoint keeps
    // WAITING 'unavailable since' until its next delivery otherwise)
    expect((await t.repos.endpoints.get(row.id))?.tokenUnavailable).toBeNull();
  });
  it("a token from the old token URL, obtained after the operator moved the endpoint to a new one, leaves the new URL's unavailability", async () => {
    const row = await t.repos.endpoints.upsertByResourceUid('test:snap-3', spec('snap-3'));
    await t.repos.endpoints.recordTokenUnavailable(row, down.error);
    // delivery A reads its endpoint: the old token URL, unavailable
    const readByA = (await t.repos.endpoints.get(row.id))!;
    // the operator writes another token URL (cleared, as it should be) and the new one is unavailable too
    const moved = await t.repos.endpoints.upsertByResourceUid('test:snap-3', {
      ...spec('snap-3'),
      authOAuth2: { ...OAUTH2_CLIENT, tokenUrl: 'https://idp2.example/oauth/token' },
    });
    await t.repos.endpoints.recordTokenUnavailable(moved, down.error);
    expect((await t.repos.endpoints.get(row.id))?.tokenUnavailable?.message).toBe(down.error);
    // A's request to the old token URL gets a token: that says nothing about the new token URL
    await tokenWait().answered(readByA, 'token', {});
    // recordTokenUnavailable writes only for the credentials that were asked; the clear should too
    expect((await t.repos.endpoints.get(row.id))?.tokenUnavailable?.message).toBe(down.error);
  });

  it('a refusal of the request clears the unavailability only; a token clears the refusal of the credentials too', async () => {
    const row = await t.repos.endpoints.upsertByResourceUid('test:snap-4', spec('snap-4'));
    const refused = 'oauth2_token_refused: the token endpoint answered HTTP 401 invalid_client';
    await t.repos.endpoints.recordTokenRefusal(row, refused);
    await t.repos.endpoints.recordTokenUnavailable(row, down.error);
    // 400 invalid_scope: it answered (not unavailable), which says nothing of our credentials
    await tokenWait().answered(row, 'answered', {});
    expect(await t.repos.endpoints.get(row.id)).toMatchObject({ tokenUnavailable: null, tokenRefusal: { message: refused } });
    await tokenWait().answered(row, 'token', {});
    expect(await t.repos.endpoints.get(row.id)).toMatchObject({ tokenUnavailable: null, tokenRefusal: null });
  });
});
