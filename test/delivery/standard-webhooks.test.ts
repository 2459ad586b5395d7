import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createHttpSender, headersOf, outbound, type HttpSender, type OutboundRequest } from './outbound.js';
import { startReceiver } from '../support/receiver.js';
import type { RecordedRequest as ReceivedRequest, Receiver } from '../support/receiver.js';

// Receivers verify with the published Standard Webhooks library (npm standardwebhooks), exactly
// as a downstream service would; nothing here re-implements the verification.

const newKey = (): string => `whsec_${randomBytes(24).toString('base64')}`;

const swSigning = (secret: string | null, previousSecret: string | null = null): OutboundRequest['signing'] => ({
  type: 'STANDARD_WEBHOOKS',
  secret,
  previousSecret,
});

/** A receiver that answers 204 when `key` verifies the request, 401 with the library's reason otherwise. */
function verifyingReceiver(key: string, tamper: (body: Buffer) => Buffer = (b) => b): Promise<Receiver> {
  const wh = new Webhook(key);
  return startReceiver({
    handler: (req, res) => {
      try {
        wh.verify(tamper(req.body), stringHeaders(req));
        res.statusCode = 204;
        res.end();
      } catch (err) {
        res.statusCode = 401;
        res.end(err instanceof Error ? err.message : 'invalid');
      }
    },
  });
}

const stringHeaders = (req: ReceivedRequest): Record<string, string> =>
  Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));

let sender: HttpSender;
let receiver: Receiver | undefined;

beforeAll(() => {
  sender = createHttpSender({ addressPolicy: createAddressPolicy() });
});
afterAll(async () => {
  await sender.close();
});
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

describe('STANDARD_WEBHOOKS signing, verified by the published verifier', () => {
  it('signs id.timestamp.body with the whsec_ key; webhook-id is the event id on every attempt', async () => {
    const key = newKey();
    receiver = await verifyingReceiver(key);
    const first = await sender.send(outbound(receiver.url, { signing: swSigning(key) }));
    const retry = outbound(receiver.url, { signing: swSigning(key) });
    const second = await sender.send({ ...retry, meta: { ...retry.meta, attempt: 2 } });

    expect(first).toMatchObject({ kind: 'success', status: 204 });
    expect(second).toMatchObject({ kind: 'success', status: 204 });
    const [a, b] = receiver.requests;
    expect(a!.headers['webhook-id']).toBe('0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10');
    expect(b!.headers['webhook-id']).toBe(a!.headers['webhook-id']);
    expect(b!.headers['x-webhook-attempt']).toBe('2');
    expect(Number(a!.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -1);
    expect(a!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // the spec's own headers stay; Standard Webhooks adds to them
    expect(a!.headers['x-webhook-event-id']).toBe('0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10');
    expect(a!.headers['x-webhook-signature']).toBeUndefined();
    expect(a!.headers.authorization).toBeUndefined();
  });

  it('signs the stored bytes as they are: a non-ASCII body with CRLF and no trailing newline verifies', async () => {
    // (the JS reference library decodes a Buffer as UTF-8 before verifying, so a body that is not
    // UTF-8 can not be checked with it; the signer itself works on bytes and never re-encodes)
    const key = newKey();
    receiver = await verifyingReceiver(key);
    const body = Buffer.from('{"name":"Zoë","note":"€ ✓ 日本"}\r\n  ', 'utf8');
    const outcome = await sender.send(outbound(receiver.url, { body, signing: swSigning(key) }));
    expect(outcome).toMatchObject({ kind: 'success', status: 204 });
    expect(receiver.requests[0]!.body.equals(body)).toBe(true);
  });

  it('a receiver refuses a tampered body', async () => {
    const key = newKey();
    receiver = await verifyingReceiver(key, (b) => Buffer.concat([b, Buffer.from(' ')]));
    const outcome = await sender.send(outbound(receiver.url, { signing: swSigning(key) }));
    expect(outcome).toMatchObject({ kind: 'permanent', status: 401 });
    expect(outcome.kind !== 'success' && outcome.body).toMatch(/signature/i);
  });

  it('a receiver holding another key refuses the message', async () => {
    receiver = await verifyingReceiver(newKey());
    const outcome = await sender.send(outbound(receiver.url, { signing: swSigning(newKey()) }));
    expect(outcome).toMatchObject({ kind: 'permanent', status: 401 });
  });

  it('with a Bearer token too: the receiver checks both, the signature with the library', async () => {
    const key = newKey();
    const wh = new Webhook(key);
    receiver = await startReceiver({
      handler: (req, res) => {
        try {
          wh.verify(req.body, stringHeaders(req));
          res.statusCode = req.headers.authorization === 'Bearer tok_partner' ? 204 : 403;
        } catch {
          res.statusCode = 401;
        }
        res.end();
      },
    });
    const auth = { type: 'BEARER' as const, username: null, secret: 'tok_partner' };
    const outcome = await sender.send(outbound(receiver.url, { auth, signing: swSigning(key) }));
    expect(outcome).toMatchObject({ kind: 'success', status: 204 });
    // and each is checked: without the token the same signature is not enough
    const withoutToken = await sender.send(outbound(receiver.url, { signing: swSigning(key) }));
    expect(withoutToken).toMatchObject({ kind: 'permanent', status: 403 });
  });

  it('rotation without a gap: receivers holding the old key or the new one both verify', async () => {
    const oldKey = newKey();
    const nextKey = newKey();
    for (const held of [oldKey, nextKey]) {
      receiver = await verifyingReceiver(held);
      const outcome = await sender.send(outbound(receiver.url, { signing: swSigning(nextKey, oldKey) }));
      expect(outcome).toMatchObject({ kind: 'success', status: 204 });
      const signatures = String(receiver.requests[0]!.headers['webhook-signature']).split(' ');
      expect(signatures).toHaveLength(2);
      await receiver.close();
      receiver = undefined;
    }
  });

  it('the timestamp is the attempt time: a signature made ten minutes ago is refused as stale', () => {
    const key = newKey();
    const req = outbound('http://127.0.0.1:9/x', { signing: swSigning(key) });
    const wh = new Webhook(key);
    const fresh = headersOf(req);
    const stale = headersOf(req, () => Date.now() - 10 * 60_000);
    expect(() => wh.verify(req.body, fresh)).not.toThrow();
    expect(() => wh.verify(req.body, stale)).toThrow(/too old/i);
  });

  it('a custom header can not replace the Standard Webhooks headers', () => {
    const key = newKey();
    const headers = headersOf(
      outbound('http://127.0.0.1:9/x', {
        signing: swSigning(key),
        customHeaders: { 'Webhook-Id': 'forged', 'webhook-signature': 'v1,forged', 'X-Team': 'payments' },
      }),
    );
    expect(headers['webhook-id']).toBe('0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10');
    expect(headers['webhook-signature']).not.toContain('forged');
    expect(headers['X-Team']).toBe('payments');
  });

  it('without a key the delivery fails permanently, naming the problem and not the value', async () => {
    receiver = await startReceiver();
    const outcome = await sender.send(outbound(receiver.url, { signing: swSigning(null) }));
    expect(outcome).toMatchObject({ kind: 'permanent' });
    expect(outcome.kind !== 'success' && outcome.error).toMatch(/STANDARD_WEBHOOKS/);
    expect(receiver.requests).toHaveLength(0);
  });
});
