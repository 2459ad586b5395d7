import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import type { Destination, HttpTarget } from '../../src/delivery/destination.js';
import { createHttpDestination } from '../../src/destinations/http/http-destination.js';
import { createOAuth2Destination } from '../../src/destinations/http/oauth2-destination.js';
import { createOAuth2Tokens } from '../../src/destinations/http/oauth2-tokens.js';
import { startIdentityProvider, type IdentityProvider } from '../../src/dev/identity-provider.js';
import type { OAuth2Client } from '../../src/domain/records.js';
import { createNoProxy } from '../../src/config/no-proxy.js';
import { startTinyproxy, type Tinyproxy } from '../support/tinyproxy.js';
import { messageAndTarget, outbound } from './outbound.js';

// OAuth2 client credentials against the identity provider the project runs in tests
// (oidc-provider, src/dev/identity-provider.ts), with each client authentication method, and a
// real HTTP receiver that verifies every token against the provider's key set (jose): the token
// is obtained and sent, kept (counted at the provider), renewed before it expires, renewed after a
// 401, a refused client is a clear final failure, and a rotated secret or key is used at once.

const AUDIENCE = 'https://api.partner.example';
const SECRET = 'client-secret-of-basic-and-post';

const clientKey = (kid: string) => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    pem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' },
  };
};
const key1 = clientKey('k1');
const key2 = clientKey('k2');
const unregistered = clientKey('k3');

/** A receiver that answers 204 to a valid token of its audience, 401 otherwise; refuseNext makes it refuse valid ones. */
interface Receiver {
  url: string;
  seen: { clientId: string; jti: string }[];
  refused: number;
  refuseNext: number;
  close(): Promise<void>;
}

