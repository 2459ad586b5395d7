import { createHmac, createPrivateKey, createPublicKey, createSecretKey, sign, type KeyObject } from 'node:crypto';

/** `X-Webhook-Signature` value: base64(HMAC-SHA256(raw body bytes, secret)), exactly as the spec fixes it. */
export function signBody(body: Buffer, secret: string): string {
  return createHmac('sha256', hmacKey(secret, 'utf8')).update(body).digest('base64');
}

/**
 * Standard Webhooks `webhook-signature` value: `v1,<base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}"))>`
 * per key, space-separated (receivers accept the message when any one verifies, which is what lets
 * a key rotate without a gap). A key is `whsec_<base64 of the key bytes>`; the body goes in as the
 * stored bytes, never re-encoded.
 */
export function standardWebhooksSignature(id: string, timestampSeconds: number, body: Buffer, keys: readonly string[]): string {
  const prefix = Buffer.from(`${id}.${timestampSeconds}.`, 'utf8');
  return keys
    .map((key) => {
      return `v1,${createHmac('sha256', hmacKey(key, 'whsec')).update(prefix).update(body).digest('base64')}`;
    })
    .join(' ');
}

/**
 * Standard Webhooks' asymmetric scheme: `v1a,<base64(Ed25519 signature of "{id}.{timestamp}.{body}")>`
 * per key, space-separated as v1's. A secret key is `whsk_<base64 of the 32-byte Ed25519 seed>`
 * (the form the reference libraries read); receivers verify with the public key, `whpk_<base64 of
 * its 32 bytes>` (ed25519PublicKey), and never hold anything that can sign.
 */
export function standardWebhooksEd25519Signature(id: string, timestampSeconds: number, body: Buffer, keys: readonly string[]): string {
  const message = Buffer.concat([Buffer.from(`${id}.${timestampSeconds}.`, 'utf8'), body]);
  return keys.map((key) => `v1a,${sign(null, message, ed25519PrivateKey(key)).toString('base64')}`).join(' ');
}

/** `whpk_<base64>` of the public key of a `whsk_` secret key: what a receiver is given to verify with. */
export function ed25519PublicKey(secretKey: string): string {
  const spki = createPublicKey(ed25519PrivateKey(secretKey)).export({ format: 'der', type: 'spki' });
  return `whpk_${spki.subarray(spki.length - ED25519_KEY_BYTES).toString('base64')}`;
}

export const ED25519_KEY_BYTES = 32;
/** PKCS #8 of an Ed25519 key up to its seed (RFC 8410): the seed's 32 bytes follow. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The seed's bytes of a `whsk_` key, or undefined when it is not one. */
export function ed25519Seed(secretKey: string): Buffer | undefined {
  const b64 = secretKey.trim().startsWith('whsk_') ? secretKey.trim().slice('whsk_'.length) : '';
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return undefined;
  const seed = Buffer.from(b64, 'base64');
  return seed.length === ED25519_KEY_BYTES ? seed : undefined;
}

/** Parsed keys by their text: a worker signs with a handful of keys, each parsed once. */
const parsedKeys = new Map<string, KeyObject>();
const PARSED_KEYS_KEPT = 256;

/**
 * HMAC keys as KeyObjects, by how the text is read and the text: node 24's createHmac turns a
 * Buffer or string key into a key object on every call, through brand checks that throw and are
 * caught (~11 us a signature against ~2 us with a KeyObject), on every delivery of every endpoint.
 * The signatures are the same bytes (test/unit/delivery/signature.test.ts).
 */
const hmacKeys = new Map<string, KeyObject>();

/** `utf8`: the secret's UTF-8 bytes (X-Webhook-Signature); `whsec`: a Standard Webhooks key, `whsec_` and base64. */
function hmacKey(text: string, form: 'utf8' | 'whsec'): KeyObject {
  const id = `${form}:${text}`;
  const known = hmacKeys.get(id);
  if (known) return known;
  const bytes =
    form === 'utf8' ? Buffer.from(text, 'utf8') : Buffer.from(text.startsWith('whsec_') ? text.slice('whsec_'.length) : text, 'base64');
  const key = createSecretKey(bytes);
  if (hmacKeys.size >= PARSED_KEYS_KEPT) hmacKeys.clear();
  hmacKeys.set(id, key);
  return key;
}

function ed25519PrivateKey(secretKey: string): KeyObject {
  const known = parsedKeys.get(secretKey);
  if (known) return known;
  const seed = ed25519Seed(secretKey);
  // the row's CHECK and the operator (to-rows.ts) refuse such a key before it reaches a delivery
  if (!seed) throw new Error('not a whsk_ Ed25519 secret key');
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  if (parsedKeys.size >= PARSED_KEYS_KEPT) parsedKeys.clear();
  parsedKeys.set(secretKey, key);
  return key;
}
