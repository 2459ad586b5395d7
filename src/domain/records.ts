import type { AuthType, DeliveryStatus, EventStatus, HttpMethod, SigningType } from './statuses.js';

/** Where an inbound source's external event id or type is read from. */
export interface ExtractionRule {
  /** dot-separated path into a JSON body, e.g. "data.id" */
  jsonPath?: string;
  /** request header, case-insensitive */
  header?: string;
}

/**
 * How a source's calls prove they come from it (docs/sources.md): HTTP Basic, a provider's
 * signature over the raw body, or both. Basic is the default when a resource names none.
 */
export const VERIFICATION_TYPES = ['Basic', 'Stripe', 'GitHub', 'Shopify', 'Slack', 'StandardWebhooks', 'HMAC'] as const;
export type VerificationType = (typeof VERIFICATION_TYPES)[number];
export type SignatureType = Exclude<VerificationType, 'Basic'>;
/** the schemes whose signature covers a timestamp, which toleranceSeconds bounds */
export const TIMESTAMPED_TYPES: readonly SignatureType[] = ['Stripe', 'Slack', 'StandardWebhooks'];
/**
 * How a source's requests are read (InboundCredential spec.format, docs/cloudevents.md): Raw takes
 * the event id and type from the provider's places or the extraction rules; CloudEvents from the
 * CloudEvent itself (binary or structured mode), refusing a request that is not one.
 */
export const INBOUND_FORMATS = ['Raw', 'CloudEvents'] as const;
export type InboundFormat = (typeof INBOUND_FORMATS)[number];
export const HMAC_ALGORITHMS = ['sha1', 'sha256', 'sha512'] as const;
export const SIGNATURE_ENCODINGS = ['hex', 'base64'] as const;

export const VERIFICATION_LIMITS = {
  /** secretRefs: one, or up to three while a secret is rotated */
  secrets: { min: 1, max: 3 },
  /** what Stripe's, Slack's and the Standard Webhooks libraries default to */
  toleranceSeconds: { default: 300, min: 1, max: 86_400 },
} as const;

/** A signature scheme with its secrets resolved (what the webhook_inbound_credential row keeps). */
export interface SignatureVerification {
  type: SignatureType;
  /** 1..3; a signature valid under any of them is accepted */
  secrets: string[];
  toleranceSeconds: number;
  /** HMAC only: where the signature is and how it is made */
  hmac?: {
    header: string;
    algorithm: (typeof HMAC_ALGORITHMS)[number];
    encoding: (typeof SIGNATURE_ENCODINGS)[number];
    prefix: string;
  };
}

export interface InboundCredential {
  id: string;
  source: string;
  /** null with passwordHash: the source checks no Basic credential, only its signature */
  username: string | null;
  passwordHash: string | null;
  /** null: Basic only */
  verification: SignatureVerification | null;
  eventIdRule: ExtractionRule | null;
  eventTypeRule: ExtractionRule | null;
  /** Raw (the default) or CloudEvents: where the event id and type are read */
  format: InboundFormat;
  resourceUid: string | null;
  resourceName: string | null;
  /** the source's own retention ages in seconds (spec.retention): null = the global one, 0 = forever */
  retentionMaxAgeSeconds: number | null;
  retentionPayloadMaxAgeSeconds: number | null;
  /** the namespace of the resource that wrote the row (docs/tenancy.md); null: written by hand or before tenancy */
  namespace: string | null;
  /** spec.allowedEndpoints as the resource says it; null: it says nothing (the installation's default applies) */
  allowedEndpoints: AllowedEndpoints | null;
  updatedAt: Date;
}

/** Which namespaces' endpoints a source's credential lets subscribe (the Gateway API's allowedRoutes). */
export const NAMESPACES_FROM = ['Same', 'All', 'Selector'] as const;
export type NamespacesFrom = (typeof NAMESPACES_FROM)[number];

export const LABEL_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
/** A standard Kubernetes LabelSelector (metav1.LabelSelector). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: (typeof LABEL_SELECTOR_OPERATORS)[number]; values?: string[] }>;
}
export interface AllowedEndpoints {
  namespaces?: { from?: NamespacesFrom; selector?: LabelSelector };
}

/**
 * Why an endpoint may not subscribe to its source (webhook_endpoint.denied_reason, and its Ready
 * reason): no event is routed to it and its pending deliveries end FAILED (docs/tenancy.md).
 */
export const DENIED_REASONS = ['NotAllowedBySource', 'SourceNotFound'] as const;
export type DeniedReason = (typeof DENIED_REASONS)[number];

/** last_error of a delivery failed without a request because its source stopped allowing its endpoint, then the reason in brackets. */
export const REVOKED_ERROR = 'revoked: endpoint not allowed by its source';

