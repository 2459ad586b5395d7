import type { TSchema } from 'typebox';
import { stringify } from 'yaml';
import { DELIVERY_LIMITS, ENDPOINT_STATES } from '../domain/records.js';
import {
  API_GROUP,
  API_VERSION,
  AUTO_DISABLE_REQUIRED,
  CREDENTIAL_RULES,
  InboundCredentialSpec,
  RETENTION_ORDER_MESSAGE,
  VERIFICATION_RULES,
  WebhookEndpointSpec,
  type SpecRule,
} from '../resources/schema.js';

/**
 * The CustomResourceDefinitions, generated from the TypeBox specs of src/resources/schema.ts (the
 * one source of truth for dev mode, the operator and the CRDs). What JSON Schema says the same way
 * in OpenAPI v3 is copied; what it says otherwise is translated so that the result is a structural
 * schema: unions of literals become enums, a record with a key pattern becomes additionalProperties
 * plus a CEL rule on the keys, additionalProperties: false is dropped (the API server prunes unknown
 * fields instead). The CRD-only additions (CEL rules, bounds that keep CEL cost estimates finite,
 * list types) live in EXTRAS below, by field path.
 *
 * scripts/kube/gen-crds.ts writes charts/webhook-fanout/crds/*.yaml (crds/ links there) from this;
 * a test checks the committed files match.
 */

export type OpenApiSchema = Record<string, unknown>;

interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueRequired' | 'FieldValueForbidden' | 'FieldValueDuplicate';
}

const HEADER_TOKEN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

/** Per-endpoint limits (docs/limits.md): the CEL rules name the bounds in words the user wrote. */
const LIMIT_EXTRAS: Record<string, OpenApiSchema> = {
  rateLimit: {
    description: 'deliveries per second to this endpoint across all workers; over it a delivery waits (no attempt spent)',
    'x-kubernetes-validations': [
      {
        rule: `self.perSecond >= ${DELIVERY_LIMITS.rateLimitPerSecond.min} && self.perSecond <= ${DELIVERY_LIMITS.rateLimitPerSecond.max}.0`,
        message: `rateLimit.perSecond must be a positive number of deliveries per second, from ${DELIVERY_LIMITS.rateLimitPerSecond.min} (one every ${1 / DELIVERY_LIMITS.rateLimitPerSecond.min} s) to ${DELIVERY_LIMITS.rateLimitPerSecond.max}`,
        fieldPath: '.perSecond',
      },
    ] satisfies CelRule[],
  },
  maxConcurrency: {
    description: 'requests in flight to this endpoint at once across all workers; over it a delivery waits (no attempt spent)',
    'x-kubernetes-validations': [
      {
        rule: `self >= ${DELIVERY_LIMITS.maxConcurrency.min} && self <= ${DELIVERY_LIMITS.maxConcurrency.max}`,
        message: `maxConcurrency must be a whole number of requests in flight, ${DELIVERY_LIMITS.maxConcurrency.min}..${DELIVERY_LIMITS.maxConcurrency.max}`,
      },
    ] satisfies CelRule[],
  },
};

