import { randomBytes } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import '@shopify/shopify-api/adapters/web-api';
import { ApiVersion, LogSeverity, shopifyApi } from '@shopify/shopify-api';
import { describe, expect, it } from 'vitest';
import type { SignatureType, SignatureVerification } from '../../../src/domain/records.js';
import { verifySignature, type KeyHandling, type RequestHeaders } from '../../../src/ingest/signatures.js';
import { PROVIDERS, provider, type Provider } from '../../support/providers.js';

// Each scheme against signatures made by its provider's own library where one signs (stripe,
// @octokit/webhooks-methods, standardwebhooks), by the documented recipe otherwise, checked
// against Slack's published example and against Shopify's own library, which only verifies (and
// GitHub's published example too); the generic HMAC by its recipe: see test/support/providers.ts.

const NOW = 1_767_000_000;
const BODY = '{"id":"evt_1","type":"invoice.paid","data":{"object":{"amount":1200}}}';
const hex64 = (): string => randomBytes(32).toString('hex');

const config = (p: Provider, secrets: string[], toleranceSeconds = 300): SignatureVerification => ({
  type: p.type,
  secrets,
  toleranceSeconds,
  ...(p.hmac ? { hmac: p.hmac } : {}),
});

const check = (p: Provider, secrets: string[], headers: RequestHeaders, body = BODY, now = NOW, tolerance = 300) =>
  verifySignature(config(p, secrets, tolerance), Buffer.from(body), headers, now);

