import { Type, type Static, type TLiteral, type TObject, type TSchema } from 'typebox';
import {
  DELIVERY_LIMITS,
  DESTINATION_TYPES,
  ENDPOINT_FORMATS,
  KAFKA_SASL_MECHANISMS,
  HMAC_ALGORITHMS,
  LABEL_SELECTOR_OPERATORS,
  NAMESPACES_FROM,
  INBOUND_FORMATS,
  OAUTH2_CLIENT_AUTHENTICATIONS,
  ORDERING_POLICIES,
  SIGNATURE_ENCODINGS,
  SOURCE_PATTERN,
  TIMESTAMPED_TYPES,
  VERIFICATION_LIMITS,
  VERIFICATION_TYPES,
} from '../domain/records.js';
import type { DestinationType } from '../domain/records.js';
import { DURATION_PATTERN, KEEP_FOREVER } from '../config/duration.js';
import { FILTER_MAX_LENGTH } from '../content/filter.js';
import { TRANSFORM_MAX_LENGTH } from '../content/transform.js';

// The custom resources' specs (webhookfanout.io/v1alpha1). One source of truth: dev mode validates
// manifests with these schemas, and the CRDs are generated from them (operator/crd.ts translates,
// it adds nothing). Each field carries all it says, as the Gateway API's Go types carry their
// markers: its description, its bounds, and the CEL rules the API server checks
// (x-kubernetes-validations). How to add a field: docs/operator.md, Adding a field.

export const API_GROUP = 'webhookfanout.io';
export const API_VERSION = 'v1alpha1';
export { SOURCE_PATTERN };

/** A CEL rule the API server checks on a field, with the words it refuses in (x-kubernetes-validations). */
export interface CelRule {
  rule: string;
  message: string;
  /** the field the message is about, relative to the one that carries the rule (".username") */
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueRequired' | 'FieldValueForbidden' | 'FieldValueDuplicate';
}

/**
 * The Kubernetes-only keys a field may carry beside JSON Schema's; the CRD generator copies them
 * as they are, and TypeBox (dev mode's validator) ignores them.
 */
export interface KubeMarkers {
  'x-kubernetes-validations'?: CelRule[];
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
}

/**
 * The literals of a list of values, as a tuple: TypeBox's Static of a union walks a tuple, and
 * reads the array `values.map(Type.Literal)` as a union of nothing (never).
 */
const literals = <const T extends readonly string[]>(values: T) =>
  values.map((v) => Type.Literal(v)) as unknown as { -readonly [K in keyof T]: TLiteral<T[K]> };

/** A schema declared elsewhere (a shared type), with what this use of it says: description, rules. */
export const withMarkers = <T extends TSchema>(schema: T, markers: { description?: string } & KubeMarkers): T => ({
  ...schema,
  ...markers,
});

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

/**
 * auth.type: the PascalCase spellings (docs/operator.md, Conventions), then the older ones that
 * manifests written before them use. Both are accepted; code reads the first (read-spec.ts).
 */
export const AUTH_TYPE_SPELLINGS = [
  'None',
  'Basic',
  'Bearer',
  'OAuth2ClientCredentials',
  'HMAC',
  'StandardWebhooks',
  'NONE',
  'BASIC',
  'BEARER',
  'STANDARD_WEBHOOKS',
] as const;
export const OLDER_AUTH_TYPES = { NONE: 'None', BASIC: 'Basic', BEARER: 'Bearer', STANDARD_WEBHOOKS: 'StandardWebhooks' } as const;
export type AuthTypeSpelling = (typeof AUTH_TYPE_SPELLINGS)[number];
export type EndpointAuthType = Exclude<AuthTypeSpelling, keyof typeof OLDER_AUTH_TYPES>;

/** signing.type: how the receiver verifies the body, apart from how it knows the caller (auth). */
export const SIGNING_TYPES = ['None', 'HMAC', 'StandardWebhooks', 'StandardWebhooksEd25519'] as const;
export type EndpointSigningType = (typeof SIGNING_TYPES)[number];
/** auth.type values that are a signing (the combined spelling from before spec.signing), read as spec.signing. */
export const SIGNING_AUTH_TYPES = ['HMAC', 'StandardWebhooks'] as const satisfies readonly EndpointAuthType[];
export const SIGNING_TWICE_MESSAGE =
  'spec.signing and an auth.type that signs (HMAC, StandardWebhooks) can not be used together: move the signing to spec.signing';

/** CEL: auth.type is this type, in either spelling (`auth` is how the rule's self reaches the auth object). */
function authTypeIs(t: EndpointAuthType, auth = 'self'): string {
  const spellings = [
    t,
    ...Object.entries(OLDER_AUTH_TYPES)
      .filter(([, now]) => now === t)
      .map(([older]) => older),
  ];
  return `${auth}.type in [${spellings.map((v) => `'${v}'`).join(', ')}]`;
}

/** A duration as the Gateway API writes one (GEP-2257), in whole seconds: 10s, 2m, 1m30s. */
export const WHOLE_SECONDS_DURATION = '^([0-9]{1,5}(h|m|s)){1,3}$';
export const TIMEOUT_BOUNDS_MESSAGE = `timeout must be from ${DELIVERY_LIMITS.timeoutSeconds.min}s to ${DELIVERY_LIMITS.timeoutSeconds.max}s (2m)`;

/** A per-source extraction rule of an InboundCredential: the CRD asks for at least one of its two ways. */
const extractionRuleField = (description: string) =>
  withMarkers(ExtractionRule, {
    description,
    'x-kubernetes-validations': [{ rule: 'has(self.jsonPath) || has(self.header)', message: 'set jsonPath, header or both' }],
  });

const HEADER_NAME = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";

// spec.destination (issue 43; docs/destinations.md): where the deliveries go, each type with its
// own block. HTTP, the default, is today's url and auth; the others name their broker here.

/** The block of each destination type, by type (HTTP has none: url and auth). */
export const DESTINATION_BLOCKS = {
  SQS: 'sqs',
  SNS: 'sns',
  EventBridge: 'eventBridge',
  Kafka: 'kafka',
  RabbitMQ: 'rabbitMQ',
  NATS: 'nats',
} as const satisfies Record<Exclude<DestinationType, 'HTTP'>, string>;

const AWS_REGION = '^[a-z]{2}(-[a-z]+)+-[0-9]+$';
const ROLE_ARN = '^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\\w+=,.@/-]{1,512}$';
/** host:port, a DNS name or an IP literal ([::1]:9092) */
const HOST_PORT = '^([A-Za-z0-9.-]+|\\[[0-9A-Fa-f:.]+\\]):[0-9]{1,5}$';

