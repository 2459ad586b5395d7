import { createHmac, generateKeyPairSync, randomUUID, sign, type JsonWebKey, type KeyObject } from 'node:crypto';

// Token forging for the attack battery: every token is built by hand with node:crypto, so a test
// controls each byte of header, payload and signature.

export interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: KeyObject;
  /** the private JWK (with kid, alg, use) as an identity provider holds it */
  jwk: JsonWebKey & { kid: string };
}

export function rsaKey(kid: string = randomUUID()): SigningKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, alg: 'RS256', privateKey, jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}

export function ecKey(kid: string = randomUUID()): SigningKey {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid, alg: 'ES256', privateKey, jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' } };
}

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** header.payload signed with the key (RS256 or ES256 in JOSE's raw r||s form). */
export function signJwt(key: SigningKey, payload: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const input = `${b64({ alg: key.alg, typ: 'JWT', kid: key.kid, ...header })}.${b64(payload)}`;
  const signature =
    key.alg === 'RS256'
      ? sign('sha256', Buffer.from(input), key.privateKey)
      : sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

/** The classic confusion attack: HS256 with the (public) PEM as the HMAC secret. */
export function signHs256(secret: string, payload: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const input = `${b64({ alg: 'HS256', typ: 'JWT', ...header })}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

export function unsigned(payload: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  return `${b64({ alg: 'none', typ: 'JWT', ...header })}.${b64(payload)}.`;
}

/** Replaces the payload of a real token, keeping its header and signature. */
export function tamper(token: string, change: (claims: Record<string, unknown>) => Record<string, unknown>): string {
  const [h, p, s] = token.split('.');
  const claims = JSON.parse(Buffer.from(p ?? '', 'base64url').toString()) as Record<string, unknown>;
  return `${h}.${b64(change(claims))}.${s}`;
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
