import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { SignatureType, SignatureVerification } from '../domain/records.js';

/**
 * The providers' signature schemes, each as its provider documents it (docs/sources.md), over the
 * raw body bytes as received: nothing is parsed or stored before a signature is checked. Every
 * signature a header carries is tried against every secret (providers send several while they
 * rotate, and a source may list up to three secrets while it does), and every comparison is of
 * equal-length byte strings in constant time.
 */

/** Why a signature was refused: for the log and the metric, never for the sender. */
export type SignatureRefusal = 'missing_signature' | 'malformed_signature' | 'bad_signature' | 'stale_timestamp';
export type SignatureOutcome = { ok: true } | { ok: false; reason: SignatureRefusal };

/** Request headers as Node gives them: lower-case names, a repeated header joined or listed. */
export type RequestHeaders = Record<string, string | string[] | undefined>;

/** What a scheme reads from the headers: the signed content's parts and the signatures presented. */
interface Presented {
  /** the bytes signed before the body, e.g. Stripe's "{t}." */
  prefix: string;
  /** seconds since the epoch when the scheme signs a timestamp */
  timestamp?: number;
  /** the presented signatures, decoded to bytes */
  signatures: Buffer[];
}

type Parsed = Presented | { refused: 'missing_signature' | 'malformed_signature' };

interface Scheme {
  algorithm: 'sha1' | 'sha256' | 'sha512';
  /** the HMAC key's bytes of a configured secret */
  key(secret: string): Buffer;
  parse(headers: RequestHeaders, v: SignatureVerification): Parsed;
}

const HEX = /^[0-9a-fA-F]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const INTEGER = /^[0-9]{1,15}$/;

/** One header's value; a header given twice is one value joined by ", " (as Node joins unknown headers). */
function header(headers: RequestHeaders, name: string): string | undefined {
  const v = headers[name];
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v.join(', ') : v;
}

export function decodeHex(s: string): Buffer | undefined {
  return s.length % 2 === 0 && HEX.test(s) ? Buffer.from(s, 'hex') : undefined;
}

export function decodeBase64(s: string): Buffer | undefined {
  return s.length % 4 === 0 && BASE64.test(s) ? Buffer.from(s, 'base64') : undefined;
}

/** The decoded signatures, or malformed when any presented one does not decode. */
function decodedAll(values: string[], decode: (s: string) => Buffer | undefined): Buffer[] | undefined {
  const out: Buffer[] = [];
  for (const v of values) {
    const d = decode(v);
    if (d === undefined) return undefined;
    out.push(d);
  }
  return out.length > 0 ? out : undefined;
}

const utf8Key = (secret: string): Buffer => Buffer.from(secret, 'utf8');

/**
 * Stripe: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...][,v0=...]`, each v1 an
 * HMAC-SHA256 of "{t}.{body}" keyed with the whole endpoint secret (whsec_... as text). Schemes
 * other than v1 are ignored, as Stripe's libraries ignore them.
 */
function parseStripe(headers: RequestHeaders): Parsed {
  const value = header(headers, 'stripe-signature');
  if (value === undefined || value.trim() === '') return { refused: 'missing_signature' };
  let t: string | undefined;
  const v1: string[] = [];
  for (const item of value.split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) continue;
    const k = item.slice(0, eq).trim();
    const val = item.slice(eq + 1).trim();
    if (k === 't') t = val;
    else if (k === 'v1') v1.push(val);
  }
  if (t === undefined || !INTEGER.test(t) || v1.length === 0) return { refused: 'malformed_signature' };
  const signatures = decodedAll(v1, decodeHex);
  if (!signatures) return { refused: 'malformed_signature' };
  return { prefix: `${t}.`, timestamp: Number(t), signatures };
}

/** GitHub: `X-Hub-Signature-256: sha256=<hex of HMAC-SHA256 of the body>`. */
function parseGitHub(headers: RequestHeaders): Parsed {
  const value = header(headers, 'x-hub-signature-256');
  if (value === undefined || value === '') return { refused: 'missing_signature' };
  if (!value.startsWith('sha256=')) return { refused: 'malformed_signature' };
  const sig = decodeHex(value.slice('sha256='.length));
  return sig ? { prefix: '', signatures: [sig] } : { refused: 'malformed_signature' };
}

/** Shopify: `X-Shopify-Hmac-Sha256: <base64 of HMAC-SHA256 of the body>`, keyed with the app's client secret. */
function parseShopify(headers: RequestHeaders): Parsed {
  const value = header(headers, 'x-shopify-hmac-sha256');
  if (value === undefined || value === '') return { refused: 'missing_signature' };
  const sig = decodeBase64(value.trim());
  return sig ? { prefix: '', signatures: [sig] } : { refused: 'malformed_signature' };
}

/** Slack: `X-Slack-Signature: v0=<hex of HMAC-SHA256 of "v0:{timestamp}:{body}">` and `X-Slack-Request-Timestamp`. */
function parseSlack(headers: RequestHeaders): Parsed {
  const value = header(headers, 'x-slack-signature');
  const ts = header(headers, 'x-slack-request-timestamp');
  if (value === undefined || value === '' || ts === undefined || ts === '') return { refused: 'missing_signature' };
  if (!INTEGER.test(ts.trim()) || !value.startsWith('v0=')) return { refused: 'malformed_signature' };
  const sig = decodeHex(value.slice('v0='.length));
  return sig ? { prefix: `v0:${ts.trim()}:`, timestamp: Number(ts.trim()), signatures: [sig] } : { refused: 'malformed_signature' };
}