/** CRD-only additions by dotted path from the spec root ("" = the spec itself). */
const ENDPOINT_EXTRAS: Record<string, OpenApiSchema> = {
  '': { description: 'Where and how to re-deliver the events of one inbound source.' },
  url: {
    'x-kubernetes-validations': [
      {
        rule: "isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",
        message: 'url must be an absolute http:// or https:// URL with a host',
      },
      {
        // the schema's pattern refuses them too; this says why and what to do instead
        rule: "!self.matches('^https?://[^/?#]*@')",
        message: 'url must not contain credentials (user:password@host): put them in spec.auth (BASIC or BEARER with a secretRef)',
      },
    ] satisfies CelRule[],
  },
  method: { description: 'HTTP method of the outbound request' },
  auth: {
    description:
      'outbound authentication: NONE, BASIC (username + password), BEARER (token), HMAC (signing secret) or STANDARD_WEBHOOKS (whsec_ key)',
    'x-kubernetes-validations': [
      {
        rule: "self.type != 'BASIC' || has(self.username)",
        message: 'auth.username is required when auth.type is BASIC',
        fieldPath: '.username',
        reason: 'FieldValueRequired',
      },
      {
        rule: "self.type == 'NONE' || has(self.secretRef)",
        message: 'auth.secretRef is required when auth.type is BASIC, BEARER, HMAC or STANDARD_WEBHOOKS',
        fieldPath: '.secretRef',
        reason: 'FieldValueRequired',
      },
      {
        rule: "!has(self.previousSecretRef) || self.type == 'STANDARD_WEBHOOKS'",
        message: 'auth.previousSecretRef is only used with auth.type STANDARD_WEBHOOKS',
        fieldPath: '.previousSecretRef',
        reason: 'FieldValueForbidden',
      },
    ] satisfies CelRule[],
  },
  'auth.type': { description: 'NONE, BASIC, BEARER, HMAC or STANDARD_WEBHOOKS' },
  'auth.secretRef': {
    description: 'the password (BASIC), token (BEARER), signing secret (HMAC) or whsec_<base64> key (STANDARD_WEBHOOKS)',
  },
  'auth.previousSecretRef': {
    description:
      'STANDARD_WEBHOOKS key rotation: the previous whsec_ key, signed with too (a second signature in webhook-signature) until removed',
  },
  customHeaders: {
    description: 'static headers added to every request; they can not replace the auth or signature headers',
    maxProperties: 64,
    'x-kubernetes-validations': [
      {
        rule: `self.all(k, size(k) <= 256 && k.matches("${HEADER_TOKEN}"))`,
        message: 'customHeaders names must be HTTP header names (RFC 9110 tokens) of at most 256 characters',
      },
    ] satisfies CelRule[],
  },
  maxAttempts: { description: 'maximum delivery attempts, 1..50' },
  timeoutSeconds: { description: 'per-request timeout in seconds, 1..120' },
  retryOnStatus: { 'x-kubernetes-list-type': 'set' },
  ...LIMIT_EXTRAS,
  active: { description: 'false keeps the endpoint configured but routes nothing to it' },
  autoDisable: {
    description:
      'endpoint health: disable the endpoint after this many deliveries in a row ended FAILED (absent = never); while disabled its ' +
      'deliveries fail at once and are held, and re-enabling (annotation webhookfanout.io/enable set to a new value, or ' +
      'POST /api/endpoints/{id}/enable) redelivers them once, oldest first',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.afterConsecutiveFailures)',
        message: AUTO_DISABLE_REQUIRED,
        fieldPath: '.afterConsecutiveFailures',
        reason: 'FieldValueRequired',
      },
    ] satisfies CelRule[],
  },
};

const EXTRACTION_RULE_EXTRAS: OpenApiSchema = {
  'x-kubernetes-validations': [
    { rule: 'has(self.jsonPath) || has(self.header)', message: 'set jsonPath, header or both' },
  ] satisfies CelRule[],
};

/** The rules src/resources/schema.ts states once, as CEL (dev mode checks their predicates). */
const celOf = <S>(rules: SpecRule<S>[]): CelRule[] =>
  rules.map(({ cel, message, fieldPath, reason }) => ({
    rule: cel,
    message,
    ...(fieldPath ? { fieldPath } : {}),
    ...(reason ? { reason } : {}),
  }));

/** A retention age in seconds, in CEL: the pattern has made sure it is digits and one unit. */
const celSeconds = (v: string) =>
  `int(${v}.substring(0, size(${v}) - 1)) * (${v}.endsWith('d') ? 86400 : ${v}.endsWith('h') ? 3600 : ${v}.endsWith('m') ? 60 : 1)`;