const awsAccessFields = {
  region: Type.String({ pattern: AWS_REGION, maxLength: 32, description: 'the AWS region, e.g. eu-west-1' }),
  endpointUrl: Type.Optional(
    Type.String({
      pattern: URL_WITHOUT_CREDENTIALS,
      maxLength: 2048,
      description: "another endpoint than the region's: a VPC endpoint (https://vpce-...), or moto/LocalStack in tests",
    }),
  ),
  roleArn: Type.Optional(
    Type.String({
      pattern: ROLE_ARN,
      maxLength: 2048,
      description:
        "a role the worker assumes with the pod's identity for this endpoint's calls; absent: the pod's identity (IRSA, EKS Pod Identity)",
    }),
  ),
};

const brokerTls = (what: string) =>
  Type.Optional(
    Type.Object(
      {
        caBundleRef: Type.Optional(
          withMarkers(SecretKeyRef, { description: `PEM CA bundle that signed the ${what}'s certificate; absent: the system's CAs` }),
        ),
      },
      { additionalProperties: false, description: `TLS to the ${what} (present: on)` },
    ),
  );

/** A broker's user (RabbitMQ, NATS): the name, and the password in a Secret; the two set together (userWithPasswordRule). */
const brokerUserFields = {
  username: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  passwordSecretRef: Type.Optional(
    withMarkers(SecretKeyRef, { description: "the user's password, in a Secret of the endpoint's namespace" }),
  ),
};
const userWithPasswordRule = (block: string): CelRule => ({
  rule: 'has(self.username) == has(self.passwordSecretRef)',
  message: `${block}.username and ${block}.passwordSecretRef go together`,
  fieldPath: '.passwordSecretRef',
});

