import bcrypt from 'bcrypt';
import { assertEndpointExpressions } from '../content/endpoint-expressions.js';
import type { CredentialSpec } from '../db/credentials.js';
import type { EndpointSpec } from '../db/endpoints.js';
import { permanent } from '../domain/errors.js';
import { DELIVERY_LIMITS, VERIFICATION_LIMITS, type OAuth2Client, type SignatureVerification } from '../domain/records.js';
import { KEEP_FOREVER, parseDuration } from '../config/duration.js';
import {
  AUTO_DISABLE_REQUIRED,
  credentialRuleProblem,
  OAUTH2_REQUIRED_MESSAGE,
  RETENTION_ORDER_MESSAGE,
  type InboundCredentialResource,
  type InboundVerification,
  type WebhookEndpointResource,
  type EndpointSigningType,
} from './specs.js';
import { destinationRow } from './destination-rows.js';
import { readEndpointSpec, type EndpointSpecRead } from './read-spec.js';
import { endpointTls } from './endpoint-tls.js';
import { ed25519PublicKey, ed25519Seed } from '../delivery/signature.js';
import { oauth2KeyProblem } from '../destinations/http/oauth2-key.js';
import type { AuthType, SigningType } from '../domain/statuses.js';

/** Where a referenced value lives: a Secret, or (a CA bundle, which is not secret) a ConfigMap. */
export type ValueSource = 'Secret' | 'ConfigMap';

/**
 * Resolves a key of a Secret (or, `from` ConfigMap, a ConfigMap) in the resource's namespace;
 * undefined when the key is missing, a permanent secret_not_found when the object is.
 */
export type SecretResolver = (namespace: string, name: string, key: string, from?: ValueSource) => Promise<string | undefined>;

const BCRYPT_HASH = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;
export const BCRYPT_ROUNDS = 10;

async function resolve(
  secrets: SecretResolver,
  namespace: string,
  ref: { name: string; key: string },
  what: string,
  from: ValueSource = 'Secret',
): Promise<string> {
  const value = await secrets(namespace, ref.name, ref.key, from);
  if (value === undefined) throw permanent('secret_missing', `${what}: ${from} ${namespace}/${ref.name} has no key "${ref.key}"`);
  if (value === '') throw permanent('secret_empty', `${what}: key "${ref.key}" of ${from} ${namespace}/${ref.name} is empty`);
  return value;
}

/**
 * A Standard Webhooks key is `whsec_` + base64 of the key bytes (the prefix and form every
 * Standard Webhooks library reads). Checked here so a malformed key is a Ready=False condition on
 * the resource, not a failed delivery; the message never contains the value.
 */
function checkStandardWebhooksKey(value: string, what: string): string {
  const key = value.trim();
  const b64 = key.startsWith('whsec_') ? key.slice('whsec_'.length) : '';
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || Buffer.from(b64, 'base64').length < 16) {
    throw permanent('invalid_secret', `${what}: a Standard Webhooks key must be whsec_ followed by the base64 of at least 16 bytes`);
  }
  return key;
}

/**
 * A Standard Webhooks Ed25519 secret key is `whsk_` + base64 of the key's 32-byte seed (what the
 * reference libraries read). Checked here, as a whsec_ key is: a malformed one is Ready=False
 * (InvalidSecret), never a failed delivery; the message never contains the value.
 */
function checkEd25519Key(value: string, what: string): string {
  const key = value.trim();
  if (!ed25519Seed(key)) {
    throw permanent(
      'invalid_secret',
      `${what}: a Standard Webhooks Ed25519 secret key must be whsk_ followed by the base64 of its 32-byte seed`,
    );
  }
  return key;
}

/** The webhook_endpoint row's auth type and signing type (the admin API shows them) of each spec value. */
const ROW_AUTH_TYPE = {
  None: 'NONE',
  Basic: 'BASIC',
  Bearer: 'BEARER',
  OAuth2ClientCredentials: 'OAUTH2_CLIENT_CREDENTIALS',
} as const satisfies Record<NonNullable<EndpointSpecRead['auth']>['type'], AuthType>;
const ROW_SIGNING_TYPE = {
  None: 'NONE',
  HMAC: 'HMAC',
  StandardWebhooks: 'STANDARD_WEBHOOKS',
  StandardWebhooksEd25519: 'STANDARD_WEBHOOKS_ED25519',
} as const satisfies Record<EndpointSigningType, SigningType>;

/**
 * spec.auth.oauth2 -> the row's client (no secret) and its secret: the client secret, or the
 * private key of PrivateKeyJwt, checked here so that a key that can not sign is Ready=False
 * (InvalidSecret), never a failed delivery.
 */
