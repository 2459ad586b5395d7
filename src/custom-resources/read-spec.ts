import { permanent } from '../domain/errors.js';
import { DELIVERY_LIMITS } from '../domain/records.js';
import {
  OLDER_AUTH_TYPES,
  TIMEOUT_BOUNDS_MESSAGE,
  type AuthTypeSpelling,
  type EndpointAuthType,
  type WebhookEndpointSpec,
} from './specs.js';

// What code reads of a spec: one spelling of each field. The older spellings a manifest may use
// (docs/operator.md, Conventions) are accepted by the schema and normalised here, once, so that
// nothing past this point knows them.

type EndpointAuth = NonNullable<WebhookEndpointSpec['auth']>;

/** A WebhookEndpoint spec as code reads it: auth.type in PascalCase, the timeout in seconds. */
export interface EndpointSpecRead extends Omit<WebhookEndpointSpec, 'auth' | 'timeout' | 'timeoutSeconds'> {
  auth?: Omit<EndpointAuth, 'type'> & { type: EndpointAuthType };
  /** spec.timeout, else the older spec.timeoutSeconds, else the default */
  timeoutSeconds: number;
}

const authTypeOf = (t: AuthTypeSpelling): EndpointAuthType =>
  t in OLDER_AUTH_TYPES ? OLDER_AUTH_TYPES[t as keyof typeof OLDER_AUTH_TYPES] : (t as EndpointAuthType);

/** Seconds of a duration the schema's pattern has let through (10s, 1m30s, 2m). */
function durationSeconds(d: string): number {
  const unit = { h: 3600, m: 60, s: 1 } as const;
  let seconds = 0;
  for (const [, n, u] of d.matchAll(/([0-9]+)([hms])/g)) seconds += Number(n) * unit[u as keyof typeof unit];
  return seconds;
}

/**
 * The spec with its older spellings normalised. `timeout` wins over `timeoutSeconds`: the API
 * server fills in timeoutSeconds' default whether or not timeout is set. Throws an invalid_spec
 * failure for what the CRD's CEL refuses and dev mode's schema can not (a timeout out of bounds).
 */
export function readEndpointSpec(spec: WebhookEndpointSpec): EndpointSpecRead {
  const { auth, timeout, timeoutSeconds, ...rest } = spec;
  let seconds = timeoutSeconds ?? DELIVERY_LIMITS.timeoutSeconds.default;
  if (timeout !== undefined) {
    seconds = durationSeconds(timeout);
    if (seconds < DELIVERY_LIMITS.timeoutSeconds.min || seconds > DELIVERY_LIMITS.timeoutSeconds.max) {
      throw permanent('invalid_spec', TIMEOUT_BOUNDS_MESSAGE);
    }
  }
  return { ...rest, ...(auth ? { auth: { ...auth, type: authTypeOf(auth.type) } } : {}), timeoutSeconds: seconds };
}
