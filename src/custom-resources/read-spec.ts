import { permanent } from '../domain/errors.js';
import { DELIVERY_LIMITS } from '../domain/records.js';
import {
  AUTH_FORBIDDEN_MESSAGE,
  destinationBlockProblem,
  OAUTH2_REQUIRED_MESSAGE,
  OAUTH2_SECRET_MESSAGE,
  URL_FORBIDDEN_MESSAGE,
  URL_REQUIRED_MESSAGE,
  OLDER_AUTH_TYPES,
  SIGNING_AUTH_TYPES,
  SIGNING_TWICE_MESSAGE,
  TIMEOUT_BOUNDS_MESSAGE,
  type AuthTypeSpelling,
  type EndpointAuthType,
  type WebhookEndpointSpec,
} from './specs.js';

// What code reads of a spec: one spelling of each field. The older spellings a manifest may use
// (docs/operator.md, Conventions) are accepted by the schema and normalised here, once, so that
// nothing past this point knows them.

type EndpointAuth = NonNullable<WebhookEndpointSpec['auth']>;
type SigningAuthType = (typeof SIGNING_AUTH_TYPES)[number];

/** A WebhookEndpoint spec as code reads it: auth and signing apart, their types in PascalCase, the timeout in seconds. */
export interface EndpointSpecRead extends Omit<WebhookEndpointSpec, 'auth' | 'signing' | 'timeout' | 'timeoutSeconds'> {
  /** how the receiver knows the caller */
  auth?: Pick<EndpointAuth, 'username' | 'secretRef' | 'oauth2'> & { type: Exclude<EndpointAuthType, SigningAuthType> };
  /** how the receiver verifies the body: spec.signing, or the older combined auth.type HMAC / StandardWebhooks */
  signing?: NonNullable<WebhookEndpointSpec['signing']>;
  /** spec.timeout, else the older spec.timeoutSeconds, else the default */
  timeoutSeconds: number;
}

const authTypeOf = (t: AuthTypeSpelling): EndpointAuthType =>
  t in OLDER_AUTH_TYPES ? OLDER_AUTH_TYPES[t as keyof typeof OLDER_AUTH_TYPES] : (t as EndpointAuthType);

const isSigningAuthType = (t: EndpointAuthType): t is SigningAuthType => (SIGNING_AUTH_TYPES as readonly string[]).includes(t);

/** Seconds of a duration the schema's pattern has let through (10s, 1m30s, 2m). */
function durationSeconds(d: string): number {
  const unit = { h: 3600, m: 60, s: 1 } as const;
  let seconds = 0;
  for (const [, n, u] of d.matchAll(/([0-9]+)([hms])/g)) seconds += Number(n) * unit[u as keyof typeof unit];
  return seconds;
}

/**
 * What the CRD's CEL refuses of spec.auth.oauth2 and its secrets, in its words: checked here so
 * that dev mode (to-rows.ts) and `validate` (offline) refuse the same.
 */
function oauth2Problem(type: EndpointAuthType, auth: EndpointAuth): string | undefined {
  const o = auth.oauth2;
  if ((type === 'OAuth2ClientCredentials') !== (o !== undefined)) return OAUTH2_REQUIRED_MESSAGE;
  if (!o) return undefined;
  if (auth.secretRef) return 'auth.secretRef is not used with OAuth2ClientCredentials: the client secret is auth.oauth2.clientSecretRef';
  const jwt = o.clientAuthentication === 'PrivateKeyJwt';
  if (jwt ? !o.privateKeySecretRef || o.clientSecretRef : !o.clientSecretRef || o.privateKeySecretRef) return OAUTH2_SECRET_MESSAGE;
  if (o.keyId !== undefined && !jwt) return 'auth.oauth2.keyId is only used with clientAuthentication PrivateKeyJwt';
  return undefined;
}

/**
 * auth and signing apart. Before spec.signing, auth.type HMAC or StandardWebhooks was the
 * signing (with auth.secretRef and auth.previousSecretRef) and no auth: read as that, so a
 * manifest written then gives the same row and the same headers.
 */
function authAndSigning(spec: WebhookEndpointSpec): Pick<EndpointSpecRead, 'auth' | 'signing'> {
  const { auth, signing } = spec;
  if (!auth) return signing ? { signing } : {};
  const type = authTypeOf(auth.type);
  if (isSigningAuthType(type)) {
    if (signing) throw permanent('invalid_spec', SIGNING_TWICE_MESSAGE);
    const { secretRef, previousSecretRef } = auth;
    return { signing: { type, ...(secretRef ? { secretRef } : {}), ...(previousSecretRef ? { previousSecretRef } : {}) } };
  }
  if (auth.previousSecretRef) throw permanent('invalid_spec', 'auth.previousSecretRef is only used with auth.type StandardWebhooks');
  const oauth2Refused = oauth2Problem(type, auth);
  if (oauth2Refused) throw permanent('invalid_spec', oauth2Refused);
  const { username, secretRef, oauth2 } = auth;
  return {
    auth: { type, ...(username !== undefined ? { username } : {}), ...(secretRef ? { secretRef } : {}), ...(oauth2 ? { oauth2 } : {}) },
    ...(signing ? { signing } : {}),
  };
}

/**
 * The spec with its older spellings normalised. `timeout` wins over `timeoutSeconds`: the API
 * server fills in timeoutSeconds' default whether or not timeout is set. Throws an invalid_spec
 * failure for what the CRD's CEL refuses and dev mode's schema can not (a timeout out of bounds,
 * a signing declared twice).
 */
export function readEndpointSpec(spec: WebhookEndpointSpec): EndpointSpecRead {
  const { auth: _auth, signing: _signing, timeout, timeoutSeconds, ...rest } = spec;
  let seconds = timeoutSeconds ?? DELIVERY_LIMITS.timeoutSeconds.default;
  if (timeout !== undefined) {
    seconds = durationSeconds(timeout);
    if (seconds < DELIVERY_LIMITS.timeoutSeconds.min || seconds > DELIVERY_LIMITS.timeoutSeconds.max) {
      throw permanent('invalid_spec', TIMEOUT_BOUNDS_MESSAGE);
    }
  }
  const read = { ...rest, ...authAndSigning(spec), timeoutSeconds: seconds };
  checkDestination(read);
  return read;
}

/** What the CRD's CEL says of spec.destination beside url and auth (specs.ts), in its words. */
function checkDestination(s: EndpointSpecRead): void {
  const http = (s.destination?.type ?? 'HTTP') === 'HTTP';
  const problem =
    (s.destination ? destinationBlockProblem(s.destination) : undefined) ??
    (http && s.url === undefined ? URL_REQUIRED_MESSAGE : undefined) ??
    (!http && s.url !== undefined ? URL_FORBIDDEN_MESSAGE : undefined) ??
    (!http && s.auth !== undefined && s.auth.type !== 'None' ? AUTH_FORBIDDEN_MESSAGE : undefined);
  if (problem) throw permanent('invalid_spec', problem);
}