export const DestinationSpec = Type.Object(
  {
    type: Type.Optional(
      Type.Union(literals(DESTINATION_TYPES), {
        default: 'HTTP',
        description: "HTTP (the default: spec.url and spec.auth), SQS, SNS, EventBridge, Kafka, RabbitMQ or NATS, with the type's block",
      }),
    ),
    sqs: Type.Optional(
      Type.Object(
        {
          queueUrl: Type.String({
            pattern: URL_WITHOUT_CREDENTIALS,
            maxLength: 2048,
            description:
              'the queue URL, e.g. https://sqs.eu-west-1.amazonaws.com/123456789012/payments (a .fifo queue: the event id de-duplicates)',
          }),
          ...awsAccessFields,
        },
        { additionalProperties: false, description: "SQS: one SendMessage per delivery, on the pod's identity" },
      ),
    ),
    sns: Type.Optional(
      Type.Object(
        {
          topicArn: Type.String({
            pattern: '^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\\.fifo)?$',
            maxLength: 1024,
            description: 'the topic ARN',
          }),
          ...awsAccessFields,
        },
        { additionalProperties: false, description: "SNS: one Publish per delivery, on the pod's identity" },
      ),
    ),
    eventBridge: Type.Optional(
      Type.Object(
        {
          eventBusName: Type.String({ minLength: 1, maxLength: 1600, description: "the event bus's name or ARN" }),
          detailType: Type.Optional(
            Type.String({ minLength: 1, maxLength: 128, description: "the entries' DetailType; absent: the event's type" }),
          ),
          ...awsAccessFields,
        },
        { additionalProperties: false, description: "EventBridge: one PutEvents entry per delivery, on the pod's identity" },
      ),
    ),
    kafka: Type.Optional(
      Type.Object(
        {
          bootstrapServers: Type.Array(Type.String({ pattern: HOST_PORT, maxLength: 261 }), {
            minItems: 1,
            maxItems: 16,
            description: 'host:port of one or more brokers, e.g. kafka-0.kafka:9092',
            'x-kubernetes-list-type': 'atomic',
          }),
          topic: Type.String({ pattern: '^[A-Za-z0-9._-]{1,249}$', description: 'the topic (acks=all)' }),
          tls: brokerTls('brokers'),
          sasl: Type.Optional(
            Type.Object(
              {
                mechanism: Type.Union(literals(KAFKA_SASL_MECHANISMS), { description: 'PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512' }),
                username: Type.String({ minLength: 1, maxLength: 255 }),
                passwordSecretRef: withMarkers(SecretKeyRef, { description: "the password, in a Secret of the endpoint's namespace" }),
              },
              { additionalProperties: false, description: 'SASL authentication' },
            ),
          ),
        },
        { additionalProperties: false, description: 'Kafka: one record per delivery, acknowledged by all in-sync replicas' },
      ),
    ),
    rabbitMQ: Type.Optional(
      Type.Object(
        {
          url: Type.String({
            pattern: '^amqps?://[^/?#\\\\@]+(/[^?#]*)?$',
            maxLength: 2048,
            description: 'amqp:// or amqps:// host, port and vhost, without credentials, e.g. amqp://rabbitmq.messaging:5672/%2F',
          }),
          exchange: Type.Optional(Type.String({ maxLength: 255, description: "the exchange; '' or absent: the default exchange" })),
          routingKey: Type.Optional(
            Type.String({
              maxLength: 255,
              description: "the routing key (absent: ''); an ordered endpoint (spec.ordering) routes by its ordering key instead",
            }),
          ),
          tls: brokerTls('broker'),
          ...brokerUserFields,
        },
        {
          additionalProperties: false,
          description: 'RabbitMQ: one publish per delivery, acknowledged by a publisher confirm',
          'x-kubernetes-validations': [userWithPasswordRule('rabbitMQ')],
        },
      ),
    ),
    nats: Type.Optional(
      Type.Object(
        {
          servers: Type.Array(Type.String({ pattern: '^(nats|tls)://[^/?#\\\\@]+$', maxLength: 261 }), {
            minItems: 1,
            maxItems: 16,
            description: 'nats:// or tls:// host:port of one or more servers, without credentials',
            'x-kubernetes-list-type': 'atomic',
          }),
          subject: Type.String({
            pattern: '^[^\\s*>]+$',
            maxLength: 255,
            description: 'the subject, published with JetStream (a stream must capture it); no wildcards',
          }),
          tls: brokerTls('servers'),
          ...brokerUserFields,
          tokenSecretRef: Type.Optional(
            withMarkers(SecretKeyRef, { description: "a token instead of a user, in a Secret of the endpoint's namespace" }),
          ),
        },
        {
          additionalProperties: false,
          description: 'NATS: one JetStream publish per delivery, acknowledged by the stream; Nats-Msg-Id = the event id',
          'x-kubernetes-validations': [
            userWithPasswordRule('nats'),
            {
              rule: '!(has(self.tokenSecretRef) && has(self.username))',
              message: 'nats: a tokenSecretRef or a username, not both',
              fieldPath: '.tokenSecretRef',
              reason: 'FieldValueForbidden',
            },
          ],
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      "where the deliveries go (docs/destinations.md): HTTP by default (spec.url), or a queue, topic or bus with the type's block; " +
      'retries, limits, filters, transforms, formats, signing and replay are the same for all',
    'x-kubernetes-validations': destinationBlockRules(),
  },
);
export type DestinationSpec = Static<typeof DestinationSpec>;

/** What the CRD and dev mode say when spec.url is missing for HTTP, or set for another destination. */
export const URL_REQUIRED_MESSAGE = 'url is required for an HTTP destination (the default)';
export const URL_FORBIDDEN_MESSAGE = "url is only for an HTTP destination: the destination's block says where its messages go";
export const AUTH_FORBIDDEN_MESSAGE =
  "auth (Basic, Bearer, OAuth2ClientCredentials) is only for an HTTP destination; spec.signing signs every destination's messages";

/** CEL on the spec: its destination is not HTTP. */
const NOT_HTTP = "has(self.destination) && has(self.destination.type) && self.destination.type != 'HTTP'";

/** Each type's block is required with it, and no other type's block is set (the CEL, and its dev mode predicate). */
function destinationBlockRules(): CelRule[] {
  return Object.entries(DESTINATION_BLOCKS).flatMap(([type, block]) => [
    {
      rule: `!has(self.type) || self.type != '${type}' || has(self.${block})`,
      message: `destination.${block} is required when destination.type is ${type}`,
      fieldPath: `.${block}`,
      reason: 'FieldValueRequired' as const,
    },
    {
      rule: `!has(self.${block}) || (has(self.type) && self.type == '${type}')`,
      message: `destination.${block} is only read when destination.type is ${type}`,
      fieldPath: `.${block}`,
      reason: 'FieldValueForbidden' as const,
    },
  ]);
}

/** The first of destinationBlockRules a destination breaks, in its words; undefined when none. */
export function destinationBlockProblem(d: DestinationSpec): string | undefined {
  const type = d.type ?? 'HTTP';
  for (const [t, block] of Object.entries(DESTINATION_BLOCKS)) {
    const set = d[block] !== undefined;
    if (type === t && !set) return `destination.${block} is required when destination.type is ${t}`;
    if (type !== t && set) return `destination.${block} is only read when destination.type is ${t}`;
  }
  return undefined;
}

/** What the CRD and dev mode say of spec.auth.oauth2's secrets (to-rows.ts checks the same in dev mode). */
export const OAUTH2_SECRET_MESSAGE =
  'auth.oauth2 needs clientSecretRef for ClientSecretBasic and ClientSecretPost, privateKeySecretRef (and no clientSecretRef) for PrivateKeyJwt';
export const OAUTH2_REQUIRED_MESSAGE = 'auth.oauth2 is required when auth.type is OAuth2ClientCredentials, and only read then';

/** CEL on the oauth2 object: its client authentication is PrivateKeyJwt (the default, ClientSecretBasic, when absent). */
const PRIVATE_KEY_JWT = "(has(self.clientAuthentication) && self.clientAuthentication == 'PrivateKeyJwt')";

/** spec.auth.oauth2: the client credentials grant (RFC 6749 4.4) of an endpoint whose receiver wants an OAuth2 access token. */
const OAuth2Spec = Type.Object(
  {
    tokenUrl: Type.String({
      minLength: 8,
      maxLength: 2048,
      pattern: URL_WITHOUT_CREDENTIALS,
      errorMessage:
        'must be an http:// or https:// URL without credentials (user:password@host): the client secret goes in clientSecretRef',
      description: "the authorization server's token endpoint; reached under the same outbound address policy as deliveries",
      'x-kubernetes-validations': [
        {
          rule: "isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",
          message: 'tokenUrl must be an absolute http:// or https:// URL with a host',
        },
      ],
    }),
    clientId: Type.String({ minLength: 1, maxLength: 255, description: 'the client_id the authorization server knows this service by' }),
    clientSecretRef: Type.Optional(
      withMarkers(SecretKeyRef, { description: 'the client secret (ClientSecretBasic, ClientSecretPost), in the same namespace' }),
    ),
    privateKeySecretRef: Type.Optional(
      withMarkers(SecretKeyRef, {
        description:
          'PrivateKeyJwt: the PEM private key (RSA: RS256, EC P-256/384: ES256/384, Ed25519: EdDSA) that signs the client assertion',
      }),
    ),
    keyId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: "PrivateKeyJwt: the kid of the assertion's header (the key's id at the authorization server)",
      }),
    ),
    scopes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$' }), {
        maxItems: 32,
        description: 'the scopes asked for (the scope parameter, space-separated); absent: none asked, the server decides',
        'x-kubernetes-list-type': 'set',
      }),
    ),
    audience: Type.Optional(
      Type.String({ minLength: 1, maxLength: 2048, description: 'sent as the audience parameter (Auth0, Okta): the API the token is for' }),
    ),
    clientAuthentication: Type.Optional(
      Type.Union(literals(OAUTH2_CLIENT_AUTHENTICATIONS), {
        default: 'ClientSecretBasic',
        description:
          'how the client proves itself to the token endpoint: ClientSecretBasic (HTTP Basic, the default), ClientSecretPost (in the form) or PrivateKeyJwt (a JWT signed with privateKeySecretRef, RFC 7523)',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'OAuth2 client credentials (docs/endpoints.md): a token from tokenUrl, sent as a Bearer token, reused until shortly before it expires',
    'x-kubernetes-validations': [
      {
        rule: `${PRIVATE_KEY_JWT} ? (has(self.privateKeySecretRef) && !has(self.clientSecretRef)) : (has(self.clientSecretRef) && !has(self.privateKeySecretRef))`,
        message: OAUTH2_SECRET_MESSAGE,
      },
      {
        rule: `!has(self.keyId) || ${PRIVATE_KEY_JWT}`,
        message: 'auth.oauth2.keyId is only used with clientAuthentication PrivateKeyJwt',
        fieldPath: '.keyId',
        reason: 'FieldValueForbidden',
      },
    ],
  },
);

export const WebhookEndpointSpec = Type.Object(
  {
    source: Type.String({ pattern: SOURCE_PATTERN, description: 'inbound source this endpoint listens to' }),
    eventType: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'only this event type; absent = every event of the source' }),
    ),
    url: Type.Optional(
      Type.String({
        minLength: 8,
        maxLength: 2048,
        pattern: URL_WITHOUT_CREDENTIALS,
        errorMessage: URL_CREDENTIALS_MESSAGE,
        description:
          'http(s) URL to deliver to, without credentials (user:password@): those go in auth; required for an HTTP destination (the default), absent for the others',
        'x-kubernetes-validations': [
          {
            rule: "isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",
            message: 'url must be an absolute http:// or https:// URL with a host',
          },
          {
            // the pattern refuses them too; this says why and what to do instead
            rule: "!self.matches('^https?://[^/?#]*@')",
            message: 'url must not contain credentials (user:password@host): put them in spec.auth (BASIC or BEARER with a secretRef)',
          },
        ],
      }),
    ),
    method: Type.Optional(
      Type.Union([Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('PATCH')], {
        default: 'POST',
        description: 'HTTP method of the outbound request',
      }),
    ),
    auth: Type.Optional(
      Type.Object(
        {
          type: Type.Union(literals(AUTH_TYPE_SPELLINGS), {
            // the older spelling stays the default: objects stored with it and new ones read alike
            default: 'NONE',
            description:
              'None, Basic, Bearer or OAuth2ClientCredentials; HMAC and StandardWebhooks (with secretRef) are the older combined form of spec.signing, read as it; ' +
              'NONE, BASIC, BEARER and STANDARD_WEBHOOKS are the older spellings, read the same',
          }),
          username: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'BASIC username' })),
          secretRef: Type.Optional(
            withMarkers(SecretKeyRef, {
              description: 'the password (BASIC), token (BEARER), signing secret (HMAC) or whsec_<base64> key (STANDARD_WEBHOOKS)',
            }),
          ),
          previousSecretRef: Type.Optional(
            withMarkers(SecretKeyRef, {
              description:
                'STANDARD_WEBHOOKS key rotation: the previous whsec_ key, signed with too (a second signature in webhook-signature) until removed',
            }),
          ),
          oauth2: Type.Optional(OAuth2Spec),
        },
        {
          additionalProperties: false,
          description:
            'how the receiver knows the caller: None, Basic (username + password), Bearer (token) or OAuth2ClientCredentials (oauth2); the signature is spec.signing',
          'x-kubernetes-validations': [
            {
              rule: `!(${authTypeIs('Basic')}) || has(self.username)`,
              message: 'auth.username is required when auth.type is BASIC or Basic',
              fieldPath: '.username',
              reason: 'FieldValueRequired',
            },
            {
              rule: `(${authTypeIs('OAuth2ClientCredentials')}) == has(self.oauth2)`,
              message: OAUTH2_REQUIRED_MESSAGE,
              fieldPath: '.oauth2',
            },
            {
              rule: `!(${authTypeIs('OAuth2ClientCredentials')}) || !has(self.secretRef)`,
              message: 'auth.secretRef is not used with OAuth2ClientCredentials: the client secret is auth.oauth2.clientSecretRef',
              fieldPath: '.secretRef',
              reason: 'FieldValueForbidden',
            },
            {
              rule: `${authTypeIs('None')} || ${authTypeIs('OAuth2ClientCredentials')} || has(self.secretRef)`,
              message:
                'auth.secretRef is required when auth.type is BASIC, BEARER, HMAC or STANDARD_WEBHOOKS (or Basic, Bearer, StandardWebhooks)',
              fieldPath: '.secretRef',
              reason: 'FieldValueRequired',
            },
            {
              rule: `!has(self.previousSecretRef) || ${authTypeIs('StandardWebhooks')}`,
              message: 'auth.previousSecretRef is only used with auth.type STANDARD_WEBHOOKS or StandardWebhooks',
              fieldPath: '.previousSecretRef',
              reason: 'FieldValueForbidden',
            },
          ],
        },
      ),
    ),
    destination: Type.Optional(DestinationSpec),
    signing: Type.Optional(
      Type.Object(
        {
          type: Type.Union(literals(SIGNING_TYPES), {
            default: 'None',
            description: 'None, HMAC, StandardWebhooks (v1, HMAC-SHA256) or StandardWebhooksEd25519 (v1a, Ed25519)',
          }),
          secretRef: Type.Optional(
            withMarkers(SecretKeyRef, {
              description:
                'the signing secret (HMAC), whsec_<base64> key (StandardWebhooks) or whsk_<base64> secret key (StandardWebhooksEd25519)',
            }),
          ),
          previousSecretRef: Type.Optional(
            withMarkers(SecretKeyRef, {
              description: 'StandardWebhooks(Ed25519) key rotation: the previous key, signed with too (a second signature) until removed',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'how the receiver verifies the body: HMAC (X-Webhook-Signature), StandardWebhooks or StandardWebhooksEd25519 (webhook-signature); ' +
            'independent of auth, so an endpoint can have both (docs/signing.md)',
          'x-kubernetes-validations': [
            {
              rule: "self.type == 'None' || has(self.secretRef)",
              message: 'signing.secretRef is required when signing.type is HMAC, StandardWebhooks or StandardWebhooksEd25519',
              fieldPath: '.secretRef',
              reason: 'FieldValueRequired',
            },
            {
              rule: "!has(self.previousSecretRef) || self.type in ['StandardWebhooks', 'StandardWebhooksEd25519']",
              message: 'signing.previousSecretRef is only used with signing.type StandardWebhooks or StandardWebhooksEd25519',
              fieldPath: '.previousSecretRef',
              reason: 'FieldValueForbidden',
            },
          ],
        },
      ),
    ),
    tls: Type.Optional(
      Type.Object(
        {
          clientCertificateSecretRef: Type.Optional(
            Type.Object(
              { name: Type.String({ minLength: 1, maxLength: 253, description: 'a kubernetes.io/tls Secret in the same namespace' }) },
              {
                additionalProperties: false,
                description: 'the client certificate (tls.crt, its chain after it) and key (tls.key) for mTLS',
              },
            ),
          ),
          caBundleRef: Type.Optional(
            Type.Object(
              {
                kind: Type.Union(literals(['Secret', 'ConfigMap'] as const), {
                  default: 'Secret',
                  description: 'Secret (default) or ConfigMap: a CA bundle is not a secret (trust-manager writes ConfigMaps)',
                }),
                name: Type.String({ minLength: 1, maxLength: 253, description: 'its name, in the same namespace' }),
                key: Type.String({ minLength: 1, maxLength: 253, description: 'the key holding the PEM certificates' }),
              },
              {
                additionalProperties: false,
                description: "PEM CA certificates that replace the system's trusted roots for this endpoint (a private CA)",
              },
            ),
          ),
        },
        {
          additionalProperties: false,
          description: 'TLS to the endpoint: a client certificate (mTLS) and a private CA (docs/endpoints-tls.md)',
        },
      ),
    ),
    customHeaders: Type.Optional(
      Type.Record(Type.String({ pattern: HEADER_NAME }), Type.String({ maxLength: 4096 }), {
        description: 'static headers added to every request; they can not replace the auth or signature headers',
        maxProperties: 64,
        'x-kubernetes-validations': [
          {
            // a CRD has no key pattern (the generator drops patternProperties' key): CEL checks the names
            rule: `self.all(k, size(k) <= 256 && k.matches("${HEADER_NAME}"))`,
            message: 'customHeaders names must be HTTP header names (RFC 9110 tokens) of at most 256 characters',
          },
        ],
      }),
    ),
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 5, description: 'maximum delivery attempts, 1..50' })),
    timeout: Type.Optional(
      Type.String({
        pattern: WHOLE_SECONDS_DURATION,
        maxLength: 16,
        description: `per-request timeout: 10s, 1m30s, 2m; ${DELIVERY_LIMITS.timeoutSeconds.min}s..${DELIVERY_LIMITS.timeoutSeconds.max}s (absent: timeoutSeconds)`,
        'x-kubernetes-validations': [
          {
            // what the pattern refuses is left to its own message, not a failed conversion
            rule: `!self.matches('${WHOLE_SECONDS_DURATION}') || (duration(self) >= duration('${DELIVERY_LIMITS.timeoutSeconds.min}s') && duration(self) <= duration('${DELIVERY_LIMITS.timeoutSeconds.max}s'))`,
            message: TIMEOUT_BOUNDS_MESSAGE,
          },
        ],
      }),
    ),
    timeoutSeconds: Type.Optional(
      Type.Integer({
        minimum: DELIVERY_LIMITS.timeoutSeconds.min,
        maximum: DELIVERY_LIMITS.timeoutSeconds.max,
        default: DELIVERY_LIMITS.timeoutSeconds.default,
        description: 'the older spelling of timeout, in seconds, 1..120; read only when timeout is absent',
      }),
    ),
    retryOnStatus: Type.Optional(
      Type.Array(Type.Integer({ minimum: 400, maximum: 499 }), {
        maxItems: 20,
        description: '4xx codes to retry, e.g. 408, 429',
        'x-kubernetes-list-type': 'set',
      }),
    ),
    // per-endpoint limits (docs/limits.md): the CEL rules name the bounds in words the user wrote
    rateLimit: Type.Optional(
      Type.Object(
        {
          perSecond: Type.Number({
            minimum: DELIVERY_LIMITS.rateLimitPerSecond.min,
            maximum: DELIVERY_LIMITS.rateLimitPerSecond.max,
            description: 'deliveries per second to this endpoint, across all workers (0.5 = one every 2 s)',
          }),
        },
        {
          additionalProperties: false,
          description: 'deliveries per second to this endpoint across all workers; over it a delivery waits (no attempt spent)',
          'x-kubernetes-validations': [
            {
              rule: `self.perSecond >= ${DELIVERY_LIMITS.rateLimitPerSecond.min} && self.perSecond <= ${DELIVERY_LIMITS.rateLimitPerSecond.max}.0`,
              message: `rateLimit.perSecond must be a positive number of deliveries per second, from ${DELIVERY_LIMITS.rateLimitPerSecond.min} (one every ${1 / DELIVERY_LIMITS.rateLimitPerSecond.min} s) to ${DELIVERY_LIMITS.rateLimitPerSecond.max}`,
              fieldPath: '.perSecond',
            },
          ],
        },
      ),
    ),
    maxConcurrency: Type.Optional(
      Type.Integer({
        minimum: DELIVERY_LIMITS.maxConcurrency.min,
        maximum: DELIVERY_LIMITS.maxConcurrency.max,
        description: 'requests in flight to this endpoint at once across all workers; over it a delivery waits (no attempt spent)',
        'x-kubernetes-validations': [
          {
            rule: `self >= ${DELIVERY_LIMITS.maxConcurrency.min} && self <= ${DELIVERY_LIMITS.maxConcurrency.max}`,
            message: `maxConcurrency must be a whole number of requests in flight, ${DELIVERY_LIMITS.maxConcurrency.min}..${DELIVERY_LIMITS.maxConcurrency.max}`,
          },
        ],
      }),
    ),
    active: Type.Optional(Type.Boolean({ default: true, description: 'false keeps the endpoint configured but routes nothing to it' })),
    propagateTraceContext: Type.Optional(
      Type.Boolean({
        default: true,
        description: "send the delivery's W3C traceparent (and tracestate) to the endpoint when the worker traces; false: none",
      }),
    ),
    proxy: Type.Optional(
      Type.Union([Type.Literal('Default'), Type.Literal('Direct')], {
        description:
          "Default (or absent): HTTP deliveries go through the installation's forward proxy when it has one (DELIVERY_PROXY_URL) and " +
          'DELIVERY_NO_PROXY does not name the host; Direct: never through it (docs/deploy.md, "A static egress address")',
      }),
    ),
    format: Type.Optional(
      Type.Union(
        ENDPOINT_FORMATS.map((f) => Type.Literal(f)),
        {
          default: 'Raw',
          description:
            'Raw (default): the body as it came, with its Content-Type. CloudEventsBinary / CloudEventsStructured: a CloudEvent 1.0 ' +
            '(id = the event id, source = /webhook-fanout/<source>, type = the event type, time = when it was received) in the HTTP ' +
            "binding's binary mode (ce-* headers, the body as data) or structured mode (an application/cloudevents+json envelope)",
        },
      ),
    ),
    filter: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: FILTER_MAX_LENGTH,
        description:
          'CEL expression over `event` (source, type, id, receivedAt, headers, data) that must be true for an event to be delivered ' +
          'here, on top of source and eventType, e.g. event.data.amount >= 100; an invalid one sets Ready=False InvalidFilter and the last valid one stays (docs/content-routing.md)',
      }),
    ),
    transform: Type.Optional(
      Type.Object(
        {
          jsonata: Type.String({
            minLength: 1,
            maxLength: TRANSFORM_MAX_LENGTH,
            description:
              'JSONata expression over the event (type, data, headers, ...) whose result is the JSON body sent and signed; an invalid one sets Ready=False InvalidTransform',
          }),
        },
        { additionalProperties: false, description: 'reshape the body sent to this endpoint (docs/content-routing.md)' },
      ),
    ),
    ordering: Type.Optional(
      Type.Object(
        {
          key: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: FILTER_MAX_LENGTH,
              description:
                'CEL over `event` (as spec.filter sees it) giving the key, a string, e.g. event.data.customer; absent: the whole endpoint is ' +
                'one sequence; an invalid one sets Ready=False InvalidOrderingKey and the last valid one stays (docs/ordering.md)',
            }),
          ),
          onFailure: Type.Optional(
            Type.Union(literals(ORDERING_POLICIES), {
              default: 'Block',
              description:
                'Block (default): a delivery that ends FAILED holds its key until it is replayed or skipped; Skip: the key moves on',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'deliver in order per key: a delivery starts only after the previous one of its key ended, in the order ingest accepted the events (docs/ordering.md)',
        },
      ),
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
        {
          additionalProperties: false,
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
          ],
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    description: 'Where and how to re-deliver the events of one inbound source.',
    'x-kubernetes-validations': [
      {
        rule: `has(self.url) || (${NOT_HTTP})`,
        message: URL_REQUIRED_MESSAGE,
        fieldPath: '.url',
        reason: 'FieldValueRequired',
      },
      {
        rule: `!has(self.url) || !(${NOT_HTTP})`,
        message: URL_FORBIDDEN_MESSAGE,
        fieldPath: '.url',
        reason: 'FieldValueForbidden',
      },
      {
        rule: `!has(self.auth) || !(${NOT_HTTP}) || !(${authTypeIs('Basic', 'self.auth')} || ${authTypeIs('Bearer', 'self.auth')} || ${authTypeIs('OAuth2ClientCredentials', 'self.auth')})`,
        message: AUTH_FORBIDDEN_MESSAGE,
        fieldPath: '.auth',
        reason: 'FieldValueForbidden',
      },
      {
        rule: `!has(self.signing) || !has(self.auth) || !(${SIGNING_AUTH_TYPES.map((t) => authTypeIs(t, 'self.auth')).join(' || ')})`,
        message: SIGNING_TWICE_MESSAGE,
        fieldPath: '.signing',
        reason: 'FieldValueForbidden',
      },
    ],
  },
);
export type WebhookEndpointSpec = Static<typeof WebhookEndpointSpec>;

