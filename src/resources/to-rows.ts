import bcrypt from 'bcrypt';
import type { CredentialSpec } from '../db/credentials.js';
import type { EndpointSpec } from '../db/endpoints.js';
import { permanent } from '../domain/errors.js';
import { DELIVERY_LIMITS } from '../domain/records.js';
import { AUTO_DISABLE_REQUIRED, type InboundCredentialResource, type WebhookEndpointResource } from './schema.js';

/** Resolves a key of a Secret in the resource's namespace; undefined when the Secret or key is missing. */
export type SecretResolver = (namespace: string, name: string, key: string) => Promise<string | undefined>;

const BCRYPT_HASH = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;
export const BCRYPT_ROUNDS = 10;

async function resolve(
  secrets: SecretResolver,
  namespace: string,
  ref: { name: string; key: string },
  what: string,
): Promise<string> {
  const value = await secrets(namespace, ref.name, ref.key);
  if (value === undefined) throw permanent('secret_missing', `${what}: Secret ${namespace}/${ref.name} has no key "${ref.key}"`);
  if (value === '') throw permanent('secret_empty', `${what}: key "${ref.key}" of Secret ${namespace}/${ref.name} is empty`);
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
    throw permanent('invalid_secret', `${what}: a STANDARD_WEBHOOKS key must be whsec_ followed by the base64 of at least 16 bytes`);
  }
  return key;
}

/** WebhookEndpoint -> webhook_endpoint row, with its secret resolved. Checks what CEL checks in the CRD. */
export async function endpointRow(r: WebhookEndpointResource, secrets: SecretResolver): Promise<EndpointSpec> {
  const ns = r.metadata.namespace ?? 'default';
  const s = r.spec;
  const auth = s.auth ?? { type: 'NONE' as const };
  let authSecret: string | null = null;
  let signingSecret: string | null = null;
  let previousSigningSecret: string | null = null;
  if (auth.type === 'BASIC' && !auth.username) throw permanent('invalid_spec', 'auth.username is required for BASIC');
  if (s.autoDisable && s.autoDisable.afterConsecutiveFailures === undefined) throw permanent('invalid_spec', AUTO_DISABLE_REQUIRED);
  if (auth.previousSecretRef && auth.type !== 'STANDARD_WEBHOOKS') {
    throw permanent('invalid_spec', 'auth.previousSecretRef is only used with auth.type STANDARD_WEBHOOKS');
  }
  if (auth.type !== 'NONE') {
    if (!auth.secretRef) throw permanent('invalid_spec', `auth.secretRef is required for ${auth.type}`);
    const value = await resolve(secrets, ns, auth.secretRef, 'auth.secretRef');
    if (auth.type === 'HMAC') signingSecret = value;
    else if (auth.type === 'STANDARD_WEBHOOKS') {
      signingSecret = checkStandardWebhooksKey(value, 'auth.secretRef');
      if (auth.previousSecretRef) {
        const previous = await resolve(secrets, ns, auth.previousSecretRef, 'auth.previousSecretRef');
        previousSigningSecret = checkStandardWebhooksKey(previous, 'auth.previousSecretRef');
      }
    } else authSecret = value;
  }
  return {
    name: `${ns}/${r.metadata.name}`,
    source: s.source,
    eventType: s.eventType ?? null,
    url: s.url,
    method: s.method ?? 'POST',
    authType: auth.type,
    authUsername: auth.type === 'BASIC' ? (auth.username ?? null) : null,
    authSecret,
    signingSecret,
    previousSigningSecret,
    customHeaders: s.customHeaders ?? {},
    maxAttempts: s.maxAttempts ?? DELIVERY_LIMITS.maxAttempts.default,
    timeoutSeconds: s.timeoutSeconds ?? DELIVERY_LIMITS.timeoutSeconds.default,
    retryOnStatus: s.retryOnStatus ?? [],
    rateLimitPerSecond: s.rateLimit?.perSecond ?? null,
    maxConcurrency: s.maxConcurrency ?? null,
    active: s.active ?? true,
    autoDisableAfter: s.autoDisable?.afterConsecutiveFailures ?? DELIVERY_LIMITS.autoDisableAfter.default,
    propagateTraceContext: s.propagateTraceContext ?? true,
  };
}

/**
 * InboundCredential -> webhook_inbound_credential row. The Secret holds a password or a bcrypt
 * hash; only a hash reaches Postgres. `previousHash` avoids re-hashing (and churning the row)
 * when the password did not change.
 */
export async function credentialRow(
  r: InboundCredentialResource,
  secrets: SecretResolver,
  previousHash?: string,
): Promise<CredentialSpec> {
  const ns = r.metadata.namespace ?? 'default';
  const value = await resolve(secrets, ns, r.spec.passwordSecretRef, 'passwordSecretRef');
  let passwordHash: string;
  if (BCRYPT_HASH.test(value)) passwordHash = value;
  else if (previousHash !== undefined && (await bcrypt.compare(value, previousHash))) passwordHash = previousHash;
  else passwordHash = await bcrypt.hash(value, BCRYPT_ROUNDS);
  return {
    source: r.spec.source,
    username: r.spec.username,
    passwordHash,
    eventIdRule: r.spec.eventIdFrom ?? null,
    eventTypeRule: r.spec.eventTypeFrom ?? null,
    resourceName: `${ns}/${r.metadata.name}`,
  };
}