/**
 * What an endpoint is sent (WebhookEndpoint spec.format, docs/cloudevents.md): the body as it came
 * (Raw, the default), or a CloudEvent 1.0 of it in the HTTP binding's binary or structured mode.
 */
export const ENDPOINT_FORMATS = ['Raw', 'CloudEventsBinary', 'CloudEventsStructured'] as const;
export type EndpointFormat = (typeof ENDPOINT_FORMATS)[number];

/** Where an endpoint's deliveries go (spec.destination.type; docs/destinations.md). HTTP: today's url and auth. */
export const DESTINATION_TYPES = ['HTTP', 'SQS', 'SNS', 'EventBridge', 'Kafka', 'RabbitMQ', 'NATS'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

export const KAFKA_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type KafkaSaslMechanism = (typeof KAFKA_SASL_MECHANISMS)[number];

/** An AWS destination's access: the pod's identity (the default credential chain), optionally a role it assumes. */
export interface AwsAccess {
  region: string;
  /** another endpoint than the region's: a VPC endpoint, or moto/LocalStack in tests; null: the region's */
  endpointUrl: string | null;
  /** assumed with the pod's identity for this endpoint's calls; null: the pod's identity itself */
  roleArn: string | null;
}

/** TLS to a broker: on when present; the CA bundle (from a Secret) when the broker's certificate is not signed by a public CA. */
export interface BrokerTls {
  /** a CA bundle is set (its PEM is in the endpoint's destination secrets, `caBundle`) */
  caBundle: boolean;
}

/**
 * An endpoint's destination as its row keeps it, without a secret: what spec.destination says,
 * with each Secret reference reduced to whether it is set (the values: DestinationSecrets).
 */
export type EndpointDestination =
  | { type: 'HTTP' }
  | ({ type: 'SQS'; queueUrl: string } & AwsAccess)
  | ({ type: 'SNS'; topicArn: string } & AwsAccess)
  | ({
      type: 'EventBridge';
      eventBusName: string;
      /** the entries' DetailType; null: the event's type */
      detailType: string | null;
    } & AwsAccess)
  | {
      type: 'Kafka';
      bootstrapServers: string[];
      topic: string;
      tls: BrokerTls | null;
      /** the password is in DestinationSecrets (`password`) */
      sasl: { mechanism: KafkaSaslMechanism; username: string } | null;
    }
  | {
      type: 'RabbitMQ';
      /** amqp:// or amqps:// host, port and vhost, without credentials */
      url: string;
      /** '' is the default exchange (the routing key names the queue) */
      exchange: string;
      /** null: ''; an ordered endpoint routes by its ordering key instead */
      routingKey: string | null;
      tls: BrokerTls | null;
      /** the password is in DestinationSecrets (`password`) */
      username: string | null;
    }
  | {
      type: 'NATS';
      servers: string[];
      /** published with JetStream: a stream must capture it */
      subject: string;
      tls: BrokerTls | null;
      /** the password is in DestinationSecrets (`password`); a token there instead (`token`) when no username */
      username: string | null;
    };

/** A destination's credentials, read from Secrets of the endpoint's namespace only; never shown by the API. */
export interface DestinationSecrets {
  /** Kafka SASL, RabbitMQ, NATS user */
  password?: string;
  /** NATS token */
  token?: string;
  /** PEM of the CA bundle (tls.caBundleRef) */
  caBundle?: string;
}

/** The HTTP destination: an endpoint row written before spec.destination, or without one. */
export const HTTP_DESTINATION: EndpointDestination = { type: 'HTTP' };

/**
 * What a broker answered to a publish it acknowledged, as the attempt log keeps it (docs/destinations.md):
 * each destination fills what its broker gives. HTTP has none (the status and body say it).
 */
export interface Receipt {
  /** SQS, SNS, EventBridge, RabbitMQ (when set): the broker's id of the message */
  messageId?: string;
  /** Kafka */
  partition?: number;
  /** Kafka: the record's offset in its partition */
  offset?: string;
  /** NATS JetStream (the stream sequence), SQS FIFO (the sequence number) */
  sequence?: string;
}

/** How an OAuth2 client proves itself at the token endpoint (RFC 6749 2.3.1, RFC 7523): spec.auth.oauth2.clientAuthentication. */
export const OAUTH2_CLIENT_AUTHENTICATIONS = ['ClientSecretBasic', 'ClientSecretPost', 'PrivateKeyJwt'] as const;
export type OAuth2ClientAuthentication = (typeof OAUTH2_CLIENT_AUTHENTICATIONS)[number];

/** An endpoint's OAuth2 client credentials grant, without its secret (the endpoint's authSecret). */
export interface OAuth2Client {
  tokenUrl: string;
  clientId: string;
  /** requested as `scope`, space-separated; empty: none asked */
  scopes: string[];
  /** sent as the `audience` parameter when set (Auth0's, Okta's name; the dev identity provider reads it as RFC 8707's resource) */
  audience: string | null;
  clientAuthentication: OAuth2ClientAuthentication;
  /** PrivateKeyJwt: the `kid` of the assertion's header; null: none */
  keyId: string | null;
}

export interface Endpoint {
  id: string;
  name: string;
  source: string;
  /** null = catch-all for every event of the source */
  eventType: string | null;
  url: string;
  method: HttpMethod;
  authType: AuthType;
  authUsername: string | null;
  /** BASIC password, BEARER token, or OAUTH2_CLIENT_CREDENTIALS' client secret or private key (PEM, PrivateKeyJwt) */
  authSecret: string | null;
  /** OAUTH2_CLIENT_CREDENTIALS: the token endpoint and the client (spec.auth.oauth2, docs/endpoints.md); else null */
  authOAuth2: OAuth2Client | null;
  signingType: SigningType;
  /** HMAC signing secret, the whsec_ key of STANDARD_WEBHOOKS, or the whsk_ key of STANDARD_WEBHOOKS_ED25519 */
  signingSecret: string | null;
  /** STANDARD_WEBHOOKS(_ED25519) only: the key being rotated out, still signed with until it is removed */
  previousSigningSecret: string | null;
  /** STANDARD_WEBHOOKS_ED25519: the whpk_ public keys receivers verify with, the current key's first; else empty */
  signingPublicKeys: string[];
  /** spec.tls (docs/endpoints-tls.md): the client certificate (PEM, its chain after it) and key for mTLS; null: none */
  tlsClientCertificate: string | null;
  tlsClientKey: string | null;
  /** PEM CA certificates that replace the system roots for this endpoint; null: the system roots */
  tlsCaBundle: string | null;
  /** when the client certificate expires (the expiry metric and alert read it) */
  tlsClientCertificateExpiresAt: Date | null;
  customHeaders: Record<string, string>;
  maxAttempts: number;
  timeoutSeconds: number;
  /** 4xx codes this endpoint opted in to retrying */
  retryOnStatus: number[];
  /** deliveries per second across all workers; null = no limit (docs/limits.md) */
  rateLimitPerSecond: number | null;
  /** requests in flight across all workers; null = no limit */
  maxConcurrency: number | null;
  /** not called before this (a 429/503 with Retry-After asked for it): state, not configuration */
  pausedUntil: Date | null;
  active: boolean;
  /** FAILED deliveries in a row that disable the endpoint; 0 = never (docs/endpoint-health.md) */
  autoDisableAfter: number;
  /** send a W3C traceparent with each delivery when tracing is on (spec.propagateTraceContext, default true; docs/tracing.md) */
  propagateTraceContext: boolean;
  /** spec.proxy Direct: HTTP deliveries never go through the installation's forward proxy (DELIVERY_PROXY_URL) */
  proxyDirect: boolean;
  /** Raw (default), CloudEventsBinary or CloudEventsStructured */
  format: EndpointFormat;
  /** where its deliveries go (spec.destination); HTTP: `url` and the auth above */
  destination: EndpointDestination;
  /** the destination's credentials (Secrets of the endpoint's namespace); {} for HTTP */
  destinationSecrets: DestinationSecrets;
  /** spec.filter, CEL, the last that compiled; null = every event of its source and type (docs/content-routing.md) */
  filter: string | null;
  /** spec.transform.jsonata, the last that compiled; null = the body as it came */
  transform: string | null;
  /** spec.ordering (docs/ordering.md); null = each delivery on its own */
  ordering: EndpointOrdering | null;
  /** health, kept by deliveries and enable, never by the resource: deliveries in a row that ended FAILED */
  consecutiveFailures: number;
  /** not null: disabled since then; its deliveries fail at once and wait for a re-enable */
  disabledAt: Date | null;
  /**
   * OAuth2: the token endpoint refused our client credentials (invalid_client, unauthorized_client,
   * 401) with these words, never a secret; its deliveries wait, the resource is Ready=False
   * TokenRequestRefused. Kept by deliveries, cleared by a token or a new secret. null: none.
   */
  tokenRefusal: { message: string; at: Date } | null;
  /**
   * OAuth2: the token endpoint is unavailable (5xx, 408/429, a timeout, a refused connection) since
   * then, what failed last in these words (never a secret); its deliveries wait. Kept by deliveries,
   * cleared by a token, a refusal (it answered) or a new secret or token endpoint. null: none.
   */
  tokenUnavailable: { message: string; since: Date } | null;
  /** the namespace of the resource that wrote the row; null: written by hand or before tenancy */
  namespace: string | null;
  /** null: allowed by its source's credential (routed); else why not (docs/tenancy.md) */
  deniedReason: DeniedReason | null;
  resourceUid: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a FAILED delivery of an ordered endpoint does to its key (docs/ordering.md). */
export const ORDERING_POLICIES = ['Block', 'Skip'] as const;
export type OrderingPolicy = (typeof ORDERING_POLICIES)[number];

/** An endpoint's spec.ordering: the key's CEL, the last that compiled (null: one sequence), and its policy. */
export interface EndpointOrdering {
  key: string | null;
  onFailure: OrderingPolicy;
}

/** What an endpoint's deliveries keep, not its resource: left out of what a resource configures. */
export type EndpointHealthField = 'consecutiveFailures' | 'disabledAt' | 'tokenRefusal' | 'tokenUnavailable';

/** ACTIVE or DISABLED, as the admin API and `kubectl get whe` show it. */
export const ENDPOINT_STATES = ['ACTIVE', 'DISABLED'] as const;
export type EndpointState = (typeof ENDPOINT_STATES)[number];
export const endpointState = (e: { disabledAt: Date | null }): EndpointState => (e.disabledAt === null ? 'ACTIVE' : 'DISABLED');

/** last_error of a delivery failed without a request because its endpoint was disabled. */
export const ENDPOINT_DISABLED_ERROR = 'endpoint disabled';

/** The annotation whose new value re-enables a disabled endpoint (operator and dev mode). */
export const ENABLE_ANNOTATION = 'webhookfanout.io/enable';

export interface WebhookEvent {
  id: string;
  source: string;
  externalEventId: string | null;
  eventType: string | null;
  payload: Buffer;
  contentType: string | null;
  headers: Record<string, string>;
  status: EventStatus;
  workflowId: string | null;
  publishedAt: Date | null;
  receivedAt: Date;
  completedAt: Date | null;
  /** the W3C traceparent of the request that stored it, when tracing was on (docs/tracing.md) */
  traceparent: string | null;
  /** set when retention dropped the payload and headers (RETENTION_PAYLOAD_MAX_AGE): nothing left to send */
  payloadDroppedAt: Date | null;
}

export interface Delivery {
  id: string;
  eventId: string;
  endpointId: string;
  status: DeliveryStatus;
  attempts: number;
  lastResponseStatus: number | null;
  lastResponseBody: string | null;
  lastError: string | null;
  lastAttemptAt: Date | null;
  completedAt: Date | null;
  createdAt: Date;
  /** a delivery of an ordered endpoint (docs/ordering.md); null: delivered on its own */
  ordering: DeliveryOrdering | null;
}

/** Where an ordered delivery stands in its sequence. */
export interface DeliveryOrdering {
  /** its event's position: the order ingest accepted it in */
  position: number;
  /** its key; null: the endpoint's sequence of events whose key failed; undefined: not decided yet */
  key: string | null | undefined;
  /** it stopped holding its key without a SUCCESS: FAILED under Skip, skipped by an operator, revoked */
  skipped: boolean;
  /** while it waits for its turn: the delivery just before it that holds the key (null: an event not prepared yet) */
  waitingBehind: string | null;
  /** while it waits for its turn: since when; null: not waiting */
  waitingSince: Date | null;
}

/**
 * resource_uid of rows that dev mode's manifest folder owns ("manifest:Kind/ns/name"), as opposed
 * to a Kubernetes uid (the operator's) or null (rows made by hand): each owner collects only its own.
 */
export const MANIFEST_UID_PREFIX = 'manifest:';

/**
 * What a source name may be (the custom resources' schema, the admin API and the inbound route
 * check it). Here rather than beside the schemas (custom-resources/specs.ts re-exports it): the inbound
 * path needs the pattern, not the schema library and the memory it holds.
 */
export const SOURCE_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$';

/** Delivery defaults and bounds (docs/decisions.md). */
export const DELIVERY_LIMITS = {
  maxAttempts: { default: 5, min: 1, max: 50 },
  timeoutSeconds: { default: 10, min: 1, max: 120 },
  /**
   * spec.autoDisable.afterConsecutiveFailures. Default 0 = never: the specification delivers every
   * event to every matching endpoint, so disabling is something an endpoint opts in to.
   */
  autoDisableAfter: { default: 0, min: 0, max: 100_000 },
  /** spec.rateLimit.perSecond: from one per 1000 s (0.001) to 10 000 a second */
  rateLimitPerSecond: { min: 0.001, max: 10_000 },
  /** spec.maxConcurrency */
  maxConcurrency: { min: 1, max: 1_000 },
  /** last_response_body keeps this many bytes */
  responseBodyBytes: 4096,
} as const;