async function oauth2Row(
  auth: NonNullable<EndpointSpecRead['auth']>,
  resolveRef: (ref: { name: string; key: string }, what: string) => Promise<string>,
): Promise<{ authSecret: string; authOAuth2: OAuth2Client }> {
  // its shape (the secret its method needs, keyId) was checked by readEndpointSpec, as the CRD's CEL checks it
  const o = auth.oauth2;
  if (!o) throw permanent('invalid_spec', OAUTH2_REQUIRED_MESSAGE);
  const clientAuthentication = o.clientAuthentication ?? 'ClientSecretBasic';
  let authSecret: string;
  if (o.privateKeySecretRef) {
    const what = 'auth.oauth2.privateKeySecretRef';
    authSecret = await resolveRef(o.privateKeySecretRef, what);
    const problem = oauth2KeyProblem(authSecret);
    if (problem) throw permanent('invalid_secret', `${what}: ${problem}`);
  } else {
    authSecret = await resolveRef(o.clientSecretRef as { name: string; key: string }, 'auth.oauth2.clientSecretRef');
  }
  return {
    authSecret,
    authOAuth2: {
      tokenUrl: o.tokenUrl,
      clientId: o.clientId,
      scopes: o.scopes ?? [],
      audience: o.audience ?? null,
      clientAuthentication,
      keyId: o.keyId ?? null,
    },
  };
}

/** WebhookEndpoint -> webhook_endpoint row, with its secret resolved. Checks what CEL checks in the CRD. */
export async function endpointRow(r: WebhookEndpointResource, secrets: SecretResolver, now: Date = new Date()): Promise<EndpointSpec> {
  const ns = r.metadata.namespace ?? 'default';
  const s = readEndpointSpec(r.spec);
  const auth = s.auth ?? { type: 'None' as const };
  const signing = s.signing ?? { type: 'None' as const };
  let authSecret: string | null = null;
  let signingSecret: string | null = null;
  let previousSigningSecret: string | null = null;
  if (auth.type === 'Basic' && !auth.username) throw permanent('invalid_spec', 'auth.username is required for Basic');
  if (s.autoDisable && s.autoDisable.afterConsecutiveFailures === undefined) throw permanent('invalid_spec', AUTO_DISABLE_REQUIRED);
  // before the secrets: an expression that does not compile is InvalidFilter / InvalidTransform / InvalidOrderingKey,
  // and the row keeps its last valid one (nothing is written)
  assertEndpointExpressions(s);
  let authOAuth2: OAuth2Client | null = null;
  if (auth.type === 'OAuth2ClientCredentials') {
    ({ authSecret, authOAuth2 } = await oauth2Row(auth, (ref, what) => resolve(secrets, ns, ref, what)));
  } else if (auth.type !== 'None') {
    if (!auth.secretRef) throw permanent('invalid_spec', `auth.secretRef is required for ${auth.type}`);
    authSecret = await resolve(secrets, ns, auth.secretRef, 'auth.secretRef');
  }
  // the field a message names is the one the manifest wrote: spec.signing, or the older combined auth
  const field = r.spec.signing ? 'signing' : 'auth';
  if (signing.previousSecretRef && signing.type !== 'StandardWebhooks' && signing.type !== 'StandardWebhooksEd25519') {
    throw permanent(
      'invalid_spec',
      `${field}.previousSecretRef is only used with ${field}.type StandardWebhooks or StandardWebhooksEd25519`,
    );
  }
  if (signing.type !== 'None') {
    if (!signing.secretRef) throw permanent('invalid_spec', `${field}.secretRef is required for ${signing.type}`);
    const value = await resolve(secrets, ns, signing.secretRef, `${field}.secretRef`);
    if (signing.type === 'HMAC') signingSecret = value;
    else {
      const check = signing.type === 'StandardWebhooks' ? checkStandardWebhooksKey : checkEd25519Key;
      signingSecret = check(value, `${field}.secretRef`);
      if (signing.previousSecretRef) {
        const previous = await resolve(secrets, ns, signing.previousSecretRef, `${field}.previousSecretRef`);
        previousSigningSecret = check(previous, `${field}.previousSecretRef`);
      }
    }
  }
  const { destination, destinationSecrets, address } = await destinationRow(s.destination, (ref, what) => resolve(secrets, ns, ref, what));
  const signingPublicKeys =
    signing.type === 'StandardWebhooksEd25519' && signingSecret !== null
      ? [signingSecret, ...(previousSigningSecret ? [previousSigningSecret] : [])].map(ed25519PublicKey)
      : [];
  const tls = await endpointTls(s.tls, (name, key, what, from) => resolve(secrets, ns, { name, key }, what, from), now);
  return {
    name: `${ns}/${r.metadata.name}`,
    source: s.source,
    eventType: s.eventType ?? null,
    // readEndpointSpec refused an HTTP destination without a url
    url: address ?? s.url ?? '',
    method: s.method ?? 'POST',
    authType: ROW_AUTH_TYPE[auth.type],
    authUsername: auth.type === 'Basic' ? (auth.username ?? null) : null,
    authSecret,
    authOAuth2,
    signingType: ROW_SIGNING_TYPE[signing.type],
    signingSecret,
    previousSigningSecret,
    signingPublicKeys,
    ...tls,
    customHeaders: s.customHeaders ?? {},
    maxAttempts: s.maxAttempts ?? DELIVERY_LIMITS.maxAttempts.default,
    timeoutSeconds: s.timeoutSeconds,
    retryOnStatus: s.retryOnStatus ?? [],
    rateLimitPerSecond: s.rateLimit?.perSecond ?? null,
    maxConcurrency: s.maxConcurrency ?? null,
    active: s.active ?? true,
    autoDisableAfter: s.autoDisable?.afterConsecutiveFailures ?? DELIVERY_LIMITS.autoDisableAfter.default,
    propagateTraceContext: s.propagateTraceContext ?? true,
    proxyDirect: s.proxy === 'Direct',
    namespace: ns,
    format: s.format ?? 'Raw',
    filter: s.filter ?? null,
    transform: s.transform?.jsonata ?? null,
    destination,
    destinationSecrets,
    ordering: s.ordering ? { key: s.ordering.key ?? null, onFailure: s.ordering.onFailure ?? 'Block' } : null,
  };
}