const inboundVerificationFields = {
  type: Type.Union(literals(VERIFICATION_TYPES), {
    default: 'Basic',
    description: 'Basic, Stripe, GitHub, Shopify, Slack, StandardWebhooks or HMAC',
  }),
  secretRefs: Type.Optional(
    Type.Array(SecretKeyRef, {
      minItems: VERIFICATION_LIMITS.secrets.min,
      maxItems: VERIFICATION_LIMITS.secrets.max,
      description: 'the signing secret; up to three while one is rotated (a signature valid under any of them is accepted)',
      'x-kubernetes-list-type': 'atomic',
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
  algorithm: Type.Optional(Type.Union(literals(HMAC_ALGORITHMS), { description: 'HMAC: the hash, default sha256' })),
  encoding: Type.Optional(Type.Union(literals(SIGNATURE_ENCODINGS), { description: 'HMAC: how the signature is written, default hex' })),
  prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'HMAC: text before the signature, e.g. sha256=' })),
};
// the type comes from the fields, not the schema: the schema carries rules typed by it
export type InboundVerification = Static<TObject<typeof inboundVerificationFields>>;

/**
 * What JSON Schema can not say about an InboundCredential, once: the field a rule is about carries
 * it as CEL (its x-kubernetes-validations) and dev mode checks the same predicate
 * (custom-resources/to-rows.ts), so both refuse the same manifest with the same words.
 */
