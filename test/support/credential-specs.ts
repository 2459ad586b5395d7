/**
 * InboundCredential specs that break a rule of src/custom-resources/specs.ts (CREDENTIAL_RULES,
 * VERIFICATION_RULES, ALLOWED_NAMESPACES_RULES, SELECTOR_REQUIREMENT_RULES), with the words both refusals must use: dev mode's (test/unit/custom-resources/
 * validate.test.ts) and kube-apiserver's CEL (test/operator/crds.test.ts).
 */
const ref = { name: 'a', key: 'b' };
const basic = { source: 's', username: 'u', passwordSecretRef: ref };

export const VALID_CREDENTIAL_SPECS: [string, Record<string, unknown>][] = [
  ['Basic by default', basic],
  ['Basic named', { ...basic, verification: { type: 'Basic' } }],
  ['CloudEvents, signed', { source: 's', format: 'CloudEvents', verification: { type: 'StandardWebhooks', secretRefs: [ref] } }],
  ['a signature alone', { source: 's', verification: { type: 'Stripe', secretRefs: [ref], toleranceSeconds: 600 } }],
  ['Basic beside a signature, two secrets', { ...basic, verification: { type: 'GitHub', secretRefs: [ref, { name: 'a', key: 'c' }] } }],
  [
    'HMAC with its options',
    {
      source: 's',
      verification: { type: 'HMAC', secretRefs: [ref], header: 'X-Sig', algorithm: 'sha1', encoding: 'base64', prefix: 'sha1=' },
    },
  ],
  ['endpoints of every namespace allowed', { ...basic, allowedEndpoints: { namespaces: { from: 'All' } } }],
  [
    'a selector of labels and expressions',
    {
      ...basic,
      allowedEndpoints: {
        namespaces: {
          from: 'Selector',
          selector: {
            matchLabels: { 'webhooks.example.com/reader': 'true' },
            matchExpressions: [
              { key: 'tier', operator: 'In', values: ['prod'] },
              { key: 'kubernetes.io/metadata.name', operator: 'Exists' },
            ],
          },
        },
      },
    },
  ],
];

export const CREDENTIAL_RULE_BREAKS: [string, Record<string, unknown>, RegExp][] = [
  [
    'Basic without passwordSecretRef',
    { source: 's', username: 'u' },
    /username and passwordSecretRef are required when verification\.type is Basic/,
  ],
  ['nothing at all', { source: 's' }, /username and passwordSecretRef are required when verification\.type is Basic/],
  [
    'CloudEvents with an extraction rule',
    { ...basic, format: 'CloudEvents', eventTypeFrom: { header: 'x-type' } },
    /eventIdFrom and eventTypeFrom are not used with format CloudEvents/,
  ],
  [
    'a username without a password beside a signature',
    { source: 's', username: 'u', verification: { type: 'Slack', secretRefs: [ref] } },
    /username and passwordSecretRef go together/,
  ],
  [
    'a signature type without secretRefs',
    { source: 's', verification: { type: 'Shopify' } },
    /verification\.secretRefs is required for a signature type/,
  ],
  [
    'secretRefs with Basic',
    { ...basic, verification: { type: 'Basic', secretRefs: [ref] } },
    /verification\.secretRefs is not used with type Basic/,
  ],
  [
    'a tolerance for GitHub',
    { source: 's', verification: { type: 'GitHub', secretRefs: [ref], toleranceSeconds: 60 } },
    /toleranceSeconds is only used with Stripe, Slack, StandardWebhooks/,
  ],
  [
    'HMAC without a header',
    { source: 's', verification: { type: 'HMAC', secretRefs: [ref] } },
    /verification\.header is required for type HMAC/,
  ],
  [
    'a prefix for Stripe',
    { source: 's', verification: { type: 'Stripe', secretRefs: [ref], prefix: 'x' } },
    /header, algorithm, encoding and prefix are only used with type HMAC/,
  ],
  [
    'a Selector without a selector',
    { ...basic, allowedEndpoints: { namespaces: { from: 'Selector' } } },
    /allowedEndpoints\.namespaces\.selector is required when from is Selector/,
  ],
  [
    'a selector with from: All',
    { ...basic, allowedEndpoints: { namespaces: { from: 'All', selector: { matchLabels: { a: 'b' } } } } },
    /allowedEndpoints\.namespaces\.selector is only used with from: Selector/,
  ],
  [
    'In without values',
    { ...basic, allowedEndpoints: { namespaces: { from: 'Selector', selector: { matchExpressions: [{ key: 'a', operator: 'In' }] } } } },
    /with operator In or NotIn needs values; Exists and DoesNotExist take none/,
  ],
  [
    'Exists with values',
    {
      ...basic,
      allowedEndpoints: {
        namespaces: { from: 'Selector', selector: { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] } },
      },
    },
    /with operator In or NotIn needs values; Exists and DoesNotExist take none/,
  ],
];