/**
 * Standard Webhooks: `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64> [v1,<base64> ...]`
 * (space-separated), each an HMAC-SHA256 of "{id}.{timestamp}.{body}" keyed with the base64-decoded
 * part of the whsec_ secret. Versions other than v1 (v1a, asymmetric) are not ours and are ignored.
 */
function parseStandardWebhooks(headers: RequestHeaders): Parsed {
  const id = header(headers, 'webhook-id');
  const ts = header(headers, 'webhook-timestamp');
  const value = header(headers, 'webhook-signature');
  if (!id || !ts || !value) return { refused: 'missing_signature' };
  if (!INTEGER.test(ts.trim())) return { refused: 'malformed_signature' };
  // space-separated; a header given twice arrives joined with ", "
  const v1 = value
    .split(/\s+/)
    .map((s) => s.replace(/,$/, ''))
    .filter((s) => s.startsWith('v1,'))
    .map((s) => s.slice('v1,'.length));
  const signatures = decodedAll(v1, decodeBase64);
  if (!signatures) return { refused: 'malformed_signature' };
  return { prefix: `${id}.${ts.trim()}.`, timestamp: Number(ts.trim()), signatures };
}

/** Generic HMAC: the configured header, an optional prefix, hex or base64; several comma-separated signatures tried. */
function parseHmac(headers: RequestHeaders, v: SignatureVerification): Parsed {
  const h = v.hmac;
  if (!h) return { refused: 'missing_signature' };
  const value = header(headers, h.header);
  if (value === undefined || value.trim() === '') return { refused: 'missing_signature' };
  const parts = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (!parts.every((p) => p.startsWith(h.prefix))) return { refused: 'malformed_signature' };
  const signatures = decodedAll(
    parts.map((p) => p.slice(h.prefix.length)),
    h.encoding === 'hex' ? decodeHex : decodeBase64,
  );
  return signatures ? { prefix: '', signatures } : { refused: 'malformed_signature' };
}

function standardWebhooksKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

const SCHEMES: Record<SignatureType, (v: SignatureVerification) => Scheme> = {
  Stripe: () => ({ algorithm: 'sha256', key: utf8Key, parse: parseStripe }),
  GitHub: () => ({ algorithm: 'sha256', key: utf8Key, parse: parseGitHub }),
  Shopify: () => ({ algorithm: 'sha256', key: utf8Key, parse: parseShopify }),
  Slack: () => ({ algorithm: 'sha256', key: utf8Key, parse: parseSlack }),
  StandardWebhooks: () => ({ algorithm: 'sha256', key: standardWebhooksKey, parse: parseStandardWebhooks }),
  HMAC: (v) => ({ algorithm: v.hmac?.algorithm ?? 'sha256', key: utf8Key, parse: parseHmac }),
};

/**
 * Each record's HMAC keys as KeyObjects, made on its first request. Node 24's createHmac turns a
 * Buffer key into a key object on every call (~11 us, as for the outbound signatures in
 * delivery/signature.ts), and every secret is tried on every request. Kept by the record itself,
 * not by a secret's text: no secret is a map key, a rotated secret comes in a new record (the
 * credential verifier reads the row again at least every 2 s: credential-verifier.ts) and so gets
 * new keys, and the keys go when nothing holds their record any more (the verifier keeps at most
 * max(CREDENTIAL_CACHE_SIZE, 100) rows), so a retired secret does not stay in memory. Records are
 * values, never changed in place.
 */
const keptKeys = new WeakMap<SignatureVerification, readonly KeyObject[]>();

function keysOf(v: SignatureVerification, scheme: Scheme): readonly KeyObject[] {
  let keys = keptKeys.get(v);
  if (keys === undefined) {
    keys = v.secrets.map((secret) => createSecretKey(scheme.key(secret)));
    keptKeys.set(v, keys);
  }
  return keys;
}

/**
 * How the HMAC keys are given to createHmac: `kept`, the record's KeyObjects (what ingest does);
 * `bytes`, a Buffer per secret and request as before they were kept (bench/signature-keys.ts
 * measures the two side by side). The same signatures verify either way.
 */
export type KeyHandling = 'kept' | 'bytes';

/**
 * Checks the signature of a request over its raw body. `nowSeconds` is the receiving clock; a
 * signed timestamp further than the tolerance from it, in the past or the future, is refused,
 * and only once a signature matched (a forged one is a bad signature, whatever its timestamp).
 */
export function verifySignature(
  v: SignatureVerification,
  body: Buffer,
  headers: RequestHeaders,
  nowSeconds: number,
  keyHandling: KeyHandling = 'kept',
): SignatureOutcome {
  const scheme = SCHEMES[v.type](v);
  const presented = scheme.parse(headers, v);
  if ('refused' in presented) return { ok: false, reason: presented.refused };
  const keys = keyHandling === 'kept' ? keysOf(v, scheme) : v.secrets.map((secret) => scheme.key(secret));
  let matched = false;
  // every secret against every signature, no early exit: a refusal costs the same whichever matched
  for (const key of keys) {
    const expected = createHmac(scheme.algorithm, key).update(presented.prefix).update(body).digest();
    for (const sig of presented.signatures) {
      // lengths are no secret (they follow from the algorithm); equal lengths compare in constant time
      if (sig.length === expected.length && timingSafeEqual(sig, expected)) matched = true;
    }
  }
  if (!matched) return { ok: false, reason: 'bad_signature' };
  if (presented.timestamp !== undefined && Math.abs(nowSeconds - presented.timestamp) > v.toleranceSeconds) {
    return { ok: false, reason: 'stale_timestamp' };
  }
  return { ok: true };
}