export interface SpecRule<S> extends CelRule {
  holds(spec: S): boolean;
}

/** The CEL half of spec rules, as the field that carries them declares it. */
const celOf = <S>(rules: SpecRule<S>[]): CelRule[] => rules.map(({ holds: _, ...cel }) => cel);

const signed = (v: InboundVerification | undefined): boolean => v !== undefined && v.type !== 'Basic';
const TIMESTAMPED_CEL = `[${TIMESTAMPED_TYPES.map((t) => `'${t}'`).join(', ')}]`;

export const VERIFICATION_RULES: SpecRule<InboundVerification>[] = [
  {
    rule: "self.type == 'Basic' || has(self.secretRefs)",
    message: 'verification.secretRefs is required for a signature type: the signing secret, 1 to 3 while rotating',
    fieldPath: '.secretRefs',
    reason: 'FieldValueRequired',
    holds: (v) => v.type === 'Basic' || v.secretRefs !== undefined,
  },
  {
    rule: "self.type != 'Basic' || !has(self.secretRefs)",
    message: 'verification.secretRefs is not used with type Basic: its password is spec.passwordSecretRef',
    fieldPath: '.secretRefs',
    reason: 'FieldValueForbidden',
    holds: (v) => v.type !== 'Basic' || v.secretRefs === undefined,
  },
  {
    rule: `!has(self.toleranceSeconds) || self.type in ${TIMESTAMPED_CEL}`,
    message: `verification.toleranceSeconds is only used with ${TIMESTAMPED_TYPES.join(', ')} (the types that sign a timestamp)`,
    fieldPath: '.toleranceSeconds',
    reason: 'FieldValueForbidden',
    holds: (v) => v.toleranceSeconds === undefined || (TIMESTAMPED_TYPES as readonly string[]).includes(v.type),
  },
  {
    rule: "self.type != 'HMAC' || has(self.header)",
    message: 'verification.header is required for type HMAC: the request header that carries the signature',
    fieldPath: '.header',
    reason: 'FieldValueRequired',
    holds: (v) => v.type !== 'HMAC' || v.header !== undefined,
  },
  {
    rule: "self.type == 'HMAC' || !(has(self.header) || has(self.algorithm) || has(self.encoding) || has(self.prefix))",
    message: 'verification.header, algorithm, encoding and prefix are only used with type HMAC',
    reason: 'FieldValueForbidden',
    holds: (v) => v.type === 'HMAC' || (v.header ?? v.algorithm ?? v.encoding ?? v.prefix) === undefined,
  },
];

