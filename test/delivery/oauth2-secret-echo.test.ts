import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { tokenFailureOutcome } from '../../src/destinations/http/oauth2-destination.js';
import { createOAuth2Tokens } from '../../src/destinations/http/oauth2-tokens.js';
import type { OAuth2Client } from '../../src/domain/records.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

// A token endpoint whose 503 echoes what it got: the failure's words go to the worker's log, the
// endpoint's row (migration 092) and from there the admin API and the console, so no form of the
// client secret that was sent may stay in them (ClientSecretPost's form-encoded body,
// ClientSecretBasic's base64 of the form-encoded id:secret, RFC 6749 2.3.1). review5's reproduction:
// before, only the secret's own text was redacted. Real token endpoint over HTTP, the real token client.

const SECRET = 'pa+ss/w0rd=42&x';

describe('a token endpoint echoing what it got in its 503', () => {
  let server: Receiver;
  beforeAll(async () => {
    server = await startReceiver((_n, req) => ({
      status: 503,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        error: 'temporarily_unavailable',
        error_description: `backend down, request not handled: ${String(req.headers.authorization ?? '')} ${req.body.toString('utf8')}`,
      }),
    }));
  });
  afterAll(async () => server?.close());

  const forms = [
    SECRET,
    encodeURIComponent(SECRET),
    new URLSearchParams({ s: SECRET }).toString().slice(2),
    Buffer.from(`fanout-client:${new URLSearchParams({ s: SECRET }).toString().slice(2)}`).toString('base64'),
  ];

  it.each(['ClientSecretPost', 'ClientSecretBasic'] as const)(
    '%s: the words written on the row carry no form of the secret',
    async (auth) => {
      const tokens = createOAuth2Tokens({ addressPolicy: createAddressPolicy() });
      const client: OAuth2Client = {
        tokenUrl: `${server.origin}/oauth/token`,
        clientId: 'fanout-client',
        scopes: [],
        audience: null,
        clientAuthentication: auth,
        keyId: null,
      };
      const got = await tokens.token(client, SECRET, 5_000);
      await tokens.close();
      expect(got.ok).toBe(false);
      if (got.ok) return;
      // what the worker writes on the endpoint's row (recordTokenUnavailable(endpoint, outcome.error))
      const outcome = tokenFailureOutcome(got.failure, 1);
      expect(outcome).toMatchObject({ kind: 'deferred', cause: 'token', reason: 'unavailable' });
      if (outcome.kind !== 'deferred') return;
      for (const form of forms) expect(outcome.error, `contains ${form}`).not.toContain(form);
    },
  );
});
