import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { amzDate, canonicalPath, createSigV4PostSigner, type SigningCredentials } from '../../../../src/destinations/aws/sigv4-post.js';
import { resolveCallTarget, signPost } from '../../../../src/transport/signed-aws-call.js';

// AWS's Signature Version 4 test suite (docs.aws.amazon.com/general/latest/gr/signature-v4-test-suite.html,
// also the SDK's suite.fixture): the POST cases without a query. Its requests carry no x-amz-content-sha256.
const SUITE_CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const SUITE_DATE = new Date('2015-08-30T12:36:00Z');
const SUITE_SCOPE = 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request';
const STS_TOKEN =
  'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==';

describe("our SigV4 for a POST (sigv4-post.ts): AWS's test suite", () => {
  it.each<{ name: string; headers: Record<string, string>; body: string; sessionToken: string | undefined; authorization: string }>([
    {
      name: 'post-vanilla',
      headers: {},
      body: '',
      sessionToken: undefined,
      authorization: `${SUITE_SCOPE}, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b`,
    },
    {
      name: 'post-header-key-sort',
      headers: { 'my-header1': 'value1' },
      body: '',
      sessionToken: undefined,
      authorization: `${SUITE_SCOPE}, SignedHeaders=host;my-header1;x-amz-date, Signature=c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c`,
    },
    {
      name: 'post-header-value-case',
      headers: { 'my-header1': 'VALUE1' },
      body: '',
      sessionToken: undefined,
      authorization: `${SUITE_SCOPE}, SignedHeaders=host;my-header1;x-amz-date, Signature=cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d`,
    },
    {
      name: 'post-sts-header-before (the session token signed)',
      headers: {},
      body: '',
      sessionToken: STS_TOKEN,
      authorization: `${SUITE_SCOPE}, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead`,
    },
    {
      name: 'post-x-www-form-urlencoded',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Param1=value1',
      sessionToken: undefined,
      authorization: `${SUITE_SCOPE}, SignedHeaders=content-type;host;x-amz-date, Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a`,
    },
    {
      name: 'post-x-www-form-urlencoded-parameters',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf8' },
      body: 'Param1=value1',
      sessionToken: undefined,
      authorization: `${SUITE_SCOPE}, SignedHeaders=content-type;host;x-amz-date, Signature=1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe`,
    },
  ])('$name', ({ headers, body, sessionToken, authorization }) => {
    const sign = createSigV4PostSigner({ region: 'us-east-1', service: 'service', contentSha256Header: false });
    const credentials = { ...SUITE_CREDENTIALS, ...(sessionToken ? { sessionToken } : {}) };
    const signed = sign(credentials, new URL('https://example.amazonaws.com/'), headers, body, SUITE_DATE);
    expect(signed.authorization).toBe(authorization);
    expect(signed['x-amz-date']).toBe('20150830T123600Z');
  });
});

/** a small seeded generator: the same "random" requests on every run */
function generator(seed: number): (n: number) => number {
  let a = seed;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (((t ^ (t >>> 14)) >>> 0) % n) as number;
  };
}

