import type { TSchema } from 'typebox';
import { stringify } from 'yaml';
import { ENDPOINT_STATES } from '../domain/records.js';
import { API_GROUP, API_VERSION, InboundCredentialSpec, WebhookEndpointSpec, WebhookReplaySpec } from '../custom-resources/specs.js';

/**
 * The CustomResourceDefinitions, translated from the TypeBox specs of src/custom-resources/specs.ts (the
 * one source of truth for dev mode, the operator and the CRDs). Every field says all it has to say
 * there, CEL rules and list types included (x-kubernetes-*); this file only translates, and adds
 * nothing to a spec field. What JSON Schema says the same way in OpenAPI v3 is copied; what it says
 * otherwise is translated so that the result is a structural schema: unions of literals become
 * enums, a record's value schema becomes additionalProperties (its key pattern goes: the field's
 * own CEL rule checks the keys), additionalProperties: false is dropped (the API server prunes
 * unknown fields instead).
 *
 * scripts/kube/gen-crds.ts writes charts/webhook-fanout/crds/*.yaml (crds/ links there) from this;
 * a test checks the committed files match.
 */

export type OpenApiSchema = Record<string, unknown>;

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

/** The Kubernetes extensions a field carries beside JSON Schema (custom-resources/specs.ts, KubeMarkers). */
const KUBE_MARKERS = ['x-kubernetes-validations', 'x-kubernetes-list-type'] as const;

/** The structural OpenAPI v3 schema of a spec: what the CRD says of it, from the fields alone. */
export const crdSchemaOf = (spec: TSchema): OpenApiSchema => convert(spec, '');

function convert(schema: TSchema, path: string): OpenApiSchema {
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
      props[name] = convert(child as TSchema, path === '' ? name : `${path}.${name}`);
    }
    out.properties = props;
    if (Array.isArray(s.required) && s.required.length > 0) out.required = [...(s.required as string[])];
  }
  if (isRecord(s.patternProperties)) {
    const entries = Object.entries(s.patternProperties);
    if (entries.length !== 1) throw new Error(`${path}: only one key pattern translates to a CRD`);
    const [, valueSchema] = entries[0]!;
    out.additionalProperties = convert(valueSchema as TSchema, `${path}.*`);
  }
  if (isRecord(s.items)) out.items = convert(s.items as TSchema, `${path}[]`);
  if (out.type === undefined) throw new Error(`${path || 'spec'}: every node of a structural schema needs a type`);

  for (const k of KUBE_MARKERS) if (s[k] !== undefined) out[k] = structuredClone(s[k]);
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
  orderingBlockedKeys: {
    type: 'integer',
    format: 'int32',
    minimum: 0,
    description:
      'spec.ordering: keys held by a FAILED delivery until it is replayed or skipped (Block, or held while the endpoint is disabled); absent: not ordered (docs/ordering.md)',
  },
  signingPublicKeys: {
    type: 'array',
    maxItems: 2,
    items: { type: 'string', maxLength: 64 },
    'x-kubernetes-list-type': 'atomic',
    description:
      'signing StandardWebhooksEd25519: the whpk_ public keys receivers verify the v1a signatures with, the current key first, then the previous one during a rotation',
  },
};

const READY = '.status.conditions[?(@.type=="Ready")]';

const count = (description: string): OpenApiSchema => ({ type: 'integer', format: 'int32', minimum: 0, description });

/** A WebhookReplay's status: Complete / Failed conditions (as a Job's) and its counts, written while it runs. */
const REPLAY_STATUS: OpenApiSchema = {
  type: 'object',
  properties: {
    observedGeneration: { type: 'integer', format: 'int64', description: 'the generation the replay ran for' },
    conditions: conditionsSchema(),
    window: { type: 'string', description: 'from..to, as spec.window says (for kubectl get); absent with action Skip' },
    matched: count('deliveries the replay matched when it began (a dry run: would replay); Skip: 1 when the delivery was found'),
    skipped: count(
      "matched but not replayed: the event's payload was dropped by retention, or another replay took it first; Skip: 1 once it no longer holds its key",
    ),
    started: count('deliveries handed to a replay run'),
    succeeded: count('of the started: SUCCESS'),
    failed: count('of the started: FAILED (after their retries)'),
    startTime: { type: 'string', format: 'date-time', description: 'when the replay began' },
    completionTime: { type: 'string', format: 'date-time', description: 'when it finished' },
  },
};