describe.each(PROVIDERS)('$type signatures', (p) => {
  it('a signature made by the provider is accepted', async () => {
    expect(check(p, [p.secret], await p.sign(BODY, p.secret, NOW))).toEqual({ ok: true });
  });

  it('one changed byte of the body is a bad signature', async () => {
    const headers = await p.sign(BODY, p.secret, NOW);
    expect(check(p, [p.secret], headers, BODY.replace('1200', '1201'))).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('a signature made with another secret is a bad signature', async () => {
    expect(check(p, [p.secret], await p.sign(BODY, p.other, NOW))).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('rotation: a signature under any of the configured secrets is accepted, in any order', async () => {
    const headers = await p.sign(BODY, p.other, NOW);
    expect(check(p, [p.secret, p.other], headers)).toEqual({ ok: true });
    expect(check(p, [p.other, p.secret], headers)).toEqual({ ok: true });
    expect(check(p, [p.secret], headers)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('without its signature header the request is refused as unsigned', async () => {
    expect(check(p, [p.secret], {})).toEqual({ ok: false, reason: 'missing_signature' });
  });
});

describe.each(PROVIDERS.filter((p) => p.withWrongFirst))('$type, several signatures in the header', (p) => {
  it('several signatures: accepted when one of them is valid, refused when none is', async () => {
    const headers = p.withWrongFirst!(await p.sign(BODY, p.secret, NOW));
    expect(check(p, [p.secret], headers)).toEqual({ ok: true });
    expect(check(p, [p.other], headers)).toEqual({ ok: false, reason: 'bad_signature' });
  });
});

describe.each(PROVIDERS.filter((p) => p.timestamped))('$type, signed timestamps', (p) => {
  it('timestamps: at the tolerance accepted, one second past it refused, in the past and the future', async () => {
    for (const [offset, ok] of [
      [-300, true],
      [300, true],
      [-301, false],
      [301, false],
      [-3600, false],
    ] as const) {
      const headers = await p.sign(BODY, p.secret, NOW + offset);
      expect(check(p, [p.secret], headers), `signed ${offset} s from now`).toEqual(
        ok ? { ok: true } : { ok: false, reason: 'stale_timestamp' },
      );
    }
    // a shorter tolerance is the source's own
    expect(check(p, [p.secret], await p.sign(BODY, p.secret, NOW - 11), BODY, NOW, 10)).toEqual({ ok: false, reason: 'stale_timestamp' });
  });

  it('a stale timestamp under a forged signature is a bad signature, not a replay', async () => {
    expect(check(p, [p.secret], await p.sign(BODY, p.other, NOW - 3600))).toEqual({ ok: false, reason: 'bad_signature' });
  });
});

describe('malformed signature headers', () => {
  it.each<[string, SignatureType, RequestHeaders, string]>([
    ['Stripe without t=', 'Stripe', { 'stripe-signature': `v1=${hex64()}` }, 'malformed_signature'],
    ['Stripe without v1=', 'Stripe', { 'stripe-signature': `t=${NOW},v0=${hex64()}` }, 'malformed_signature'],
    ['Stripe with a t= that is not a number', 'Stripe', { 'stripe-signature': `t=soon,v1=${hex64()}` }, 'malformed_signature'],
    ['Stripe with a v1 that is not hex', 'Stripe', { 'stripe-signature': `t=${NOW},v1=zz${hex64().slice(2)}` }, 'malformed_signature'],
    ['Stripe, an empty header', 'Stripe', { 'stripe-signature': ' ' }, 'missing_signature'],
    ['Stripe, a short v1 (decodes, never equal)', 'Stripe', { 'stripe-signature': `t=${NOW},v1=abcd` }, 'bad_signature'],
    ['GitHub with sha1= only', 'GitHub', { 'x-hub-signature-256': `sha1=${hex64().slice(0, 40)}` }, 'malformed_signature'],
    ['GitHub, odd hex', 'GitHub', { 'x-hub-signature-256': `sha256=${hex64().slice(1)}` }, 'malformed_signature'],
    ['GitHub, the old X-Hub-Signature alone', 'GitHub', { 'x-hub-signature': `sha1=${hex64().slice(0, 40)}` }, 'missing_signature'],
    ['Shopify, not base64', 'Shopify', { 'x-shopify-hmac-sha256': 'not base64!' }, 'malformed_signature'],
    ['Shopify, hex instead of base64 (decodes as base64, never equal)', 'Shopify', { 'x-shopify-hmac-sha256': hex64() }, 'bad_signature'],
    ['Slack without its timestamp', 'Slack', { 'x-slack-signature': `v0=${hex64()}` }, 'missing_signature'],
    [
      'Slack with a v1= signature',
      'Slack',
      { 'x-slack-signature': `v1=${hex64()}`, 'x-slack-request-timestamp': String(NOW) },
      'malformed_signature',
    ],
    [
      'Slack with a timestamp in ms text',
      'Slack',
      { 'x-slack-signature': `v0=${hex64()}`, 'x-slack-request-timestamp': '1.5e9' },
      'malformed_signature',
    ],
    [
      'Standard Webhooks without webhook-id',
      'StandardWebhooks',
      { 'webhook-timestamp': String(NOW), 'webhook-signature': 'v1,AAAA' },
      'missing_signature',
    ],
    [
      'Standard Webhooks with only v1a signatures',
      'StandardWebhooks',
      { 'webhook-id': 'm', 'webhook-timestamp': String(NOW), 'webhook-signature': 'v1a,AAAA' },
      'malformed_signature',
    ],
    [
      'Standard Webhooks with a bad base64 v1',
      'StandardWebhooks',
      { 'webhook-id': 'm', 'webhook-timestamp': String(NOW), 'webhook-signature': 'v1,@@@@' },
      'malformed_signature',
    ],
    ['HMAC without the prefix', 'HMAC', { 'x-acme-signature': randomBytes(64).toString('base64') }, 'malformed_signature'],
    ['HMAC in another header', 'HMAC', { 'x-hub-signature-256': 'sha512=AAAA' }, 'missing_signature'],
  ])('%s', (_what, type, headers, reason) => {
    const p = provider(type);
    expect(check(p, [p.secret], headers)).toEqual({ ok: false, reason });
  });

  it('a header repeated by the sender (joined by Node with ", ") still yields each signature', async () => {
    const p = provider('StandardWebhooks');
    const h = await p.sign(BODY, p.secret, NOW);
    expect(
      check(p, [p.secret], { ...h, 'webhook-signature': `v1,${randomBytes(32).toString('base64')}, ${h['webhook-signature']}` }),
    ).toEqual({ ok: true });
  });
});

describe('published examples', () => {
  it("Slack's example request from api.slack.com (Verifying requests from Slack) verifies with its secret", () => {
    // the signing secret, timestamp, body and signature as Slack's documentation shows them
    const body =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    const v: SignatureVerification = { type: 'Slack', secrets: ['8f742231b10e8888abcd99yyyzzz85a5'], toleranceSeconds: 300 };
    const headers = {
      'x-slack-request-timestamp': '1531420618',
      'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
    };
    expect(verifySignature(v, Buffer.from(body), headers, 1531420618 + 60)).toEqual({ ok: true });
    expect(verifySignature(v, Buffer.from(body.replace('foobar', 'foobaz')), headers, 1531420618 + 60)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    // the same request five minutes and one second later is a replay
    expect(verifySignature(v, Buffer.from(body), headers, 1531420618 + 301)).toEqual({ ok: false, reason: 'stale_timestamp' });
  });

  it("GitHub's example from docs.github.com (Validating webhook deliveries) matches @octokit/webhooks-methods and verifies", async () => {
    const expected = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(await githubSign("It's a Secret to Everybody", 'Hello, World!')).toBe(expected);
    const v: SignatureVerification = { type: 'GitHub', secrets: ["It's a Secret to Everybody"], toleranceSeconds: 300 };
    expect(verifySignature(v, Buffer.from('Hello, World!'), { 'x-hub-signature-256': expected }, NOW)).toEqual({ ok: true });
  });
});

describe("Shopify: the documented recipe against Shopify's own library (@shopify/shopify-api webhooks.validate)", () => {
  // Shopify's library verifies and can not sign: what it accepts and refuses must be what we do
  const p = provider('Shopify');
  const shopify = shopifyApi({
    apiKey: 'app-key',
    apiSecretKey: p.secret,
    scopes: [],
    hostName: 'localhost',
    apiVersion: ApiVersion.October25,
    isEmbeddedApp: false,
    logger: { level: LogSeverity.Error },
  });
  const verdicts = async (body: string, headers: Record<string, string>) => {
    const all = { ...p.event(1).headers, 'x-shopify-api-version': ApiVersion.October25, ...headers };
    const theirs = await shopify.webhooks.validate({
      rawBody: body,
      rawRequest: new Request('https://ingest.example/api/webhooks/shopify', { method: 'POST', headers: all, body }),
    });
    return { shopify: theirs.valid, ours: check(p, [p.secret], all, body).ok };
  };
  it.each([
    ['an order', BODY],
    ['unicode and odd spacing', '{ "title" : "caf\u00e9 \u2014 \ud83d\ude00",\n  "n": 1 }'],
  ] as const)('%s: signed by the recipe, valid for both; one byte changed or another secret, invalid for both', async (_what, body) => {
    const signed = await p.sign(body, p.secret, 0);
    expect(await verdicts(body, signed)).toEqual({ shopify: true, ours: true });
    expect(await verdicts(`${body} `, signed)).toEqual({ shopify: false, ours: false });
    expect(await verdicts(body, await p.sign(body, p.other, 0))).toEqual({ shopify: false, ours: false });
  });
});

describe.each(PROVIDERS)('$type: the HMAC keys kept as KeyObjects, per record', (p) => {
  // ingest keeps each record's keys as KeyObjects (node's createHmac is several times dearer with
  // a Buffer key): what verifies must be what verified with a Buffer key per call, on a record's
  // first request and on the next ones, and a record with a rotated secret must use its own keys.
  // The records are shared by the cases, in order, as ingest shares a credential's row.
  const current = config(p, [p.secret]);
  const rotated = config(p, [p.other]);
  const both = config(p, [p.secret, p.other]);
  const changed = BODY.replace('1200', '1201');
  it.each<{ name: string; record: SignatureVerification; signedWith: 'secret' | 'other'; sent: string; ok: boolean }>([
    { name: 'the signed bytes, signed with the secret', record: current, signedWith: 'secret', sent: BODY, ok: true },
    { name: 'one byte changed', record: current, signedWith: 'secret', sent: changed, ok: false },
    { name: 'signed with another secret', record: current, signedWith: 'other', sent: BODY, ok: false },
    { name: "rotated: the new record's secret", record: rotated, signedWith: 'other', sent: BODY, ok: true },
    { name: 'rotated: the retired secret', record: rotated, signedWith: 'secret', sent: BODY, ok: false },
    { name: 'two secrets: the second', record: both, signedWith: 'other', sent: BODY, ok: true },
    { name: 'two secrets: one byte changed', record: both, signedWith: 'secret', sent: changed, ok: false },
    { name: 'the first record again, after the others', record: current, signedWith: 'secret', sent: BODY, ok: true },
  ])('$name', async ({ record, signedWith, sent, ok }) => {
    // signed over BODY, as the provider's library signs it
    const headers = await p.sign(BODY, signedWith === 'secret' ? p.secret : p.other, NOW);
    const want = ok ? { ok: true } : { ok: false, reason: 'bad_signature' };
    for (const keys of ['kept', 'bytes', 'kept'] satisfies KeyHandling[]) {
      expect(verifySignature(record, Buffer.from(sent), headers, NOW, keys), keys).toEqual(want);
    }
  });
});
