import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createHttpSender, type HttpSender } from './outbound.js';
import { signBody } from '../../src/delivery/signature.js';
import { outbound } from './outbound.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';

// not JSON, not UTF-8: NUL, 0xff, a lone continuation byte, then UTF-8 text with non-ASCII
const binaryBody = Buffer.concat([Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x0d, 0x0a]), Buffer.from('héllo €uro ✓', 'utf8')]);

let sender: HttpSender;
let receiver: Receiver;

beforeAll(() => {
  sender = createHttpSender({ addressPolicy: createAddressPolicy() });
});
afterAll(async () => {
  await sender.close();
});
afterEach(async () => {
  await receiver?.close();
});

describe('signBody', () => {
  it('matches the published HMAC-SHA256 test vector, base64 encoded', () => {
    // RFC 4231-style known answer: HMAC_SHA256("key", "The quick brown fox jumps over the lazy dog")
    expect(signBody(Buffer.from('The quick brown fox jumps over the lazy dog'), 'key')).toBe(
      '97yD9DBThCSxMpjmqm+xQ+9NWaFJRhdZl0edvC0aPNg=',
    );
  });
});

describe('outbound request', () => {
  it('NONE: sends the body byte-for-byte with the original content type and the X-Webhook-* headers', async () => {
    receiver = await startReceiver();
    const outcome = await sender.send(
      outbound(`${receiver.origin}/hooks/a?x=1`, { body: binaryBody, contentType: 'application/x-custom-binary' }),
    );

    expect(outcome).toMatchObject({ kind: 'success', status: 200, body: 'ok', statusClass: '2xx' });
    expect(receiver.requests).toHaveLength(1);
    const got = receiver.requests[0]!;
    expect(got.method).toBe('POST');
    expect(got.path).toBe('/hooks/a?x=1');
    expect(got.body.equals(binaryBody)).toBe(true);
    expect(got.headers['content-type']).toBe('application/x-custom-binary');
    expect(got.headers['content-length']).toBe(String(binaryBody.length));
    expect(got.headers['user-agent']).toBe('webhook-fanout/0.1');
    expect(got.headers['x-webhook-event-id']).toBe('0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10');
    expect(got.headers['x-webhook-source']).toBe('stripe');
    expect(got.headers['x-webhook-event-type']).toBe('payment.succeeded');
    expect(got.headers['x-webhook-delivery-id']).toBe('5d2c0f3e-1a7b-4c55-8d8e-2b9f0a6c7e31');
    expect(got.headers['x-webhook-attempt']).toBe('1');
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['x-webhook-signature']).toBeUndefined();
  });

  it('BASIC: Authorization is Basic base64(username:password)', async () => {
    receiver = await startReceiver({
      handler: (req, res) => {
        res.statusCode = req.headers.authorization === 'Basic YWxpY2U6czNjcjN0OnfDtnJk' ? 204 : 401;
        res.end();
      },
    });
    const outcome = await sender.send(outbound(receiver.url, { auth: { type: 'BASIC', username: 'alice', secret: 's3cr3t:wörd' } }));
    expect(outcome).toMatchObject({ kind: 'success', status: 204 });
    // the receiver's own decoding agrees
    const header = receiver.requests[0]!.headers.authorization!;
    expect(Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8')).toBe('alice:s3cr3t:wörd');
  });

  it('BEARER: Authorization is Bearer <token>', async () => {
    receiver = await startReceiver({
      handler: (req, res) => {
        res.statusCode = req.headers.authorization === 'Bearer tok_live_123' ? 200 : 401;
        res.end();
      },
    });
    const outcome = await sender.send(outbound(receiver.url, { auth: { type: 'BEARER', username: null, secret: 'tok_live_123' } }));
    expect(outcome).toMatchObject({ kind: 'success', status: 200 });
  });

  it('HMAC: the receiver recomputes base64(HMAC-SHA256(raw body, secret)) and it matches', async () => {
    const secret = 'whsec_9f8e7d';
    let verified = false;
    receiver = await startReceiver({
      handler: (req, res) => {
        const expected = createHmac('sha256', secret).update(req.body).digest();
        const given = Buffer.from(String(req.headers['x-webhook-signature']), 'base64');
        verified = given.length === expected.length && timingSafeEqual(given, expected);
        res.statusCode = verified ? 200 : 401;
        res.end();
      },
    });
    const outcome = await sender.send(
      outbound(receiver.url, {
        body: binaryBody,
        contentType: 'text/plain; charset=iso-8859-1',
        signing: { type: 'HMAC', secret: secret },
      }),
    );
    expect(outcome.kind).toBe('success');
    expect(verified).toBe(true);
    expect(receiver.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('HMAC: a different secret does not verify (the receiver check can fail)', async () => {
    receiver = await startReceiver({
      handler: (req, res) => {
        const expected = createHmac('sha256', 'the-right-secret').update(req.body).digest('base64');
        res.statusCode = req.headers['x-webhook-signature'] === expected ? 200 : 401;
        res.end();
      },
    });
    const outcome = await sender.send(outbound(receiver.url, { signing: { type: 'HMAC', secret: 'a-wrong-secret' } }));
    expect(outcome).toMatchObject({ kind: 'permanent', status: 401 });
  });

  it('BEARER and HMAC together: the receiver checks the token and recomputes the signature', async () => {
    const secret = 'hmac-secret-of-the-endpoint';
    receiver = await startReceiver({
      handler: (req, res) => {
        const expected = createHmac('sha256', secret).update(req.body).digest();
        const given = Buffer.from(String(req.headers['x-webhook-signature']), 'base64');
        const signed = given.length === expected.length && timingSafeEqual(given, expected);
        res.statusCode = req.headers.authorization === 'Bearer tok_both' && signed ? 200 : 401;
        res.end();
      },
    });
    const outcome = await sender.send(
      outbound(receiver.url, {
        body: binaryBody,
        auth: { type: 'BEARER', username: null, secret: 'tok_both' },
        signing: { type: 'HMAC', secret },
      }),
    );
    expect(outcome).toMatchObject({ kind: 'success', status: 200 });
  });

  it.each(['PUT', 'PATCH'] as const)('uses the endpoint method %s', async (method) => {
    receiver = await startReceiver();
    const outcome = await sender.send(outbound(receiver.url, { method, body: binaryBody }));
    expect(outcome.kind).toBe('success');
    expect(receiver.requests[0]!.method).toBe(method);
    expect(receiver.requests[0]!.body.equals(binaryBody)).toBe(true);
  });

  it('adds custom headers, which cannot override auth, signature, X-Webhook-* or transport headers', async () => {
    receiver = await startReceiver();
    const body = Buffer.from('{"a":1}');
    await sender.send(
      outbound(receiver.url, {
        body,
        auth: { type: 'BEARER', username: null, secret: 'real-token' },
        customHeaders: {
          'X-Tenant': 'acme',
          'x-api-version': '2024-06-01',
          authorization: 'Bearer forged',
          'X-Webhook-Signature': 'forged-signature',
          'X-WEBHOOK-EVENT-ID': 'forged-event',
          'x-webhook-attempt': '99',
          Host: 'evil.example',
          'Content-Length': '1',
          'Content-Type': 'text/forged',
        },
      }),
    );
    const got = receiver.requests[0]!;
    expect(got.headers['x-tenant']).toBe('acme');
    expect(got.headers['x-api-version']).toBe('2024-06-01');
    expect(got.headers.authorization).toBe('Bearer real-token');
    expect(got.headers['x-webhook-signature']).toBeUndefined();
    expect(got.headers['x-webhook-event-id']).toBe('0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10');
    expect(got.headers['x-webhook-attempt']).toBe('1');
    expect(got.headers.host).toBe(`127.0.0.1:${receiver.port}`);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.body.equals(body)).toBe(true);
  });

  it('a custom X-Webhook-Signature cannot replace the HMAC signature', async () => {
    receiver = await startReceiver();
    const body = Buffer.from('payload');
    await sender.send(
      outbound(receiver.url, {
        body,
        signing: { type: 'HMAC', secret: 'k' },
        customHeaders: { 'x-webhook-signature': 'forged' },
      }),
    );
    expect(receiver.requests[0]!.headers['x-webhook-signature']).toBe(createHmac('sha256', 'k').update(body).digest('base64'));
  });

  it('defaults Content-Type to application/octet-stream and omits X-Webhook-Event-Type when unknown', async () => {
    receiver = await startReceiver();
    await sender.send(
      outbound(receiver.url, { contentType: null, meta: { eventId: 'e1', source: 's', eventType: null, deliveryId: 'd1', attempt: 3 } }),
    );
    const got = receiver.requests[0]!;
    expect(got.headers['content-type']).toBe('application/octet-stream');
    expect(got.headers).not.toHaveProperty('x-webhook-event-type');
    expect(got.headers['x-webhook-attempt']).toBe('3');
  });

  it('percent-encodes a non-ASCII event type instead of failing the delivery', async () => {
    receiver = await startReceiver();
    const outcome = await sender.send(
      outbound(receiver.url, { meta: { eventId: 'e1', source: 's', eventType: 'commande.créée', deliveryId: 'd1', attempt: 1 } }),
    );
    expect(outcome.kind).toBe('success');
    expect(decodeURIComponent(String(receiver.requests[0]!.headers['x-webhook-event-type']))).toBe('commande.créée');
  });

  it('a custom header value with a line break fails permanently, sends nothing and does not echo the value', async () => {
    receiver = await startReceiver();
    const outcome = await sender.send(outbound(receiver.url, { customHeaders: { 'X-Key': 'secret-value\r\nX-Injected: 1' } }));
    expect(outcome).toMatchObject({ kind: 'permanent', status: null });
    expect(outcome.kind !== 'success' && outcome.error).toContain('X-Key');
    expect(JSON.stringify(outcome)).not.toContain('secret-value');
    expect(receiver.requests).toHaveLength(0);
  });

  it('BEARER without a token fails permanently without sending', async () => {
    receiver = await startReceiver();
    const outcome = await sender.send(outbound(receiver.url, { auth: { type: 'BEARER', username: null, secret: null } }));
    expect(outcome).toMatchObject({ kind: 'permanent', status: null });
    expect(receiver.requests).toHaveLength(0);
  });

  it('never puts the BASIC password or BEARER token into an error', async () => {
    receiver = await startReceiver({
      handler: (_req, res) => {
        res.statusCode = 403;
        res.end('forbidden');
      },
    });
    const outcome = await sender.send(outbound(receiver.url, { auth: { type: 'BEARER', username: null, secret: 'tok_do_not_leak' } }));
    expect(outcome).toMatchObject({ kind: 'permanent', status: 403, body: 'forbidden', statusClass: '4xx' });
    expect(JSON.stringify(outcome)).not.toContain('tok_do_not_leak');
  });
});