const CREDENTIAL_EXTRAS: Record<string, OpenApiSchema> = {
  '': {
    description:
      'How inbound calls of one source prove they come from it: HTTP Basic, a provider signature over the raw body (verification), or both.',
    'x-kubernetes-validations': celOf(CREDENTIAL_RULES),
  },
  username: { description: 'HTTP Basic username the sender presents (Basic, alone or beside a signature)' },
  passwordSecretRef: {
    description: 'the password, or a bcrypt hash of it ($2a$, $2b$ or $2y$); only a bcrypt hash reaches the database',
  },
  verification: {
    description:
      'Basic (default): username + passwordSecretRef. Stripe, GitHub, Shopify, Slack, StandardWebhooks or HMAC: the signature ' +
      'of each call is checked over the raw body with the secrets of secretRefs (docs/sources.md); Basic may be required beside it',
    'x-kubernetes-validations': celOf(VERIFICATION_RULES),
  },
  'verification.type': { description: 'Basic, Stripe, GitHub, Shopify, Slack, StandardWebhooks or HMAC' },
  'verification.secretRefs': { 'x-kubernetes-list-type': 'atomic' },
  eventIdFrom: {
    ...EXTRACTION_RULE_EXTRAS,
    description: 'where the external event id is read; default: body id, then Webhook-Id / X-Event-Id',
  },
  eventTypeFrom: { ...EXTRACTION_RULE_EXTRAS, description: 'where the event type is read; default: body type, then X-Event-Type' },
  retention: {
    description:
      "this source's own retention ages, instead of RETENTION_MAX_AGE / RETENTION_PAYLOAD_MAX_AGE (absent: those); " +
      'events not yet delivered are never deleted, whatever their age (docs/deploy.md, Retention)',
    'x-kubernetes-validations': [
      {
        rule:
          "!has(self.maxAge) || !has(self.payloadMaxAge) || self.maxAge == 'forever' || self.payloadMaxAge == 'forever' || " +
          `${celSeconds('self.payloadMaxAge')} < ${celSeconds('self.maxAge')}`,
        message: RETENTION_ORDER_MESSAGE,
        fieldPath: '.payloadMaxAge',
        reason: 'FieldValueInvalid',
      },
    ] satisfies CelRule[],
  },
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON Schema keywords that mean the same in a CRD's OpenAPI v3 schema. */
const COPIED = [
  'type',
  'description',
  'format',
  'default',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
] as const;

function convert(schema: TSchema, path: string, extras: Record<string, OpenApiSchema>): OpenApiSchema {
  const s = schema as unknown as Record<string, unknown>;
  const out: OpenApiSchema = {};

  if (Array.isArray(s.anyOf)) {
    const members = s.anyOf as Record<string, unknown>[];
    if (!members.every((m) => m.const !== undefined)) throw new Error(`${path || 'spec'}: only unions of literals translate to a CRD`);
    const types = new Set(members.map((m) => m.type));
    if (types.size !== 1) throw new Error(`${path || 'spec'}: a union of literals must share one type`);
    out.type = [...types][0];
    out.enum = members.map((m) => m.const);
  }
  for (const k of COPIED) if (s[k] !== undefined) out[k] = structuredClone(s[k]);

  if (isRecord(s.properties)) {
    const props: Record<string, OpenApiSchema> = {};
    for (const [name, child] of Object.entries(s.properties)) {
      props[name] = convert(child as TSchema, path === '' ? name : `${path}.${name}`, extras);
    }
    out.properties = props;
    if (Array.isArray(s.required) && s.required.length > 0) out.required = [...(s.required as string[])];
  }
  if (isRecord(s.patternProperties)) {
    const entries = Object.entries(s.patternProperties);
    if (entries.length !== 1) throw new Error(`${path}: only one key pattern translates to a CRD`);
    const [, valueSchema] = entries[0]!;
    out.additionalProperties = convert(valueSchema as TSchema, `${path}.*`, extras);
  }
  if (isRecord(s.items)) out.items = convert(s.items as TSchema, `${path}[]`, extras);
  if (out.type === undefined) throw new Error(`${path || 'spec'}: every node of a structural schema needs a type`);

  const extra = extras[path];
  if (extra) Object.assign(out, structuredClone(extra));
  return out;
}

function conditionsSchema(): OpenApiSchema {
  return {
    type: 'array',
    description: 'latest observations; Ready says whether Postgres holds what the spec asks for',
    maxItems: 8,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
    items: {
      type: 'object',
      required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
      properties: {
        type: {
          type: 'string',
          maxLength: 316,
          pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
        },
        status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
        observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
        lastTransitionTime: { type: 'string', format: 'date-time' },
        reason: { type: 'string', minLength: 1, maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' },
        message: { type: 'string', maxLength: 32768 },
      },
    },
  };
}

function statusSchema(idField: string, idDescription: string, extra: Record<string, OpenApiSchema> = {}): OpenApiSchema {
  return {
    type: 'object',
    properties: {
      observedGeneration: { type: 'integer', format: 'int64', description: 'the generation the operator last reconciled' },
      [idField]: { type: 'string', description: idDescription },
      conditions: conditionsSchema(),
      ...extra,
    },
  };
}

/** What a WebhookEndpoint's status says beyond Ready: its health, as Postgres has it. */
const ENDPOINT_STATUS_EXTRA: Record<string, OpenApiSchema> = {
  state: {
    type: 'string',
    enum: [...ENDPOINT_STATES],
    description: 'DISABLED after spec.autoDisable.afterConsecutiveFailures deliveries in a row ended FAILED, until enabled again',
  },
};

const READY = '.status.conditions[?(@.type=="Ready")]';

interface KindDef {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  spec: TSchema;
  extras: Record<string, OpenApiSchema>;
  status: OpenApiSchema;
  columns: { name: string; type: string; jsonPath: string; priority?: number; description?: string }[];
}

const KINDS: KindDef[] = [
  {
    kind: 'WebhookEndpoint',
    plural: 'webhookendpoints',
    singular: 'webhookendpoint',
    shortNames: ['whe'],
    spec: WebhookEndpointSpec,
    extras: ENDPOINT_EXTRAS,
    status: statusSchema('endpointId', 'id of the webhook_endpoint row (deliveries and the admin API name it)', ENDPOINT_STATUS_EXTRA),
    columns: [
      { name: 'Source', type: 'string', jsonPath: '.spec.source' },
      { name: 'Event Type', type: 'string', jsonPath: '.spec.eventType', description: 'empty = every event of the source' },
      { name: 'URL', type: 'string', jsonPath: '.spec.url' },
      { name: 'Auth', type: 'string', jsonPath: '.spec.auth.type', priority: 1 },
      { name: 'Active', type: 'boolean', jsonPath: '.spec.active', priority: 1 },
      { name: 'State', type: 'string', jsonPath: '.status.state', description: 'ACTIVE, or DISABLED by auto-disable' },
      {
        name: 'Rate',
        type: 'number',
        jsonPath: '.spec.rateLimit.perSecond',
        priority: 1,
        description: 'deliveries per second; empty = no limit',
      },
      {
        name: 'Max In Flight',
        type: 'integer',
        jsonPath: '.spec.maxConcurrency',
        priority: 1,
        description: 'requests in flight; empty = no limit',
      },
      { name: 'Ready', type: 'string', jsonPath: `${READY}.status` },
      { name: 'Reason', type: 'string', jsonPath: `${READY}.reason`, priority: 1 },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
  {
    kind: 'InboundCredential',
    plural: 'inboundcredentials',
    singular: 'inboundcredential',
    shortNames: ['ic'],
    spec: InboundCredentialSpec,
    extras: CREDENTIAL_EXTRAS,
    status: statusSchema('credentialId', 'id of the webhook_inbound_credential row'),
    columns: [
      { name: 'Source', type: 'string', jsonPath: '.spec.source' },
      { name: 'Verification', type: 'string', jsonPath: '.spec.verification.type', description: 'Basic, or the signature scheme' },
      { name: 'Username', type: 'string', jsonPath: '.spec.username', description: 'Basic username; empty = no Basic' },
      { name: 'Ready', type: 'string', jsonPath: `${READY}.status` },
      { name: 'Reason', type: 'string', jsonPath: `${READY}.reason` },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
];

export function buildCrd(def: KindDef): OpenApiSchema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${API_GROUP}`,
      labels: { 'app.kubernetes.io/name': 'webhook-fanout', 'app.kubernetes.io/component': 'crd' },
    },
    spec: {
      group: API_GROUP,
      scope: 'Namespaced',
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ['webhookfanout'],
      },
      versions: [
        {
          name: API_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.columns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: convert(def.spec, '', def.extras).description,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: convert(def.spec, '', def.extras),
                status: def.status,
              },
            },
          },
        },
      ],
    },
  };
}

export const CRD_FILES = KINDS.map((def) => ({ file: `${API_GROUP}_${def.plural}.yaml`, crd: buildCrd(def) }));

const HEADER = '# Generated by scripts/kube/gen-crds.ts from src/resources/schema.ts and src/operator/crd.ts. Do not edit.\n';

/** The YAML text of each CRD file, exactly as committed under crds/. */
export function renderCrdFiles(): { file: string; text: string }[] {
  return CRD_FILES.map(({ file, crd }) => ({ file, text: `${HEADER}${stringify(crd, { lineWidth: 0 })}` }));
}
