import { Type, type TSchema } from 'typebox';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { crdSchemaOf, renderCrdFiles, type OpenApiSchema } from '../../../src/operator/crd.js';
import { InboundCredentialSpec, WebhookEndpointSpec } from '../../../src/custom-resources/specs.js';

// The CRDs say of each field what the field says of itself in src/custom-resources/specs.ts: the
// generator translates, it keeps no list of fields of its own (docs/operator.md, Adding a field).

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What a field carries that the CRD must carry unchanged: its words, its bounds, its rules. */
const CARRIED = [
  'description',
  'default',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'maxProperties',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
] as const;

const carried = (n: Node): Node => Object.fromEntries(CARRIED.filter((k) => n[k] !== undefined).map((k) => [k, n[k]]));

/** Every field of a TypeBox spec with its node in the CRD, by dotted path ('' = the spec itself). */
function fieldsOf(field: Node, crd: Node, path = ''): [string, Node, Node][] {
  const out: [string, Node, Node][] = [[path, field, crd]];
  const at = (p: string) => (path === '' ? p : `${path}.${p}`);
  if (isNode(field.properties) && isNode(crd.properties)) {
    for (const [name, child] of Object.entries(field.properties))
      out.push(...fieldsOf(child as Node, crd.properties[name] as Node, at(name)));
  }
  if (isNode(field.items) && isNode(crd.items)) out.push(...fieldsOf(field.items, crd.items, `${path}[]`));
  if (isNode(field.patternProperties) && isNode(crd.additionalProperties)) {
    out.push(...fieldsOf(Object.values(field.patternProperties)[0] as Node, crd.additionalProperties, `${path}.*`));
  }
  return out;
}

const [endpointCrd, credentialCrd] = renderCrdFiles().map((f) => parse(f.text) as Node);
const specOf = (crd: Node): Node => {
  const v = (crd.spec as { versions: { schema: { openAPIV3Schema: { properties: { spec: Node } } } }[] }).versions[0]!;
  return v.schema.openAPIV3Schema.properties.spec;
};

const KINDS: [string, TSchema, Node][] = [
  ['WebhookEndpoint', WebhookEndpointSpec, specOf(endpointCrd!)],
  ['InboundCredential', InboundCredentialSpec, specOf(credentialCrd!)],
];
const EVERY_FIELD = KINDS.flatMap(([kind, schema, crd]) =>
  fieldsOf(schema as unknown as Node, crd).map(([path, field, node]) => [kind, path || '(spec)', field, node] as const),
);