export const InboundVerification = Type.Object(inboundVerificationFields, {
  additionalProperties: false,
  description:
    'Basic (default): username + passwordSecretRef. Stripe, GitHub, Shopify, Slack, StandardWebhooks or HMAC: the signature ' +
    'of each call is checked over the raw body with the secrets of secretRefs (docs/sources.md); Basic may be required beside it',
  'x-kubernetes-validations': celOf(VERIFICATION_RULES),
});

/** A retention age of a source: a duration (90d, 36h, 30m, 45s) or `forever`. */
export const RETENTION_AGE_PATTERN = `^(${KEEP_FOREVER}|${DURATION_PATTERN.slice(1, -1)})$`;

/** What the CRD's CEL rule (and dev mode) says when a source would drop payloads after deleting its events. */
export const RETENTION_ORDER_MESSAGE = 'retention.payloadMaxAge must be shorter than retention.maxAge: events are deleted whole at maxAge';

/** A retention age in seconds, in CEL: the pattern has made sure it is digits and one unit. */
const celSeconds = (v: string) =>
  `int(${v}.substring(0, size(${v}) - 1)) * (${v}.endsWith('d') ? 86400 : ${v}.endsWith('h') ? 3600 : ${v}.endsWith('m') ? 60 : 1)`;

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
  {
    additionalProperties: false,
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
    ],
  },
);

/** A label's key (an optional DNS-subdomain prefix and /, then a name of up to 63) and value, as Kubernetes validates them. */
export const LABEL_KEY_PATTERN =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';
export const LABEL_VALUE_PATTERN = '^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$';

const selectorRequirementFields = {
  key: Type.String({ minLength: 1, maxLength: 317, pattern: LABEL_KEY_PATTERN, description: 'a label key' }),
  operator: Type.Union(
    LABEL_SELECTOR_OPERATORS.map((o) => Type.Literal(o)),
    { description: 'In, NotIn, Exists or DoesNotExist' },
  ),
  values: Type.Optional(
    Type.Array(Type.String({ maxLength: 63, pattern: LABEL_VALUE_PATTERN }), {
      maxItems: 64,
      description: 'In and NotIn: one or more values; Exists and DoesNotExist: none',
      'x-kubernetes-list-type': 'atomic',
    }),
  ),
};
type LabelSelectorRequirement = Static<TObject<typeof selectorRequirementFields>>;

