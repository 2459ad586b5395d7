import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hmacSha256Key } from '../../../../src/destinations/aws/hmac-sha256.js';

describe('hmacSha256Key: createHmac, byte for byte', () => {
  it.each([
    // RFC 4231's test cases 1, 2 and 6 (a key longer than the block)
    {
      name: 'RFC 4231 case 1',
      key: Buffer.alloc(20, 0x0b),
      message: 'Hi There',
      hex: 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7',
    },
    {
      name: 'RFC 4231 case 2',
      key: Buffer.from('Jefe'),
      message: 'what do ya want for nothing?',
      hex: '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    },
    {
      name: 'RFC 4231 case 6 (a 131-byte key)',
      key: Buffer.alloc(131, 0xaa),
      message: 'Test Using Larger Than Block-Size Key - Hash Key First',
      hex: '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
    },
  ])('$name', ({ key, message, hex }) => {
    expect(hmacSha256Key(key).sign(message)).toBe(hex);
    expect(createHmac('sha256', key).update(message).digest('hex')).toBe(hex);
  });

  it('matches createHmac on 500 random keys (0 to 100 bytes) and messages (ASCII and not)', () => {
    for (let i = 0; i < 500; i++) {
      const key = randomBytes(i % 101);
      const message = `${randomBytes(i % 300).toString('latin1')}\u00e9\u{1F600}${i}`;
      expect(hmacSha256Key(key).sign(message)).toBe(createHmac('sha256', key).update(message, 'utf8').digest('hex'));
    }
  });

  it('signs the same twice with one key (the padded blocks are not changed by a call)', () => {
    const key = hmacSha256Key(randomBytes(32));
    expect(key.sign('a')).toBe(key.sign('a'));
  });
});