interface KindDef {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  spec: TSchema;
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
    status: statusSchema('endpointId', 'id of the webhook_endpoint row (deliveries and the admin API name it)', ENDPOINT_STATUS_EXTRA),
    columns: [
      { name: 'Source', type: 'string', jsonPath: '.spec.source' },
      { name: 'Event Type', type: 'string', jsonPath: '.spec.eventType', description: 'empty = every event of the source' },
      { name: 'URL', type: 'string', jsonPath: '.spec.url' },
      { name: 'Auth', type: 'string', jsonPath: '.spec.auth.type', priority: 1 },
      {
        name: 'Signing',
        type: 'string',
        jsonPath: '.spec.signing.type',
        priority: 1,
        description: 'empty = none, or in auth (the older form)',
      },
      { name: 'Active', type: 'boolean', jsonPath: '.spec.active', priority: 1 },
      { name: 'State', type: 'string', jsonPath: '.status.state', description: 'ACTIVE, or DISABLED by auto-disable' },
      {
        name: 'Blocked Keys',
        type: 'integer',
        jsonPath: '.status.orderingBlockedKeys',
        description: 'spec.ordering: keys held by a FAILED delivery until it is replayed or skipped; empty = not ordered',
      },
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
    status: statusSchema('credentialId', 'id of the webhook_inbound_credential row'),
    columns: [
      { name: 'Source', type: 'string', jsonPath: '.spec.source' },
      { name: 'Verification', type: 'string', jsonPath: '.spec.verification.type', description: 'Basic, or the signature scheme' },
      { name: 'Username', type: 'string', jsonPath: '.spec.username', description: 'Basic username; empty = no Basic' },
      {
        name: 'Allowed Endpoints',
        type: 'string',
        jsonPath: '.spec.allowedEndpoints.namespaces.from',
        priority: 1,
        description: "the namespaces whose endpoints may subscribe: Same, All or Selector; empty = the installation's default",
      },
      { name: 'Ready', type: 'string', jsonPath: `${READY}.status` },
      { name: 'Reason', type: 'string', jsonPath: `${READY}.reason` },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
  {
    kind: 'WebhookReplay',
    plural: 'webhookreplays',
    singular: 'webhookreplay',
    shortNames: ['whr'],
    spec: WebhookReplaySpec,
    status: REPLAY_STATUS,
    columns: [
      { name: 'Action', type: 'string', jsonPath: '.spec.action', priority: 1, description: 'Replay, or Skip one ordered delivery' },
      { name: 'Endpoint', type: 'string', jsonPath: '.spec.endpointRef.name' },
      { name: 'Delivery', type: 'string', jsonPath: '.spec.deliveryId', priority: 1, description: 'Skip: the delivery skipped' },
      { name: 'Window', type: 'string', jsonPath: '.status.window', description: "the events' received time, from..to" },
      { name: 'Dry Run', type: 'boolean', jsonPath: '.spec.dryRun', priority: 1 },
      { name: 'Matched', type: 'integer', jsonPath: '.status.matched' },
      { name: 'Succeeded', type: 'integer', jsonPath: '.status.succeeded' },
      { name: 'Failed', type: 'integer', jsonPath: '.status.failed' },
      { name: 'Complete', type: 'string', jsonPath: '.status.conditions[?(@.type=="Complete")].status', priority: 1 },
      { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Complete")].reason', priority: 1 },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
];

export function buildCrd(def: KindDef): OpenApiSchema {
  const spec = crdSchemaOf(def.spec);
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
              description: spec.description,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec,
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

const HEADER = '# Generated by scripts/kube/gen-crds.ts from src/custom-resources/specs.ts and src/operator/crd.ts. Do not edit.\n';

/** The YAML text of each CRD file, exactly as committed under crds/. */
export function renderCrdFiles(): { file: string; text: string }[] {
  return CRD_FILES.map(({ file, crd }) => ({ file, text: `${HEADER}${stringify(crd, { lineWidth: 0 })}` }));
}
