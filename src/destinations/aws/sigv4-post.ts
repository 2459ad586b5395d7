// AWS Signature Version 4 for one POST without a query (the SQS destination's SendMessage), on
// node:crypto. The SDK's signer (@smithy/signature-v4) spends about 40-90 us of CPU per request on
// its generality (async hashing through a hash class, a new HMAC key object for each of its six
// HMACs, a signing key cache looked up by yet another HMAC of the credentials): a third of a direct
// SQS send's CPU. Here the canonical request is built from the few headers given, and the signing key
// is derived once per day, region, service and credentials and kept as a KeyObject, so a request
// costs two SHA-256 (one-shot `hash()`, no Hash object) and one HMAC. The output is the SDK signer's, byte for byte, for the same
// request (test/unit/destinations/aws/sigv4-post.test.ts signs random requests both ways, and AWS's
// published test-suite cases). The credentials are the caller's (the SDK client's provider: the
// pod's identity or an assumed role, renewed there); neither the secret nor the signing key leaves
// this module, nor is either written to any log.
import { createHmac, createSecretKey, hash, type KeyObject } from 'node:crypto';

export interface SigningCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
}

export interface SigV4PostScope {
  /** the signing region (the client's) */
  region: string;
  /** the signing name, e.g. `sqs` */
  service: string;
  /**
   * Adds `x-amz-content-sha256` (the payload's hash) to the signed headers, as the SDK's signer does
   * by default (its `applyChecksum`); AWS's test-suite cases are without it. Default true.
   */
  contentSha256Header?: boolean;
}

/**
 * Signs a POST of `body` to `url` at `date`: `headers` (names in lower case, none of the signature's
 * own nor one SigV4 leaves unsigned, such as user-agent) plus `host`, `x-amz-date`, the session's
 * `x-amz-security-token` and `x-amz-content-sha256`, all signed; returns them with `authorization`.
 */
export type SigV4PostSigner = (
  credentials: SigningCredentials,
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: string | Buffer,
  date: Date,
) => Record<string, string>;

const ALGORITHM = 'AWS4-HMAC-SHA256';

export function createSigV4PostSigner(scope: SigV4PostScope): SigV4PostSigner {
  const withContentSha256 = scope.contentSha256Header ?? true;
  // the last signing key: one per client, so one entry, replaced at midnight UTC or on renewed credentials
  let cached: { shortDate: string; accessKeyId: string; secretAccessKey: string; key: KeyObject } | undefined;
  const signingKey = (credentials: SigningCredentials, shortDate: string): KeyObject => {
    if (
      cached !== undefined &&
      cached.shortDate === shortDate &&
      cached.accessKeyId === credentials.accessKeyId &&
      cached.secretAccessKey === credentials.secretAccessKey
    )
      return cached.key;
    let key: Buffer = createHmac('sha256', `AWS4${credentials.secretAccessKey}`).update(shortDate).digest();
    for (const part of [scope.region, scope.service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
    cached = {
      shortDate,
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      key: createSecretKey(key),
    };
    return cached.key;
  };
  // the canonical path of each URL: the same few per client
  const paths = new Map<string, string>();
  const canonicalPathOf = (url: URL): string => {
    let path = paths.get(url.pathname);
    if (path === undefined) {
      path = canonicalPath(url.pathname);
      if (paths.size < 64) paths.set(url.pathname, path);
    }
    return path;
  };

  // the last second's x-amz-date: concurrent sends of one second share it
  let lastSecond = Number.NaN;
  let lastDate = '';
  const amzDateOf = (date: Date): string => {
    const second = Math.floor(date.getTime() / 1000);
    if (second !== lastSecond) {
      lastSecond = second;
      lastDate = amzDate(date);
    }
    return lastDate;
  };

  return (credentials, url, headers, body, date) => {
    if (typeof credentials?.accessKeyId !== 'string' || typeof credentials.secretAccessKey !== 'string') {
      // the SDK signer's words for the same refusal
      throw new Error('Resolved credential object is not valid');
    }
    const longDate = amzDateOf(date);
    const shortDate = longDate.slice(0, 8);
    // one-shot hashes: no Hash object per call (a third of the signature's CPU for a small body)
    const payloadHash = hash('sha256', body, 'hex');
    const signed: Record<string, string> = { host: url.host, ...headers, 'x-amz-date': longDate };
    if (credentials.sessionToken) signed['x-amz-security-token'] = credentials.sessionToken;
    if (withContentSha256) signed['x-amz-content-sha256'] = payloadHash;
    const names = Object.keys(signed).sort();
    let canonicalHeaders = '';
    for (const name of names) canonicalHeaders += `${name}:${canonicalValue(signed[name] as string)}\n`;
    const signedHeaders = names.join(';');
    const canonicalRequest = `POST\n${canonicalPathOf(url)}\n\n${canonicalHeaders}\n${signedHeaders}\n${payloadHash}`;
    const credentialScope = `${shortDate}/${scope.region}/${scope.service}/aws4_request`;
    const stringToSign = `${ALGORITHM}\n${longDate}\n${credentialScope}\n${hash('sha256', canonicalRequest, 'hex')}`;
    const signature = createHmac('sha256', signingKey(credentials, shortDate)).update(stringToSign, 'utf8').digest('hex');
    signed.authorization = `${ALGORITHM} Credential=${credentials.accessKeyId}/${credentialScope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
    return signed;
  };
}

/** 2015-08-30T12:36:00.000Z → 20150830T123600Z */
export function amzDate(date: Date): string {
  const iso = date.toISOString();
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}T${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
}

const NEEDS_FOLDING = /[\r\n\t]| {2}|^ | $/;

/** A header's value as SigV4 signs it: line breaks as spaces, runs of blanks as one, one leading and trailing space off (the SDK's rule). */
function canonicalValue(value: string): string {
  // most values have nothing to fold: no new string
  if (!NEEDS_FOLDING.test(value)) return value;
  return value
    .replace(/[\r\n]/g, ' ')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');
}

/**
 * The path as every AWS service but S3 signs it: dot segments and empty segments resolved, then
 * URI-encoded again (the path of a URL is already encoded once), slashes kept (the SDK's rule).
 */
export function canonicalPath(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const normalized = `${path.startsWith('/') ? '/' : ''}${segments.join('/')}${segments.length > 0 && path.endsWith('/') ? '/' : ''}`;
  return encodeURIComponent(normalized)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%2F/g, '/');
}
