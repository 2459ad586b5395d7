import { createHmac } from 'node:crypto';

/** `X-Webhook-Signature` value: base64(HMAC-SHA256(raw body bytes, secret)), exactly as the spec fixes it. */
export function signBody(body: Buffer, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('base64');
}
