import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signBody, standardWebhooksSignature } from '../../../src/delivery/signature.js';

// The HMAC signatures are computed with each key kept as a KeyObject (node 24's createHmac is
// several times dearer with a Buffer or string key): the values must be the bytes they always were.
// The expected values were made by the code before that change (a Buffer or string key per call);
// the first is Standard Webhooks' own published example.

const SPEC_BODY = Buffer.from('{"test": 2432232314}');
const SPEC_KEY = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('standardWebhooksSignature', () => {
  it.each([
    {
      name: "Standard Webhooks' example",
      id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      ts: 1614265330,
      body: SPEC_BODY,
      keys: [SPEC_KEY],
      want: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    },
    {
      name: 'a key without its whsec_ prefix: the same bytes',
      id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      ts: 1614265330,
      body: SPEC_BODY,
      keys: ['MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      want: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    },
    {
      name: 'two keys (a rotation), a UTF-8 body',
      id: 'evt_1',
      ts: 1700000000,
      body: Buffer.from('héllo ✓', 'utf8'),
      keys: [SPEC_KEY, 'whsec_c2Vjb25kLWtleS1ieXRlcw=='],
      want: 'v1,iuFiHaI7b17qMKkKYpZWmmkfp8MN7A4fnVgrl2bv8Vs= v1,/DDItGqB/NMWbmLqjWOUsQVK7Dzu41yCPRlPgaitv/I=',
    },
    {
      name: 'an empty key and body',
      id: 'evt_2',
      ts: 0,
      body: Buffer.alloc(0),
      keys: ['whsec_'],
      want: 'v1,PPWRKnAAzDTppiEbiK7/LlGxZPHfaVuqDpXLehk1Mw4=',
    },
  ])('$name', ({ id, ts, body, keys, want }) => {
    expect(standardWebhooksSignature(id, ts, body, keys)).toBe(want);
    // again: the second call takes the kept key
    expect(standardWebhooksSignature(id, ts, body, keys)).toBe(want);
  });
});

describe('signBody (X-Webhook-Signature)', () => {
  it.each([
    { name: 'an ASCII secret', body: SPEC_BODY, secret: 'shhh', want: 'y0YwWCIHlHqBZh+kE+xtP4GkOFWpVtayeTMciiTJPFs=' },
    {
      name: 'a UTF-8 secret and body',
      body: Buffer.from('héllo ✓'),
      secret: 'sécret ✓',
      want: 'SxuhBk7yG9UV+YTXJk2Ux5UG7PfzF9fRZGVtlSd0W5w=',
    },
    { name: 'an empty secret', body: SPEC_BODY, secret: '', want: 'Msk6gKngW5Q3+gYtbRXzENlISsDdgj9SL1WHTzFHLvw=' },
    // the same text as a whsec key's base64 above: taken as its UTF-8 bytes here, not decoded
    {
      name: "a whsec key's text: its characters, not its base64",
      body: SPEC_BODY,
      secret: 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      want: 'XuDo49Vkz5y+6oB+l87MbMzwsOIKooBzzCZ6KIGoOfw=',
    },
  ])('$name', ({ body, secret, want }) => {
    expect(signBody(body, secret)).toBe(want);
    expect(signBody(body, secret)).toBe(want);
  });
});

describe('kept keys', () => {
  it('more keys than are kept: every signature still from its own key', () => {
    const body = Buffer.from('{"n": 1}');
    // 600 keys, past the 256 kept (the cache is emptied and refilled), each signed twice
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 600; i++) {
        const bytes = Buffer.from(`key-${i}`);
        const key = `whsec_${bytes.toString('base64')}`;
        const want = createHmac('sha256', bytes).update('e.1.').update(body).digest('base64');
        expect(standardWebhooksSignature('e', 1, body, [key])).toBe(`v1,${want}`);
        expect(signBody(body, `key-${i}`)).toBe(createHmac('sha256', `key-${i}`).update(body).digest('base64'));
      }
    }
  });
});