export const SELECTOR_REQUIREMENT_RULES: SpecRule<LabelSelectorRequirement>[] = [
  {
    rule: "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) : (!has(self.values) || size(self.values) == 0)",
    message: 'a matchExpressions entry with operator In or NotIn needs values; Exists and DoesNotExist take none',
    fieldPath: '.values',
    holds: (e) => (e.operator === 'In' || e.operator === 'NotIn') === (e.values ?? []).length > 0,
  },
];

/** A standard LabelSelector (metav1.LabelSelector), over Namespace labels here. */
export const LabelSelector = Type.Object(
  {
    matchLabels: Type.Optional(
      Type.Record(
        Type.String({ pattern: LABEL_KEY_PATTERN, maxLength: 317 }),
        Type.String({ pattern: LABEL_VALUE_PATTERN, maxLength: 63 }),
        {
          maxProperties: 32,
          description: 'labels the namespace must carry, with these values',
          'x-kubernetes-validations': [
            {
              // a CRD has no key pattern (the generator drops patternProperties' key): CEL checks the keys
              rule: `self.all(k, size(k) <= 317 && k.matches('${LABEL_KEY_PATTERN.replace(/\\/g, '\\\\')}'))`,
              message: 'matchLabels keys must be label keys: an optional DNS subdomain and /, then a name of up to 63 characters',
            },
          ],
        },
      ),
    ),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object(selectorRequirementFields, {
          additionalProperties: false,
          'x-kubernetes-validations': celOf(SELECTOR_REQUIREMENT_RULES),
        }),
        { maxItems: 32, description: 'requirements the namespace labels must all meet', 'x-kubernetes-list-type': 'atomic' },
      ),
    ),
  },
  { additionalProperties: false },
);

const allowedNamespacesFields = {
  from: Type.Optional(
    Type.Union(
      NAMESPACES_FROM.map((f) => Type.Literal(f)),
      {
        description:
          "Same: endpoints in this credential's namespace only; All: in any namespace; Selector: in the namespaces whose labels the " +
          "selector matches (this one too only if it matches). Absent: the installation's default (tenancy.defaultAllowedNamespaces, Same unless set)",
      },
    ),
  ),
  selector: Type.Optional(
    withMarkers(LabelSelector, { description: 'with from: Selector, which namespaces: a standard LabelSelector over Namespace labels' }),
  ),
};
type AllowedNamespaces = Static<TObject<typeof allowedNamespacesFields>>;

export const ALLOWED_NAMESPACES_RULES: SpecRule<AllowedNamespaces>[] = [
  {
    rule: "!has(self.from) || self.from != 'Selector' || has(self.selector)",
    message: 'allowedEndpoints.namespaces.selector is required when from is Selector: a LabelSelector over Namespace labels',
    fieldPath: '.selector',
    reason: 'FieldValueRequired',
    holds: (n) => n.from !== 'Selector' || n.selector !== undefined,
  },
  {
    rule: "!has(self.selector) || (has(self.from) && self.from == 'Selector')",
    message: 'allowedEndpoints.namespaces.selector is only used with from: Selector',
    fieldPath: '.selector',
    reason: 'FieldValueForbidden',
    holds: (n) => n.selector === undefined || n.from === 'Selector',
  },
];

/** Which namespaces' WebhookEndpoints may subscribe to the source (docs/tenancy.md), as a Gateway listener's allowedRoutes. */
export const AllowedEndpoints = Type.Object(
  {
    namespaces: Type.Optional(
      Type.Object(allowedNamespacesFields, {
        additionalProperties: false,
        description: 'the namespaces whose endpoints may subscribe',
        'x-kubernetes-validations': celOf(ALLOWED_NAMESPACES_RULES),
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'which WebhookEndpoints may subscribe to this source (docs/tenancy.md); an endpoint not allowed is Ready=False NotAllowedBySource ' +
      'and receives nothing. Absent: the installation default (tenancy.defaultAllowedNamespaces, Same unless set)',
  },
);

const inboundCredentialFields = {
  source: Type.String({ pattern: SOURCE_PATTERN, description: 'the {source} of /api/webhooks/{source}' }),
  username: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'HTTP Basic username the sender presents (Basic, alone or beside a signature)',
    }),
  ),
  passwordSecretRef: Type.Optional(
    withMarkers(SecretKeyRef, {
      description: 'the password, or a bcrypt hash of it ($2a$, $2b$ or $2y$); only a bcrypt hash reaches the database',
    }),
  ),
  // defaulted so that `kubectl get ic` shows Basic where a resource names no verification
  verification: Type.Optional({ ...InboundVerification, default: { type: 'Basic' } }),
  eventIdFrom: Type.Optional(extractionRuleField('where the external event id is read; default: body id, then Webhook-Id / X-Event-Id')),
  eventTypeFrom: Type.Optional(extractionRuleField('where the event type is read; default: body type, then X-Event-Type')),
  retention: Type.Optional(SourceRetention),
  format: Type.Optional(
    Type.Union(
      INBOUND_FORMATS.map((f) => Type.Literal(f)),
      {
        default: 'Raw',
        description:
          "Raw (default): any body, the event id and type read from the provider's places or eventIdFrom / eventTypeFrom. " +
          'CloudEvents: every request must be a CloudEvent 1.0 (HTTP binary or structured mode); its id and type are the event id and type',
      },
    ),
  ),
  allowedEndpoints: Type.Optional(AllowedEndpoints),
};
// the type comes from the fields, not the schema: the schema carries rules typed by it
export type InboundCredentialSpec = Static<TObject<typeof inboundCredentialFields>>;

export const CREDENTIAL_RULES: SpecRule<InboundCredentialSpec>[] = [
  {
    rule: "(has(self.verification) && self.verification.type != 'Basic') || (has(self.username) && has(self.passwordSecretRef))",
    message: 'username and passwordSecretRef are required when verification.type is Basic (the default when verification is absent)',
    reason: 'FieldValueRequired',
    holds: (s) => signed(s.verification) || (s.username !== undefined && s.passwordSecretRef !== undefined),
  },
  {
    rule: "!has(self.format) || self.format != 'CloudEvents' || !(has(self.eventIdFrom) || has(self.eventTypeFrom))",
    message: 'eventIdFrom and eventTypeFrom are not used with format CloudEvents: a CloudEvent names its own id and type',
    reason: 'FieldValueForbidden',
    holds: (s) => s.format !== 'CloudEvents' || (s.eventIdFrom === undefined && s.eventTypeFrom === undefined),
  },
  {
    rule: 'has(self.username) == has(self.passwordSecretRef)',
    message: 'username and passwordSecretRef go together: set both (Basic, alone or beside a signature) or neither',
    holds: (s) => (s.username === undefined) === (s.passwordSecretRef === undefined),
  },
];