async function startReceiver(idp: IdentityProvider): Promise<Receiver> {
  const jwks = createRemoteJWKSet(new URL(`${idp.url}/.well-known/jwks.json`));
  const state = { seen: [] as Receiver['seen'], refused: 0, refuseNext: 0 };
  const server: Server = createServer((req, res) => {
    req.resume();
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const refuse = () => {
      state.refused++;
      res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
    };
    if (!token) return refuse();
    jwtVerify(token, jwks, { issuer: idp.issuer, audience: AUDIENCE }).then(
      ({ payload }) => {
        if (state.refuseNext > 0) {
          state.refuseNext--;
          return refuse();
        }
        state.seen.push({ clientId: String(payload.client_id), jti: String(payload.jti) });
        res.writeHead(204).end();
      },
      () => refuse(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return Object.assign(state, {
    url,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }) as Receiver;
}

async function startProvider(tokenTtlSeconds: number): Promise<IdentityProvider> {
  return startIdentityProvider({
    audience: AUDIENCE,
    tokenTtlSeconds,
    clients: [
      {
        clientId: 'fanout-basic',
        clientSecret: SECRET,
        permissions: ['read:webhooks', 'replay:webhooks'],
        tokenEndpointAuthMethod: 'client_secret_basic',
      },
      {
        clientId: 'fanout-post',
        clientSecret: SECRET,
        permissions: ['read:webhooks', 'replay:webhooks'],
        tokenEndpointAuthMethod: 'client_secret_post',
      },
      {
        clientId: 'fanout-jwt',
        clientSecret: randomUUID(),
        permissions: ['read:webhooks', 'replay:webhooks'],
        tokenEndpointAuthMethod: 'private_key_jwt',
        // both keys registered: the endpoint's Secret moves from the first to the second
        jwks: { keys: [key1.jwk, key2.jwk] },
      },
    ],
  });
}

let idp: IdentityProvider;
let receiver: Receiver;
let destination: Destination<HttpTarget>;
/** the tokens' clock, moved forward to make kept tokens due */
let skewMs = 0;

beforeAll(async () => {
  idp = await startProvider(3600);
  receiver = await startReceiver(idp);
  const addressPolicy = createAddressPolicy();
  destination = createOAuth2Destination(
    createHttpDestination({ addressPolicy }),
    createOAuth2Tokens({ addressPolicy, now: () => Date.now() + skewMs }),
  );
});

afterAll(async () => {
  await destination?.close();
  await receiver?.close();
  await idp?.close();
});

const clientOf = (provider: IdentityProvider, over: Partial<OAuth2Client>): OAuth2Client => ({
  tokenUrl: `${provider.url}/oauth/token`,
  clientId: 'fanout-basic',
  scopes: ['read:webhooks'],
  audience: AUDIENCE,
  clientAuthentication: 'ClientSecretBasic',
  keyId: null,
  ...over,
});

const sendVia = (dest: Destination<HttpTarget>, url: string, oauth2: OAuth2Client, secret: string) => {
  const { message, target } = messageAndTarget(outbound(url));
  return dest.send(
    message,
    { ...target, auth: { type: 'OAUTH2_CLIENT_CREDENTIALS', username: null, secret, oauth2 } },
    { timeoutMs: 5_000 },
  );
};
const send = (oauth2: OAuth2Client, secret: string) => sendVia(destination, receiver.url, oauth2, secret);

describe('OAuth2 client credentials against a real identity provider', () => {
  it.each<[string, Partial<OAuth2Client>, string]>([
    ['ClientSecretBasic', { clientId: 'fanout-basic', clientAuthentication: 'ClientSecretBasic' }, SECRET],
    ['ClientSecretPost', { clientId: 'fanout-post', clientAuthentication: 'ClientSecretPost' }, SECRET],
    ['PrivateKeyJwt', { clientId: 'fanout-jwt', clientAuthentication: 'PrivateKeyJwt', keyId: 'k1' }, key1.pem],
  ])('%s: a token is obtained and sent, and the receiver verifies it against the key set', async (_method, over, secret) => {
    const before = idp.tokenRequests();
    const outcome = await send(clientOf(idp, over), secret);
    expect(outcome).toMatchObject({ kind: 'success', status: 204 });
    expect(receiver.seen.at(-1)?.clientId).toBe(over.clientId);
    expect(idp.tokenRequests()).toBe(before + 1);
  });

  it('the token is kept: concurrent deliveries make one token request, later ones none', async () => {
    // a material of its own (another scope list): nothing kept for it yet
    const client = clientOf(idp, {
      clientId: 'fanout-post',
      clientAuthentication: 'ClientSecretPost',
      scopes: ['read:webhooks', 'replay:webhooks'],
    });
    const before = idp.tokenRequests();
    const first = await Promise.all(Array.from({ length: 10 }, () => send(client, SECRET)));
    expect(first.every((o) => o.kind === 'success')).toBe(true);
    for (let i = 0; i < 5; i++) expect(await send(client, SECRET)).toMatchObject({ kind: 'success' });
    expect(idp.tokenRequests()).toBe(before + 1);
    // all fifteen deliveries carried the same token
    expect(new Set(receiver.seen.slice(-15).map((s) => s.jti)).size).toBe(1);
  });

  it('a kept token is renewed shortly before it expires (expires_in less the margin)', async () => {
    const client = clientOf(idp, { clientId: 'fanout-basic' });
    await send(client, SECRET);
    const before = idp.tokenRequests();
    skewMs = 3600_000 - 30_000; // within the last minute of the hour-long token
    try {
      expect(await send(client, SECRET)).toMatchObject({ kind: 'success' });
      expect(idp.tokenRequests()).toBe(before + 1);
      expect(await send(client, SECRET)).toMatchObject({ kind: 'success' });
      expect(idp.tokenRequests()).toBe(before + 1);
    } finally {
      skewMs = 0;
    }
  });

  it('a 401 from the receiver drops the kept token and the request is sent again with a new one', async () => {
    const client = clientOf(idp, { clientId: 'fanout-jwt', clientAuthentication: 'PrivateKeyJwt', keyId: 'k1' });
    await send(client, key1.pem);
    const before = idp.tokenRequests();
    const refusedBefore = receiver.refused;
    receiver.refuseNext = 1;
    const outcome = await send(client, key1.pem);
    expect(outcome).toMatchObject({ kind: 'success', status: 204 });
    expect(receiver.refused).toBe(refusedBefore + 1);
    expect(idp.tokenRequests()).toBe(before + 1);
  });

  it("a new token the receiver refuses too is the attempt's 401, without a loop of token requests", async () => {
    const client = clientOf(idp, { clientId: 'fanout-basic', scopes: [] });
    await send(client, SECRET);
    const before = idp.tokenRequests();
    receiver.refuseNext = 2;
    const outcome = await send(client, SECRET);
    expect(outcome).toMatchObject({ kind: 'permanent', status: 401 });
    expect(idp.tokenRequests()).toBe(before + 1);
    // and the next delivery does not reuse the refused token
    expect(await send(client, SECRET)).toMatchObject({ kind: 'success' });
    expect(idp.tokenRequests()).toBe(before + 2);
  });

  it.each<[string, Partial<OAuth2Client>, string]>([
    ['a wrong client secret (ClientSecretBasic)', { clientId: 'fanout-basic' }, 'wrong-secret-value'],
    [
      'a wrong client secret (ClientSecretPost)',
      { clientId: 'fanout-post', clientAuthentication: 'ClientSecretPost' },
      'wrong-secret-value',
    ],
    [
      'a key the provider does not know (PrivateKeyJwt)',
      { clientId: 'fanout-jwt', clientAuthentication: 'PrivateKeyJwt' },
      unregistered.pem,
    ],
  ])(
    "%s: the delivery waits (no attempt spent) with the provider's invalid_client in its error, never the secret",
    async (_what, over, secret) => {
      const outcome = await send(clientOf(idp, over), secret);
      expect(outcome).toMatchObject({ kind: 'deferred', cause: 'token', reason: 'refused', status: null, statusClass: 'token' });
      const error = outcome.kind === 'success' ? '' : outcome.error;
      expect(error).toMatch(/^oauth2_token_refused: the token endpoint answered HTTP 40[01] invalid_client/);
      expect(error).not.toContain(secret.slice(0, 40));
    },
  );

  it('refused credentials are not asked again for a while; a refusal of the request (invalid_target) fails the attempt', async () => {
    const basic = clientOf(idp, { clientId: 'fanout-basic', scopes: [] });
    const before = idp.tokenRequests();
    for (let i = 0; i < 3; i++) expect(await send(basic, 'refused-secret-value')).toMatchObject({ kind: 'deferred', reason: 'refused' });
    expect(idp.tokenRequests()).toBe(before + 1);
    // an audience the server does not serve: the request is wrong, not the credentials
    const target = await send(clientOf(idp, { clientId: 'fanout-basic', audience: 'https://unknown.example' }), SECRET);
    expect(target).toMatchObject({ kind: 'permanent', status: null, statusClass: 'token' });
    expect(target.kind !== 'success' && target.error).toMatch(/^oauth2_token_refused: the token endpoint answered HTTP 400 invalid_target/);
  });

  it('a token endpoint that is down makes the delivery wait; one behind a cloud-metadata address is refused before connecting', async () => {
    const down = await send(clientOf(idp, { tokenUrl: 'http://127.0.0.1:1/oauth/token' }), SECRET);
    expect(down).toMatchObject({ kind: 'deferred', cause: 'token', reason: 'unavailable', statusClass: 'token' });
    expect(down.kind !== 'success' && down.error).toMatch(/^oauth2_token_unavailable: the token endpoint refused the connection/);
    const metadata = await send(clientOf(idp, { tokenUrl: 'http://169.254.169.254/latest/oauth/token' }), SECRET);
    expect(metadata).toMatchObject({ kind: 'permanent', statusClass: 'blocked' });
    expect(metadata.kind !== 'success' && metadata.error).toMatch(/^address_blocked: token endpoint: address 169\.254\.169\.254/);
  });

  it('a rotated key or secret (the Secret changed) is used from the next attempt, without a restart', async () => {
    const jwt = { clientId: 'fanout-jwt', clientAuthentication: 'PrivateKeyJwt' as const };
    expect(await send(clientOf(idp, { ...jwt, keyId: 'k1' }), key1.pem)).toMatchObject({ kind: 'success' });
    const before = idp.tokenRequests();
    // the Secret now holds the second key: a new material, so a new token signed for with it
    expect(await send(clientOf(idp, { ...jwt, keyId: 'k2' }), key2.pem)).toMatchObject({ kind: 'success' });
    expect(idp.tokenRequests()).toBe(before + 1);
    // a client secret that was wrong, then fixed in its Secret: the next attempt succeeds
    const basic = clientOf(idp, { clientId: 'fanout-basic', scopes: ['replay:webhooks'] });
    expect(await send(basic, 'the-old-secret')).toMatchObject({ kind: 'deferred', reason: 'refused', statusClass: 'token' });
    expect(await send(basic, SECRET)).toMatchObject({ kind: 'success' });
    expect(idp.tokenRequests()).toBe(before + 3);
  });
});

describe('the token request is bounded like a delivery', () => {
  let server: Server;
  let base: string;
  let dest: Destination<HttpTarget>;
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      if (req.url === '/huge') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ access_token: 'x'.repeat(100_000), token_type: 'Bearer', expires_in: 60 }));
      } else if (req.url === '/slow') {
        // never answers: the attempt's deadline ends it
      } else {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"temporarily_unavailable"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const addressPolicy = createAddressPolicy();
    // the name "metadata.internal" resolves to the cloud metadata address, as a rebinding DNS would make it
    // and "nowhere.invalid" does not resolve, as a name the DNS does not know
    const resolve = async (hostname: string) => {
      if (hostname === 'nowhere.invalid') throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' });
      return hostname === 'metadata.internal' ? [{ address: '169.254.169.254', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    };
    dest = createOAuth2Destination(createHttpDestination({ addressPolicy }), createOAuth2Tokens({ addressPolicy, resolve }));
  });
  afterAll(async () => {
    await dest?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });
  const at = (tokenUrl: string, timeoutMs = 5_000) => {
    const { message, target } = messageAndTarget(outbound(receiver.url));
    const oauth2 = clientOf(idp, { tokenUrl });
    return dest.send(
      message,
      { ...target, auth: { type: 'OAUTH2_CLIENT_CREDENTIALS', username: null, secret: SECRET, oauth2 } },
      { timeoutMs },
    );
  };

  it.each<[string, () => string, number, object, RegExp]>([
    [
      'an answer over 64 KiB is not read',
      () => `${base}/huge`,
      5_000,
      { kind: 'deferred', reason: 'unavailable', statusClass: 'token' },
      /^oauth2_token_unavailable: the token response is over 65536 bytes/,
    ],
    [
      "no answer within the attempt's timeout",
      () => `${base}/slow`,
      500,
      { kind: 'deferred', reason: 'unavailable', statusClass: 'token' },
      /^oauth2_token_unavailable: the token endpoint did not answer within 500 ms/,
    ],
    [
      'a 503 with an OAuth error',
      () => `${base}/busy`,
      5_000,
      { kind: 'deferred', reason: 'unavailable', statusClass: 'token' },
      /^oauth2_token_unavailable: the token endpoint answered HTTP 503 temporarily_unavailable/,
    ],
    [
      'a name the DNS does not know: the delivery waits, as for a token endpoint that is down',
      () => `http://nowhere.invalid:${new URL(base).port}/token`,
      5_000,
      { kind: 'deferred', reason: 'unavailable', statusClass: 'token' },
      /^oauth2_token_unavailable: .*ENOTFOUND/,
    ],
    [
      'a name that resolves to the metadata address',
      () => `http://metadata.internal:${new URL(base).port}/token`,
      5_000,
      { kind: 'permanent', statusClass: 'blocked' },
      /^address_blocked: token endpoint: address 169\.254\.169\.254 \(resolved from metadata\.internal\)/,
    ],
  ])('%s', async (_what, url, timeoutMs, expected, error) => {
    const started = Date.now();
    const outcome = await at(url(), timeoutMs);
    expect(outcome).toMatchObject({ ...expected, status: null });
    expect(outcome.kind !== 'success' && outcome.error).toMatch(error);
    expect(Date.now() - started).toBeLessThan(timeoutMs + 2_000);
  });
});

describe('through the forward proxy (DELIVERY_PROXY_URL, tinyproxy)', () => {
  let proxy: Tinyproxy;
  let dest: Destination<HttpTarget>;
  beforeAll(async () => {
    proxy = await startTinyproxy();
    const addressPolicy = createAddressPolicy();
    const forward = { url: proxy.url, noProxy: createNoProxy([]), authorization: () => null };
    dest = createOAuth2Destination(
      createHttpDestination({ addressPolicy, proxy: forward }),
      createOAuth2Tokens({ addressPolicy, proxy: forward }),
    );
  });
  afterAll(async () => {
    await dest?.close();
    await proxy?.close();
  });

  it('the token request goes through the proxy as deliveries do; a proxy that is down makes the delivery wait, not fail', async () => {
    const client = clientOf(idp, { clientId: 'fanout-post', clientAuthentication: 'ClientSecretPost', audience: AUDIENCE, scopes: [] });
    expect(await sendVia(dest, receiver.url, client, SECRET)).toMatchObject({ kind: 'success', status: 204 });
    expect(await proxy.requests()).toContainEqual(`POST ${idp.url}/oauth/token HTTP/1.1`);

    await proxy.stop();
    const other = { ...client, scopes: ['read:webhooks'] };
    const down = await sendVia(dest, receiver.url, other, SECRET);
    expect(down).toMatchObject({ kind: 'deferred', cause: 'proxy', reason: 'unreachable', statusClass: 'proxy' });
    expect(down.kind !== 'success' && down.error).toMatch(/^oauth2_token_unavailable: token request: forward proxy unreachable/);

    await proxy.start();
    expect(await sendVia(dest, receiver.url, other, SECRET)).toMatchObject({ kind: 'success' });
  });

  it("a token fetched, then the proxy fails the receiver's request: the outcome says the token endpoint answered (the worker clears its failure), a kept token says nothing", async () => {
    const addressPolicy = createAddressPolicy();
    // the token endpoint asked directly, the receiver through the proxy
    const split = createOAuth2Destination(
      createHttpDestination({ addressPolicy, proxy: { url: proxy.url, noProxy: createNoProxy([]), authorization: () => null } }),
      createOAuth2Tokens({ addressPolicy }),
    );
    try {
      const client = clientOf(idp, { clientId: 'fanout-post', clientAuthentication: 'ClientSecretPost', audience: AUDIENCE, scopes: [] });
      await proxy.stop();
      const fetched = await sendVia(split, receiver.url, client, SECRET);
      expect(fetched).toMatchObject({ kind: 'deferred', cause: 'proxy', tokenAnswer: 'token' });
      const kept = await sendVia(split, receiver.url, client, SECRET);
      expect(kept).toMatchObject({ kind: 'deferred', cause: 'proxy' });
      expect(kept).not.toHaveProperty('tokenAnswer');
    } finally {
      await proxy.start();
      await split.close();
    }
  });
});

describe('a short-lived token, renewed in real time', () => {
  let shortIdp: IdentityProvider;
  let shortReceiver: Receiver;
  let dest: Destination<HttpTarget>;
  beforeAll(async () => {
    shortIdp = await startProvider(2);
    shortReceiver = await startReceiver(shortIdp);
    const addressPolicy = createAddressPolicy();
    dest = createOAuth2Destination(createHttpDestination({ addressPolicy }), createOAuth2Tokens({ addressPolicy }));
  });
  afterAll(async () => {
    await dest?.close();
    await shortReceiver?.close();
    await shortIdp?.close();
  });

  it('after its expires_in (2 s) the next delivery gets a new token before sending: the receiver refuses none', async () => {
    const client = clientOf(shortIdp, { clientId: 'fanout-post', clientAuthentication: 'ClientSecretPost' });
    expect(await sendVia(dest, shortReceiver.url, client, SECRET)).toMatchObject({ kind: 'success' });
    expect(shortIdp.tokenRequests()).toBe(1);
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await sendVia(dest, shortReceiver.url, client, SECRET)).toMatchObject({ kind: 'success' });
    expect(shortIdp.tokenRequests()).toBe(2);
    expect(shortReceiver.refused).toBe(0);
    expect(new Set(shortReceiver.seen.map((s) => s.jti)).size).toBe(2);
  });
});
