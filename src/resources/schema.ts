import { Type, type Static } from 'typebox';
import {
  DELIVERY_LIMITS,
  HMAC_ALGORITHMS,
  LABEL_SELECTOR_OPERATORS,
  NAMESPACES_FROM,
  SIGNATURE_ENCODINGS,
  SOURCE_PATTERN,
  TIMESTAMPED_TYPES,
  VERIFICATION_LIMITS,
  VERIFICATION_TYPES,
} from '../domain/records.js';
import { DURATION_PATTERN, KEEP_FOREVER } from '../retention/duration.js';

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
    method: Type.Optional(Type.Union([Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('PATCH')], { default: 'POST' })),
    auth: Type.Optional(
      Type.Object(
        {
          type: Type.Union(
            [Type.Literal('NONE'), Type.Literal('BASIC'), Type.Literal('BEARER'), Type.Literal('HMAC'), Type.Literal('STANDARD_WEBHOOKS')],
            { default: 'NONE' },
          ),
          username: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'BASIC username' })),
          secretRef: Type.Optional(SecretKeyRef),
          previousSecretRef: Type.Optional(SecretKeyRef),
        },
        { additionalProperties: false },
      ),
    ),
    customHeaders: Type.Optional(Type.Record(Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }), Type.String({ maxLength: 4096 }))),
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
        description: "send the delivery's W3C traceparent (and tracestate) to the endpoint when the worker traces; false: none",
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

const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

export const InboundVerification = Type.Object(
  {
    type: Type.Union(
      VERIFICATION_TYPES.map((t) => Type.Literal(t)),
      { default: 'Basic' },
    ),
    secretRefs: Type.Optional(
      Type.Array(SecretKeyRef, {
        minItems: VERIFICATION_LIMITS.secrets.min,
        maxItems: VERIFICATION_LIMITS.secrets.max,
        description: 'the signing secret; up to three while one is rotated (a signature valid under any of them is accepted)',
      }),
    ),
    toleranceSeconds: Type.Optional(
      Type.Integer({
        minimum: VERIFICATION_LIMITS.toleranceSeconds.min,
        maximum: VERIFICATION_LIMITS.toleranceSeconds.max,
        description: `Stripe, Slack, StandardWebhooks: a signed timestamp older or further in the future than this is refused (default ${VERIFICATION_LIMITS.toleranceSeconds.default})`,
      }),
    ),
    header: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        pattern: HEADER_NAME,
        description: 'HMAC: the request header that carries the signature',
      }),
    ),
    algorithm: Type.Optional(
      Type.Union(
        HMAC_ALGORITHMS.map((a) => Type.Literal(a)),
        { description: 'HMAC: the hash, default sha256' },
      ),
    ),
    encoding: Type.Optional(
      Type.Union(
        SIGNATURE_ENCODINGS.map((e) => Type.Literal(e)),
        { description: 'HMAC: how the signature is written, default hex' },
      ),
    ),
    prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'HMAC: text before the signature, e.g. sha256=' })),
  },
  { additionalProperties: false },
);
export type InboundVerification = Static<typeof InboundVerification>;

/** A retention age of a source: a duration (90d, 36h, 30m, 45s) or `forever`. */
export const RETENTION_AGE_PATTERN = `^(${KEEP_FOREVER}|${DURATION_PATTERN.slice(1, -1)})$`;

/** What the CRD's CEL rule (and dev mode) says when a source would drop payloads after deleting its events. */
export const RETENTION_ORDER_MESSAGE = 'retention.payloadMaxAge must be shorter than retention.maxAge: events are deleted whole at maxAge';

export const SourceRetention = Type.Object(
  {
    maxAge: Type.Optional(
      Type.String({
        pattern: RETENTION_AGE_PATTERN,
        maxLength: 16,
        description:
          "delete this source's events (with deliveries and attempts) older than this, instead of RETENTION_MAX_AGE: 90d, 36h, 30m, 45s, or forever",
      }),
    ),
    payloadMaxAge: Type.Optional(
      Type.String({
        pattern: RETENTION_AGE_PATTERN,
        maxLength: 16,
        description:
          "drop the payload and headers of this source's events older than this, instead of RETENTION_PAYLOAD_MAX_AGE; or forever",
      }),
    ),
  },
  { additionalProperties: false },
);