describe('the generated CRDs', () => {
  it('cover every field of both specs', () => {
    expect(EVERY_FIELD.length).toBeGreaterThan(40);
    for (const [, path, , node] of EVERY_FIELD) expect(node, path).toBeDefined();
  });

  it.each(EVERY_FIELD)('%s %s: description, bounds and rules are the field’s own', (_kind, _path, field, node) => {
    expect(carried(node)).toEqual(carried(field));
  });

  // what the fields say, spelled out, so that losing it on both sides at once fails too
  it.each([
    ['WebhookEndpoint', 'maxConcurrency', { minimum: 1, maximum: 1000 }, /requests in flight/, [/^maxConcurrency must be a whole number/]],
    [
      'WebhookEndpoint',
      'rateLimit',
      {},
      /deliveries per second/,
      [/^rateLimit\.perSecond must be a positive number of deliveries per second, from 0\.001/],
    ],
    [
      'WebhookEndpoint',
      'auth',
      {},
      /^how the receiver knows the caller/,
      [
        /auth\.username is required/,
        /^auth\.oauth2 is required when auth\.type is OAuth2ClientCredentials/,
        /^auth\.secretRef is not used with OAuth2ClientCredentials/,
        /auth\.secretRef is required/,
        /auth\.previousSecretRef is only used/,
      ],
    ],
    [
      'WebhookEndpoint',
      'auth.oauth2',
      {},
      /^OAuth2 client credentials/,
      [
        /^auth\.oauth2 needs clientSecretRef for ClientSecretBasic/,
        /^auth\.oauth2\.keyId is only used with clientAuthentication PrivateKeyJwt/,
      ],
    ],
    ['WebhookEndpoint', 'auth.oauth2.tokenUrl', { maxLength: 2048 }, /token endpoint/, [/absolute http/]],
    ['WebhookEndpoint', 'auth.oauth2.scopes', { maxItems: 32, 'x-kubernetes-list-type': 'set' }, /scope parameter/, []],
    [
      'WebhookEndpoint',
      'signing',
      {},
      /^how the receiver verifies the body/,
      [/signing\.secretRef is required/, /signing\.previousSecretRef is only used/],
    ],
    [
      'WebhookEndpoint',
      '(spec)',
      {},
      /^Where and how/,
      [
        /^url is required for an HTTP destination/,
        /^url is only for an HTTP destination/,
        /^auth \(Basic, Bearer, OAuth2ClientCredentials\) is only for an HTTP/,
        /^spec\.signing and an auth\.type that signs/,
      ],
    ],
    [
      'WebhookEndpoint',
      'destination',
      {},
      /^where the deliveries go/,
      ['sqs', 'sns', 'eventBridge', 'kafka', 'rabbitMQ', 'nats'].flatMap((b) => [
        new RegExp(`^destination\\.${b} is required`),
        new RegExp(`^destination\\.${b} is only read`),
      ]),
    ],
    ['WebhookEndpoint', 'destination.rabbitMQ', {}, /^RabbitMQ: one publish/, [/go together/]],
    [
      'WebhookEndpoint',
      'destination.nats',
      {},
      /^NATS: one JetStream publish/,
      [/go together/, /a tokenSecretRef or a username, not both/],
    ],
    ['WebhookEndpoint', 'url', { maxLength: 2048 }, /without credentials/, [/absolute http/, /must not contain credentials/]],
    ['WebhookEndpoint', 'customHeaders', { maxProperties: 64 }, /static headers/, [/RFC 9110 tokens/]],
    ['WebhookEndpoint', 'retryOnStatus', { maxItems: 20, 'x-kubernetes-list-type': 'set' }, /4xx codes/, []],
    ['WebhookEndpoint', 'autoDisable', {}, /^endpoint health/, [/afterConsecutiveFailures is required/]],
    ['WebhookEndpoint', 'timeoutSeconds', { minimum: 1, maximum: 120, default: 10 }, /older spelling of timeout/, []],
    ['WebhookEndpoint', 'timeout', { maxLength: 16 }, /per-request timeout/, [/^timeout must be from 1s to 120s/]],
    [
      'InboundCredential',
      '(spec)',
      {},
      /^How inbound calls/,
      [/username and passwordSecretRef are required/, /not used with format CloudEvents/, /go together/],
    ],
    ['InboundCredential', 'format', { enum: ['Raw', 'CloudEvents'], default: 'Raw' }, /CloudEvent 1\.0/, []],
    ['WebhookEndpoint', 'format', { enum: ['Raw', 'CloudEventsBinary', 'CloudEventsStructured'], default: 'Raw' }, /HTTP binding/, []],
    [
      'InboundCredential',
      'verification',
      {},
      /^Basic \(default\)/,
      [
        /secretRefs is required/,
        /secretRefs is not used/,
        /toleranceSeconds is only used/,
        /header is required/,
        /only used with type HMAC/,
      ],
    ],
    ['InboundCredential', 'verification.secretRefs', { maxItems: 3, 'x-kubernetes-list-type': 'atomic' }, /signing secret/, []],
    ['InboundCredential', 'eventIdFrom', {}, /external event id/, [/set jsonPath, header or both/]],
    ['InboundCredential', 'retention', {}, /own retention ages/, [/payloadMaxAge must be shorter than retention\.maxAge/]],
    ['InboundCredential', 'passwordSecretRef', {}, /bcrypt hash/, []],
  ] as const)('%s %s carries its own words, bounds and rules', (kind, path, bounds, description, messages) => {
    const node = EVERY_FIELD.find(([k, p]) => k === kind && p === path)![3];
    expect(node).toMatchObject(bounds);
    expect(node.description).toMatch(description);
    const rules = (node['x-kubernetes-validations'] ?? []) as Node[];
    expect(rules.map((r) => r.message)).toEqual(messages.map((m) => expect.stringMatching(m)));
    for (const r of rules)
      expect(
        Object.keys(r).every((k) => ['rule', 'message', 'fieldPath', 'reason'].includes(k)),
        path,
      ).toBe(true);
  });

  it('a new field needs nothing but its own declaration (the docs/operator.md example)', () => {
    const spec = Type.Object(
      {
        batch: Type.Optional(
          Type.Object(
            {
              maxEvents: Type.Integer({ minimum: 1, maximum: 100, description: 'events per request' }),
              maxWait: Type.Optional(Type.String({ maxLength: 16 })),
            },
            {
              additionalProperties: false,
              description: 'send events in batches',
              'x-kubernetes-validations': [{ rule: '!has(self.maxWait) || self.maxEvents > 1', message: 'maxWait needs maxEvents > 1' }],
            },
          ),
        ),
      },
      { additionalProperties: false },
    );
    expect(crdSchemaOf(spec)).toEqual({
      type: 'object',
      properties: {
        batch: {
          type: 'object',
          description: 'send events in batches',
          properties: {
            maxEvents: { type: 'integer', description: 'events per request', minimum: 1, maximum: 100 },
            maxWait: { type: 'string', maxLength: 16 },
          },
          required: ['maxEvents'],
          'x-kubernetes-validations': [{ rule: '!has(self.maxWait) || self.maxEvents > 1', message: 'maxWait needs maxEvents > 1' }],
        },
      },
    } satisfies OpenApiSchema);
  });
});