export const InboundCredentialSpec = Type.Object(inboundCredentialFields, {
  additionalProperties: false,
  description:
    'How inbound calls of one source prove they come from it: HTTP Basic, a provider signature over the raw body (verification), or both.',
  'x-kubernetes-validations': celOf(CREDENTIAL_RULES),
});

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

/** The delivery statuses a WebhookReplay may take (FAILED by default; SUCCESS to send delivered ones again). */
export const REPLAY_STATUSES = ['FAILED', 'SUCCESS'] as const;
/** What the CRD (and dev mode) says when a WebhookReplay's spec is changed: it ran, or runs, for the spec it had. */
export const REPLAY_IMMUTABLE_MESSAGE =
  'spec is immutable: a WebhookReplay replays once, for the spec it was created with; create a new WebhookReplay (another name) to replay again';
const RFC3339 = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$';

/** What a WebhookReplay does: Replay (the default) the deliveries of a window, or Skip one FAILED ordered delivery (docs/ordering.md). */
export const REPLAY_ACTIONS = ['Replay', 'Skip'] as const;
const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

const webhookReplayFields = {
  action: Type.Optional(
    Type.Union(literals(REPLAY_ACTIONS), {
      default: 'Replay',
      description:
        'Replay (default): replay the deliveries of endpointRef in window; Skip: the FAILED ordered delivery deliveryId stops holding ' +
        'its key and the next one of its key starts, as POST /api/deliveries/{id}/skip (docs/ordering.md)',
    }),
  ),
  deliveryId: Type.Optional(
    Type.String({
      pattern: UUID_PATTERN,
      maxLength: 36,
      description: 'Skip only: the id of the FAILED delivery that holds its key, a delivery to an endpoint of this namespace',
    }),
  ),
  endpointRef: Type.Optional(
    Type.Object(
      {
        name: Type.String({
          minLength: 1,
          maxLength: 253,
          description: 'name of a WebhookEndpoint in the namespace of this WebhookReplay',
        }),
      },
      { additionalProperties: false, description: 'Replay: the endpoint whose deliveries are replayed, in this namespace only' },
    ),
  ),
  window: Type.Optional(
    Type.Object(
      {
        from: Type.String({ format: 'date-time', pattern: RFC3339, maxLength: 64, description: 'events received at or after this time' }),
        to: Type.String({ format: 'date-time', pattern: RFC3339, maxLength: 64, description: 'events received before this time' }),
      },
      {
        additionalProperties: false,
        description: "Replay: the events' received time, from inclusive, to exclusive (RFC 3339)",
        'x-kubernetes-validations': [
          { rule: 'timestamp(self.from) < timestamp(self.to)', message: 'window.from must be before window.to', fieldPath: '.to' },
        ],
      },
    ),
  ),
  statuses: Type.Optional(
    Type.Array(Type.Union(literals(REPLAY_STATUSES), { description: 'FAILED or SUCCESS' }), {
      minItems: 1,
      maxItems: 2,
      default: ['FAILED'],
      'x-kubernetes-list-type': 'set',
      description: 'which deliveries: FAILED (the default), SUCCESS to send delivered ones again, or both',
    }),
  ),
  eventTypes: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
      maxItems: 50,
      'x-kubernetes-list-type': 'set',
      description: 'only events of these types; absent or empty: every type',
    }),
  ),
  dryRun: Type.Optional(Type.Boolean({ default: false, description: 'true: status counts what would be replayed; nothing is sent' })),
  ttlSecondsAfterFinished: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 31_536_000,
      description: 'delete this WebhookReplay this many seconds after it finished (as a Job); absent: kept until deleted',
    }),
  ),
};
// the type comes from the fields, not the schema: the schema carries rules typed by it
export type WebhookReplaySpec = Static<TObject<typeof webhookReplayFields>>;

const skips = (s: WebhookReplaySpec): boolean => s.action === 'Skip';
const SKIP_CEL = "(has(self.action) && self.action == 'Skip')";

/** What each action takes: the CRD's CEL rules, and the same predicates for dev mode (replayRuleProblem). */
export const REPLAY_RULES: SpecRule<WebhookReplaySpec>[] = [
  {
    rule: `${SKIP_CEL} || (has(self.endpointRef) && has(self.window))`,
    message: 'endpointRef and window are required with action Replay (the default)',
    reason: 'FieldValueRequired',
    holds: (s) => skips(s) || (s.endpointRef !== undefined && s.window !== undefined),
  },
  {
    rule: `!${SKIP_CEL} || has(self.deliveryId)`,
    message: 'deliveryId is required with action Skip: the id of the FAILED delivery that holds its key',
    fieldPath: '.deliveryId',
    reason: 'FieldValueRequired',
    holds: (s) => !skips(s) || s.deliveryId !== undefined,
  },
  {
    rule: `${SKIP_CEL} || !has(self.deliveryId)`,
    message: 'deliveryId is only used with action Skip',
    fieldPath: '.deliveryId',
    reason: 'FieldValueForbidden',
    holds: (s) => skips(s) || s.deliveryId === undefined,
  },
  {
    rule:
      `!${SKIP_CEL} || (!has(self.endpointRef) && !has(self.window) && !has(self.eventTypes) && ` +
      "!(has(self.dryRun) && self.dryRun) && (!has(self.statuses) || self.statuses.all(s, s == 'FAILED')))",
    message:
      'endpointRef, window, eventTypes, dryRun and statuses are not used with action Skip: it skips the one delivery deliveryId names',
    reason: 'FieldValueForbidden',
    holds: (s) =>
      !skips(s) ||
      (s.endpointRef === undefined &&
        s.window === undefined &&
        s.eventTypes === undefined &&
        s.dryRun !== true &&
        (s.statuses ?? []).every((x) => x === 'FAILED')),
  },
];

export const WebhookReplaySpec = Type.Object(webhookReplayFields, {
  additionalProperties: false,
  description:
    "Replays, once, an endpoint's deliveries of the events received in a window (FAILED ones by default), through the admin API's " +
    'bulk replay path; or, with action Skip, skips one FAILED ordered delivery that holds its key.',
  'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: REPLAY_IMMUTABLE_MESSAGE }, ...celOf(REPLAY_RULES)],
});

/** The first rule a WebhookReplay spec breaks, in the CRD's words (dev mode runs no CEL); undefined when none. */
export function replayRuleProblem(spec: WebhookReplaySpec): string | undefined {
  const broken = REPLAY_RULES.find((r) => !r.holds(spec));
  if (broken) return `spec: ${broken.message}`;
  const w = spec.window;
  return w === undefined || Date.parse(w.from) < Date.parse(w.to) ? undefined : 'spec.window.to: window.from must be before window.to';
}

export type WebhookReplayResource = Resource<'WebhookReplay', WebhookReplaySpec>;
