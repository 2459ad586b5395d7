// HMAC-SHA256 (RFC 2104) with a fixed key, as two one-shot SHA-256 (node:crypto's hash()): no Hmac
// object per call. In the worker a `createHmac` with a KeyObject cost about 36 us of CPU per call
// (its constructor, profiled in `npm run bench`'s SQS rounds) against 2 us in a process of its
// own; a one-shot hash allocates no crypto object at all. The key's two padded blocks are computed
// once (SigV4's signing key lives a day). The output is createHmac's, byte for byte
// (test/unit/destinations/aws/hmac-sha256.test.ts); a key longer than the block is hashed first, as
// RFC 2104 says.
import { hash } from 'node:crypto';

const BLOCK = 64;

export interface HmacSha256Key {
  /** HMAC-SHA256 of `message` (UTF-8), hex */
  sign(message: string): string;
}

export function hmacSha256Key(key: Buffer): HmacSha256Key {
  const k = key.length > BLOCK ? hash('sha256', key, 'buffer') : key;
  const inner = Buffer.alloc(BLOCK, 0x36);
  const outer = Buffer.alloc(BLOCK, 0x5c);
  for (let i = 0; i < k.length; i++) {
    inner[i] = (inner[i] as number) ^ (k[i] as number);
    outer[i] = (outer[i] as number) ^ (k[i] as number);
  }
  return {
    sign(message) {
      const text = Buffer.from(message, 'utf8');
      const innerHash = hash('sha256', Buffer.concat([inner, text], BLOCK + text.length), 'buffer');
      return hash('sha256', Buffer.concat([outer, innerHash], BLOCK + innerHash.length), 'hex');
    },
  };
}