describe("our SigV4 against the SDK client's own signer (@smithy/signature-v4): random requests, byte for byte", () => {
  const random = generator(43);
  const pick = <T>(xs: readonly T[]): T => xs[random(xs.length)] as T;
  const REGIONS = ['eu-west-1', 'us-east-1', 'ap-southeast-2'];
  // few credentials and days, many requests: the signing key cache is hit, missed on renewal and at midnight
  const CREDENTIALS: SigningCredentials[] = [
    { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
    { accessKeyId: 'ASIAROLE00000000001', secretAccessKey: 'renewed+secret/1', sessionToken: 'token-one//==' },
    { accessKeyId: 'ASIAROLE00000000001', secretAccessKey: 'renewed+secret/2', sessionToken: 'token-two' },
  ];
  const DATES = ['2026-11-29T23:59:59.999Z', '2026-11-30T00:00:00.000Z', '2026-11-30T12:34:56.789Z', '2024-02-29T07:00:01.5Z'];
  const ORIGINS = [
    'https://sqs.eu-west-1.amazonaws.com',
    'https://vpce-0a1b2c3d-abcdefgh.sqs.eu-west-1.vpce.amazonaws.com',
    'http://127.0.0.1:4566',
    'http://localhost:9324',
  ];
  const PATHS = ['/', '/sqs', '/sqs/', '/a b/c', '/a/./b/../c', '//x//y//', '/%7Euser', "/it's(*)!", '/caf\u00e9/\u{1F600}'];
  const HEADER_NAMES = ['content-type', 'x-amz-target', 'x-amzn-query-mode', 'my-header1', 'x-custom', 'content-encoding', 'accept'];
  const VALUES = [
    'application/x-amz-json-1.0',
    'AmazonSQS.SendMessage',
    'true',
    '  a   b\tc  ',
    'x\ny',
    'caf\u00e9',
    '',
    ' lead',
    'trail ',
  ];
  const BODIES = ['', '{"QueueUrl":"q","MessageBody":"{}"}', 'caf\u00e9 \u{1F600} "quoted" \\ \n', 'x'.repeat(5000)];

  const cases = Array.from({ length: 300 }, (_, i) => {
    const headers: Record<string, string> = {};
    for (let n = random(HEADER_NAMES.length + 1); n > 0; n--) headers[pick(HEADER_NAMES)] = pick(VALUES);
    return {
      i,
      region: pick(REGIONS),
      credentials: pick(CREDENTIALS),
      date: new Date(pick(DATES)),
      url: new URL(`${pick(ORIGINS)}${pick(PATHS)}`),
      headers,
      body: pick(BODIES) + (random(2) === 0 ? String(i) : ''),
    };
  });

  it('signs 300 random POSTs exactly as the SDK client signs them (every header, the Authorization byte for byte)', async () => {
    const ours = new Map(REGIONS.map((region) => [region, createSigV4PostSigner({ region, service: 'sqs' })]));
    const sdkSigns = new Map<string, Awaited<ReturnType<typeof resolveCallTarget>>['sign']>();
    let compared = 0;
    for (const c of cases) {
      const key = `${c.region} ${CREDENTIALS.indexOf(c.credentials)}`;
      let sdkSign = sdkSigns.get(key);
      if (!sdkSign) {
        // the client as aws-clients.ts makes it: its signer is what send() and AWS_SQS_SEND=direct-sdk-signer sign with
        const client = new SQSClient({ region: c.region, credentials: c.credentials });
        sdkSign = (await resolveCallTarget(client)).sign;
        sdkSigns.set(key, sdkSign);
      }
      const theirs = await signPost(sdkSign, c.url, c.headers, c.body, c.date);
      const sign = ours.get(c.region) ?? expect.fail('no signer');
      const mine = sign(c.credentials, c.url, c.headers, c.body, c.date);
      expect({ case: c.i, headers: mine }).toEqual({ case: c.i, headers: theirs });
      // the destination signs the bytes it sends: the same signature as of the text
      expect(sign(c.credentials, c.url, c.headers, Buffer.from(c.body, 'utf8'), c.date)).toEqual(theirs);
      compared++;
    }
    expect(compared).toBe(300);
    // the table covers what it means to: session tokens, other paths than "/", ports, several days
    expect(cases.some((c) => c.credentials.sessionToken !== undefined)).toBe(true);
    expect(cases.some((c) => c.url.pathname.includes('%'))).toBe(true);
    expect(new Set(cases.map((c) => amzDate(c.date).slice(0, 8))).size).toBeGreaterThan(2);
  });

  it("refuses credentials without a key or secret with the SDK signer's words", () => {
    const sign = createSigV4PostSigner({ region: 'eu-west-1', service: 'sqs' });
    expect(() =>
      sign({ accessKeyId: 'A' } as SigningCredentials, new URL('https://sqs.eu-west-1.amazonaws.com/'), {}, '', new Date()),
    ).toThrow('Resolved credential object is not valid');
  });
});

describe('amzDate', () => {
  it.each([
    ['2015-08-30T12:36:00Z', '20150830T123600Z'],
    ['2026-11-29T23:59:59.999Z', '20261129T235959Z'],
    ['2000-01-01T00:00:00.001Z', '20000101T000000Z'],
  ])('%s → %s', (iso, expected) => expect(amzDate(new Date(iso))).toBe(expected));
});

describe("canonicalPath (the SDK's rule for every service but S3)", () => {
  it.each([
    ['/', '/'],
    ['', ''],
    ['/sqs', '/sqs'],
    ['/sqs/', '/sqs/'],
    ['/a/./b/../c', '/a/c'],
    ['/a/b/../../..', '/'],
    ['//x//y//', '/x/y/'],
    ['/a%20b', '/a%2520b'],
    ["/it's(*)!", '/it%27s%28%2A%29%21'],
  ])('%s → %s', (path, expected) => expect(canonicalPath(path)).toBe(expected));
});
