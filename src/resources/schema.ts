import { Type, type Static } from 'typebox';
import { DELIVERY_LIMITS, SOURCE_PATTERN } from '../domain/records.js';

// The custom resources' specs (webhookfanout.io/v1alpha1). One source of truth: dev mode validates
// manifests with these schemas, and the CRDs are generated from them.

export const API_GROUP = 'webhookfanout.io';
export const API_VERSION = 'v1alpha1';
export { SOURCE_PATTERN };

export const SecretKeyRef = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253, description: 'name of a Secret in the same namespace' }),
    key: Type.String({ minLength: 1, maxLength: 253, description: 'key within the Secret' }),
  },
  { additionalProperties: false },
);

export const ExtractionRule = Type.Object(
  {
    jsonPath: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'dot path into a JSON body, e.g. data.id' })),
    header: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'request header name' })),
  },
  { additionalProperties: false },
);

/**
 * http(s) and no userinfo: the authority (up to the first / ? # or \\, as URL parsers read it)
 * holds no @. A password in the URL would be stored and shown as configuration, not as a secret.
 */
export const URL_WITHOUT_CREDENTIALS = '^https?://[^/?#\\\\@]+([/?#\\\\].*)?$';
export const URL_CREDENTIALS_MESSAGE =
  'must be an http:// or https:// URL without credentials (user:password@host): put them in spec.auth (BASIC or BEARER with a secretRef)';

/** What the CRD's CEL rule (and dev mode) says when an autoDisable block does not name its threshold. */
export const AUTO_DISABLE_REQUIRED =
  'autoDisable.afterConsecutiveFailures is required: how many deliveries in a row must end FAILED to disable the endpoint (0 = never)';

export const WebhookEndpointSpec = Type.Object(
  {
    source: Type.String({ pattern: SOURCE_PATTERN, description: 'inbound source this endpoint listens to' }),
    eventType: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'only this event type; absent = every event of the source' }),
    ),
    url: Type.String({
      minLength: 8,
      maxLength: 2048,
      pattern: URL_WITHOUT_CREDENTIALS,
      errorMessage: URL_CREDENTIALS_MESSAGE,
      description: 'http(s) URL to deliver to, without credentials (user:password@): those go in auth',
    }),
    method: Type.Optional(
      Type.Union([Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('PATCH')], { default: 'POST' }),
    ),
    auth: Type.Optional(
      Type.Object(
        {
          type: Type.Union(
            [
              Type.Literal('NONE'),
              Type.Literal('BASIC'),
              Type.Literal('BEARER'),
              Type.Literal('HMAC'),
              Type.Literal('STANDARD_WEBHOOKS'),
            ],
            { default: 'NONE' },
          ),
          username: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'BASIC username' })),
          secretRef: Type.Optional(SecretKeyRef),
          previousSecretRef: Type.Optional(SecretKeyRef),
        },
        { additionalProperties: false },
      ),
    ),
    customHeaders: Type.Optional(
      Type.Record(Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }), Type.String({ maxLength: 4096 })),
    ),
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 5 })),
    timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 120, default: 10 })),
    retryOnStatus: Type.Optional(
      Type.Array(Type.Integer({ minimum: 400, maximum: 499 }), { maxItems: 20, description: '4xx codes to retry, e.g. 408, 429' }),
    ),
    rateLimit: Type.Optional(
      Type.Object(
        {
          perSecond: Type.Number({
            minimum: DELIVERY_LIMITS.rateLimitPerSecond.min,
            maximum: DELIVERY_LIMITS.rateLimitPerSecond.max,
            description: 'deliveries per second to this endpoint, across all workers (0.5 = one every 2 s)',
          }),
        },
        { additionalProperties: false },
      ),
    ),
    maxConcurrency: Type.Optional(
      Type.Integer({
        minimum: DELIVERY_LIMITS.maxConcurrency.min,
        maximum: DELIVERY_LIMITS.maxConcurrency.max,
        description: 'requests in flight to this endpoint at once, across all workers',
      }),
    ),
    active: Type.Optional(Type.Boolean({ default: true })),
    propagateTraceContext: Type.Optional(
      Type.Boolean({
        default: true,
        description: 'send the delivery\'s W3C traceparent (and tracestate) to the endpoint when the worker traces; false: none',
      }),
    ),
    autoDisable: Type.Optional(
      Type.Object(
        {
          afterConsecutiveFailures: Type.Optional(
            Type.Integer({
              minimum: DELIVERY_LIMITS.autoDisableAfter.min,
              maximum: DELIVERY_LIMITS.autoDisableAfter.max,
              description: 'disable the endpoint when this many deliveries in a row end FAILED; 0 = never',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type WebhookEndpointSpec = Static<typeof WebhookEndpointSpec>;

export const InboundCredentialSpec = Type.Object(
  {
    source: Type.String({ pattern: SOURCE_PATTERN, description: 'the {source} of /api/webhooks/{source}' }),
    username: Type.String({ minLength: 1, maxLength: 255 }),
    passwordSecretRef: SecretKeyRef,
    eventIdFrom: Type.Optional(ExtractionRule),
    eventTypeFrom: Type.Optional(ExtractionRule),
  },
  { additionalProperties: false },
);
export type InboundCredentialSpec = Static<typeof InboundCredentialSpec>;

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  annotations?: Record<string, string>;
}

export interface Resource<K extends string, S> {
  apiVersion: string;
  kind: K;
  metadata: ObjectMeta;
  spec: S;
}

export type WebhookEndpointResource = Resource<'WebhookEndpoint', WebhookEndpointSpec>;
export type InboundCredentialResource = Resource<'InboundCredential', InboundCredentialSpec>;

export interface SecretResource {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}