/** A label's key (an optional DNS-subdomain prefix and /, then a name of up to 63) and value, as Kubernetes validates them. */
export const LABEL_KEY_PATTERN =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';
export const LABEL_VALUE_PATTERN = '^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$';

/** A standard LabelSelector (metav1.LabelSelector), over Namespace labels here. */
export const LabelSelector = Type.Object(
  {
    matchLabels: Type.Optional(
      Type.Record(
        Type.String({ pattern: LABEL_KEY_PATTERN, maxLength: 317 }),
        Type.String({ pattern: LABEL_VALUE_PATTERN, maxLength: 63 }),
        { maxProperties: 32, description: 'labels the namespace must carry, with these values' },
      ),
    ),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            key: Type.String({ minLength: 1, maxLength: 317, pattern: LABEL_KEY_PATTERN, description: 'a label key' }),
            operator: Type.Union(
              LABEL_SELECTOR_OPERATORS.map((o) => Type.Literal(o)),
              { description: 'In, NotIn, Exists or DoesNotExist' },
            ),
            values: Type.Optional(
              Type.Array(Type.String({ maxLength: 63, pattern: LABEL_VALUE_PATTERN }), {
                maxItems: 64,
                description: 'In and NotIn: one or more values; Exists and DoesNotExist: none',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        { maxItems: 32, description: 'requirements the namespace labels must all meet' },
      ),
    ),
  },
  { additionalProperties: false },
);

export const AllowedNamespaces = Type.Object(
  {
    from: Type.Optional(
      Type.Union(
        NAMESPACES_FROM.map((f) => Type.Literal(f)),
        {
          description:
            "Same: endpoints in this credential's namespace only; All: in any namespace; Selector: in the namespaces whose labels selector matches. " +
            "Absent: the installation's default (tenancy.defaultAllowedNamespaces, Same unless set)",
        },
      ),
    ),
    selector: Type.Optional(LabelSelector),
  },
  { additionalProperties: false },
);
export type AllowedNamespaces = Static<typeof AllowedNamespaces>;

export const AllowedEndpoints = Type.Object(
  {
    namespaces: Type.Optional(AllowedNamespaces),
  },
  { additionalProperties: false },
);

export const InboundCredentialSpec = Type.Object(
  {
    source: Type.String({ pattern: SOURCE_PATTERN, description: 'the {source} of /api/webhooks/{source}' }),
    username: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    passwordSecretRef: Type.Optional(SecretKeyRef),
    // defaulted so that `kubectl get ic` shows Basic where a resource names no verification
    verification: Type.Optional({ ...InboundVerification, default: { type: 'Basic' } }),
    eventIdFrom: Type.Optional(ExtractionRule),
    eventTypeFrom: Type.Optional(ExtractionRule),
    retention: Type.Optional(SourceRetention),
    allowedEndpoints: Type.Optional(AllowedEndpoints),
  },
  { additionalProperties: false },
);
export type InboundCredentialSpec = Static<typeof InboundCredentialSpec>;

/**
 * What JSON Schema can not say about an InboundCredential, once: the CRD carries each rule as CEL
 * (operator/crd.ts) and dev mode checks the same predicate (resources/to-rows.ts), so both refuse
 * the same manifest with the same words.
 */
export interface SpecRule<S> {
  cel: string;
  message: string;
  fieldPath?: string;
  reason?: 'FieldValueRequired' | 'FieldValueForbidden';
  holds(spec: S): boolean;
}

const signed = (v: InboundVerification | undefined): boolean => v !== undefined && v.type !== 'Basic';
const TIMESTAMPED_CEL = `[${TIMESTAMPED_TYPES.map((t) => `'${t}'`).join(', ')}]`;

export const CREDENTIAL_RULES: SpecRule<InboundCredentialSpec>[] = [
  {
    cel: "(has(self.verification) && self.verification.type != 'Basic') || (has(self.username) && has(self.passwordSecretRef))",
    message: 'username and passwordSecretRef are required when verification.type is Basic (the default when verification is absent)',
    reason: 'FieldValueRequired',
    holds: (s) => signed(s.verification) || (s.username !== undefined && s.passwordSecretRef !== undefined),
  },
  {
    cel: 'has(self.username) == has(self.passwordSecretRef)',
    message: 'username and passwordSecretRef go together: set both (Basic, alone or beside a signature) or neither',
    holds: (s) => (s.username === undefined) === (s.passwordSecretRef === undefined),
  },
];

export const VERIFICATION_RULES: SpecRule<InboundVerification>[] = [
  {
    cel: "self.type == 'Basic' || has(self.secretRefs)",
    message: 'verification.secretRefs is required for a signature type: the signing secret, 1 to 3 while rotating',
    fieldPath: '.secretRefs',
    reason: 'FieldValueRequired',
    holds: (v) => v.type === 'Basic' || v.secretRefs !== undefined,
  },
  {
    cel: "self.type != 'Basic' || !has(self.secretRefs)",
    message: 'verification.secretRefs is not used with type Basic: its password is spec.passwordSecretRef',
    fieldPath: '.secretRefs',
    reason: 'FieldValueForbidden',
    holds: (v) => v.type !== 'Basic' || v.secretRefs === undefined,
  },
  {
    cel: `!has(self.toleranceSeconds) || self.type in ${TIMESTAMPED_CEL}`,
    message: `verification.toleranceSeconds is only used with ${TIMESTAMPED_TYPES.join(', ')} (the types that sign a timestamp)`,
    fieldPath: '.toleranceSeconds',
    reason: 'FieldValueForbidden',
    holds: (v) => v.toleranceSeconds === undefined || (TIMESTAMPED_TYPES as readonly string[]).includes(v.type),
  },
  {
    cel: "self.type != 'HMAC' || has(self.header)",
    message: 'verification.header is required for type HMAC: the request header that carries the signature',
    fieldPath: '.header',
    reason: 'FieldValueRequired',
    holds: (v) => v.type !== 'HMAC' || v.header !== undefined,
  },
  {
    cel: "self.type == 'HMAC' || !(has(self.header) || has(self.algorithm) || has(self.encoding) || has(self.prefix))",
    message: 'verification.header, algorithm, encoding and prefix are only used with type HMAC',
    reason: 'FieldValueForbidden',
    holds: (v) => v.type === 'HMAC' || (v.header ?? v.algorithm ?? v.encoding ?? v.prefix) === undefined,
  },
];

export const ALLOWED_NAMESPACES_RULES: SpecRule<AllowedNamespaces>[] = [
  {
    cel: "!has(self.from) || self.from != 'Selector' || has(self.selector)",
    message: 'allowedEndpoints.namespaces.selector is required when from is Selector: a LabelSelector over Namespace labels',
    fieldPath: '.selector',
    reason: 'FieldValueRequired',
    holds: (n) => n.from !== 'Selector' || n.selector !== undefined,
  },
  {
    cel: "!has(self.selector) || (has(self.from) && self.from == 'Selector')",
    message: 'allowedEndpoints.namespaces.selector is only used with from: Selector',
    fieldPath: '.selector',
    reason: 'FieldValueForbidden',
    holds: (n) => n.selector === undefined || n.from === 'Selector',
  },
];

type LabelSelectorRequirement = NonNullable<Static<typeof LabelSelector>['matchExpressions']>[number];

export const SELECTOR_REQUIREMENT_RULES: SpecRule<LabelSelectorRequirement>[] = [
  {
    cel: "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) : (!has(self.values) || size(self.values) == 0)",
    message: 'a matchExpressions entry with operator In or NotIn needs values; Exists and DoesNotExist take none',
    fieldPath: '.values',
    holds: (e) => (e.operator === 'In' || e.operator === 'NotIn') === (e.values ?? []).length > 0,
  },
];

/** The first rule an InboundCredential spec breaks, in the CRD's words; undefined when none. */
export function credentialRuleProblem(spec: InboundCredentialSpec): string | undefined {
  const v = spec.verification;
  const ns = spec.allowedEndpoints?.namespaces;
  const broken =
    CREDENTIAL_RULES.find((r) => !r.holds(spec)) ??
    (v === undefined ? undefined : VERIFICATION_RULES.find((r) => !r.holds(v))) ??
    (ns === undefined ? undefined : ALLOWED_NAMESPACES_RULES.find((r) => !r.holds(ns))) ??
    (ns?.selector?.matchExpressions ?? []).flatMap((e) => SELECTOR_REQUIREMENT_RULES.filter((r) => !r.holds(e)))[0];
  return broken ? `spec: ${broken.message}` : undefined;
}

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
