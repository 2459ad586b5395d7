import { createHmac } from 'node:crypto';

/** `X-Webhook-Signature` value: base64(HMAC-SHA256(raw body bytes, secret)), exactly as the spec fixes it. */
export function signBody(body: Buffer, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('base64');
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
      const bytes = Buffer.from(key.startsWith('whsec_') ? key.slice('whsec_'.length) : key, 'base64');
      return `v1,${createHmac('sha256', bytes).update(prefix).update(body).digest('base64')}`;
    })
    .join(' ');
}