/** spec.retention's ages in seconds (null: the global age, 0: forever); checks what the CRD's CEL rule checks. */
export function retentionSeconds(retention: InboundCredentialResource['spec']['retention']): {
  maxAge: number | null;
  payloadMaxAge: number | null;
} {
  const seconds = (v: string | undefined, field: string): number | null => {
    if (v === undefined) return null;
    if (v === KEEP_FOREVER) return 0;
    const parsed = parseDuration(v);
    if ('problem' in parsed) throw permanent('invalid_spec', `retention.${field} ${parsed.problem}`);
    return parsed.seconds;
  };
  const maxAge = seconds(retention?.maxAge, 'maxAge');
  const payloadMaxAge = seconds(retention?.payloadMaxAge, 'payloadMaxAge');
  if (maxAge !== null && maxAge > 0 && payloadMaxAge !== null && payloadMaxAge > 0 && payloadMaxAge >= maxAge) {
    throw permanent('invalid_spec', RETENTION_ORDER_MESSAGE);
  }
  return { maxAge, payloadMaxAge };
}

/**
 * InboundCredential -> webhook_inbound_credential row. The password Secret holds a password or a
 * bcrypt hash; only a hash reaches Postgres. `previousHash` avoids re-hashing (and churning the
 * row) when the password did not change. The signing secrets of a verification are stored as they
 * are: an HMAC is checked with the secret itself.
 */
export async function credentialRow(
  r: InboundCredentialResource,
  secrets: SecretResolver,
  previousHash?: string | null,
): Promise<CredentialSpec> {
  const ns = r.metadata.namespace ?? 'default';
  const problem = credentialRuleProblem(r.spec);
  if (problem) throw permanent('invalid_spec', problem);
  const retention = retentionSeconds(r.spec.retention);
  let username: string | null = null;
  let passwordHash: string | null = null;
  if (r.spec.username !== undefined && r.spec.passwordSecretRef !== undefined) {
    const value = await resolve(secrets, ns, r.spec.passwordSecretRef, 'passwordSecretRef');
    username = r.spec.username;
    if (BCRYPT_HASH.test(value)) passwordHash = value;
    else if (previousHash && (await bcrypt.compare(value, previousHash))) passwordHash = previousHash;
    else passwordHash = await bcrypt.hash(value, BCRYPT_ROUNDS);
  }
  return {
    source: r.spec.source,
    username,
    passwordHash,
    verification: await verificationRow(r.spec.verification, secrets, ns),
    eventIdRule: r.spec.eventIdFrom ?? null,
    eventTypeRule: r.spec.eventTypeFrom ?? null,
    format: r.spec.format ?? 'Raw',
    resourceName: `${ns}/${r.metadata.name}`,
    retentionMaxAgeSeconds: retention.maxAge,
    retentionPayloadMaxAgeSeconds: retention.payloadMaxAge,
    namespace: ns,
    allowedEndpoints: r.spec.allowedEndpoints ?? null,
  };
}

/** spec.verification -> the row's verification (null for Basic), its secrets resolved and checked. */
async function verificationRow(
  v: InboundVerification | undefined,
  secrets: SecretResolver,
  ns: string,
): Promise<SignatureVerification | null> {
  if (v === undefined || v.type === 'Basic') return null;
  const refs = v.secretRefs ?? [];
  const values: string[] = [];
  for (const [i, ref] of refs.entries()) {
    const what = `verification.secretRefs[${i}]`;
    const value = await resolve(secrets, ns, ref, what);
    // the Standard Webhooks key is decoded before use: its form is checked here, not at the first call
    values.push(v.type === 'StandardWebhooks' ? checkStandardWebhooksKey(value, what) : value);
  }
  return {
    type: v.type,
    secrets: values,
    toleranceSeconds: v.toleranceSeconds ?? VERIFICATION_LIMITS.toleranceSeconds.default,
    ...(v.type === 'HMAC'
      ? {
          hmac: {
            header: (v.header ?? '').toLowerCase(),
            algorithm: v.algorithm ?? 'sha256',
            encoding: v.encoding ?? 'hex',
            prefix: v.prefix ?? '',
          },
        }
      : {}),
  };
}
