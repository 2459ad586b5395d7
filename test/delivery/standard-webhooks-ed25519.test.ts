import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { ed25519PublicKey, standardWebhooksEd25519Signature } from '../../src/delivery/signature.js';
import { createHttpSender, outbound, type HttpSender, type OutboundRequest } from './outbound.js';
import { startReceiver, type RecordedRequest, type Receiver } from '../support/receiver.js';

// The published JavaScript library (npm standardwebhooks 1.x) verifies v1 only. A receiver here
// verifies v1a as the specification's text says, with Node's own Ed25519 and the whpk_ public key
// alone (imported as a JWK: nothing of the signer's code or key parsing), and the signer is
// checked against the reference library's test vector.

/** A fresh key pair as a receiver and a sender would hold it: whsk_ (base64 of the seed), whpk_. */
function keyPair(): { secret: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const d = privateKey.export({ format: 'jwk' }).d!;
  const x = publicKey.export({ format: 'jwk' }).x!;
  return {
    secret: `whsk_${Buffer.from(d, 'base64url').toString('base64')}`,
    publicKey: `whpk_${Buffer.from(x, 'base64url').toString('base64')}`,
  };
}

const TOLERANCE_SECONDS = 5 * 60;

/**
 * The specification's verification: the content signed is `{webhook-id}.{webhook-timestamp}.{body}`;
 * webhook-signature is a space-separated list of `<version>,<base64 signature>`, and the message
 * verifies when any v1a signature does under a trusted public key; a timestamp outside the
 * tolerance is refused.
 */
function verifyV1a(req: RecordedRequest, whpk: string): string | undefined {
  const id = String(req.headers['webhook-id'] ?? '');
  const timestamp = String(req.headers['webhook-timestamp'] ?? '');
  const signatures = String(req.headers['webhook-signature'] ?? '').split(' ');
  if (!id || !/^[0-9]+$/.test(timestamp) || signatures.length === 0) return 'missing headers';
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return 'timestamp outside the tolerance';
  const key = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(whpk.slice('whpk_'.length), 'base64').toString('base64url') },
    format: 'jwk',
  });
  const content = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), req.body]);
  const ok = signatures.some((s) => {
    const [version, b64] = s.split(',');
    return version === 'v1a' && b64 !== undefined && verify(null, content, key, Buffer.from(b64, 'base64'));
  });
  return ok ? undefined : 'no v1a signature verifies';
}

function verifyingReceiver(whpk: string): Promise<Receiver> {
  return startReceiver({
    handler: (req, res) => {
      const problem = verifyV1a(req, whpk);
      res.statusCode = problem ? 401 : 204;
      res.end(problem ?? '');
    },
  });
}

const ed25519 = (secret: string | null, previousSecret: string | null = null): OutboundRequest['signing'] => ({
  type: 'STANDARD_WEBHOOKS_ED25519',
  secret,
  previousSecret,
});

let sender: HttpSender;
let receiver: Receiver | undefined;
beforeAll(() => {
  sender = createHttpSender({ addressPolicy: createAddressPolicy() });
});
afterAll(async () => sender.close());
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

describe('STANDARD_WEBHOOKS_ED25519 (v1a) signing', () => {
  it("matches the reference library's test vector", () => {
    // libraries/go/webhook_asymmetric_test.go, TestAsymmetricWebhookSign (the key is the seed's base64)
    const signature = standardWebhooksEd25519Signature('msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, Buffer.from('{"test": 2432232314}'), [
      'whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=',
    ]);
    expect(signature).toBe('v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==');
  });

  it('gives the whpk_ public key of a whsk_ secret key, as Node’s own key pair has it', () => {
    for (let i = 0; i < 3; i++) {
      const pair = keyPair();
      expect(ed25519PublicKey(pair.secret)).toBe(pair.publicKey);
    }
  });

  it('a receiver holding only the public key verifies the delivery, the same id on a retry', async () => {
    const pair = keyPair();
    receiver = await verifyingReceiver(pair.publicKey);
    const first = await sender.send(outbound(receiver.url, { signing: ed25519(pair.secret) }));
    const retry = outbound(receiver.url, { signing: ed25519(pair.secret) });
    const second = await sender.send({ ...retry, meta: { ...retry.meta, attempt: 2 } });
    expect(first).toMatchObject({ kind: 'success', status: 204 });
    expect(second).toMatchObject({ kind: 'success', status: 204 });
    const [a, b] = receiver.requests;
    expect(a!.headers['webhook-signature']).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(b!.headers['webhook-id']).toBe(a!.headers['webhook-id']);
  });

  it('a receiver refuses a tampered body, and a signature of another key', async () => {
    const pair = keyPair();
    receiver = await startReceiver({
      handler: (req, res) => {
        res.statusCode = verifyV1a({ ...req, body: Buffer.concat([req.body, Buffer.from(' ')]) }, pair.publicKey) ? 401 : 204;
        res.end();
      },
    });
    expect(await sender.send(outbound(receiver.url, { signing: ed25519(pair.secret) }))).toMatchObject({ kind: 'permanent', status: 401 });
    await receiver.close();
    receiver = await verifyingReceiver(pair.publicKey);
    expect(await sender.send(outbound(receiver.url, { signing: ed25519(keyPair().secret) }))).toMatchObject({
      kind: 'permanent',
      status: 401,
    });
  });

  it('rotation without a gap: receivers holding the old public key or the new one both verify', async () => {
    const old = keyPair();
    const next = keyPair();
    for (const held of [old.publicKey, next.publicKey]) {
      receiver = await verifyingReceiver(held);
      const outcome = await sender.send(outbound(receiver.url, { signing: ed25519(next.secret, old.secret) }));
      expect(outcome).toMatchObject({ kind: 'success', status: 204 });
      expect(String(receiver.requests[0]!.headers['webhook-signature']).split(' ')).toHaveLength(2);
      await receiver.close();
      receiver = undefined;
    }
  });

  it('with a Bearer token too: both reach the receiver', async () => {
    const pair = keyPair();
    receiver = await startReceiver({
      handler: (req, res) => {
        res.statusCode = !verifyV1a(req, pair.publicKey) && req.headers.authorization === 'Bearer tok' ? 204 : 401;
        res.end();
      },
    });
    const outcome = await sender.send(
      outbound(receiver.url, { auth: { type: 'BEARER', username: null, secret: 'tok' }, signing: ed25519(pair.secret) }),
    );
    expect(outcome).toMatchObject({ kind: 'success', status: 204 });
  });

  it('without a key the delivery fails permanently and sends nothing', async () => {
    receiver = await startReceiver();
    const outcome = await sender.send(outbound(receiver.url, { signing: ed25519(null) }));
    expect(outcome).toMatchObject({ kind: 'permanent' });
    expect(outcome.kind !== 'success' && outcome.error).toMatch(/STANDARD_WEBHOOKS_ED25519 signing needs a whsk_ secret key/);
    expect(receiver.requests).toHaveLength(0);
  });
});
