/**
 * Every environment variable the service's configuration reads, with its type, default and bounds
 * (VARIABLES; the SDKs read their own: AWS credentials, OpenTelemetry's other OTEL_* variables),
 * and the settings' types and defaults the features use, taken from it. One module that imports
 * nothing: config depends on no feature, the features take their defaults from here, and any
 * process may load it (no SDK, no Kubernetes client comes with it). The reader (env-reader.ts)
 * checks a value against its entry; the loaders (config.ts, tls.ts, dev/dev-config.ts) say what
 * each process reads. README.md's table and the chart's values.schema.json describe them for users.
 */

/** A default that depends on other variables: its loader computes it, the entry says how. */
export interface Derived {
  readonly derived: string;
}
const derived = (how: string): Derived => ({ derived: how });

/** Unset is a problem: the process does not start without it. */
const REQUIRED = { required: true } as const;
export type Mandatory = typeof REQUIRED;

/** One variable. A default of null: unset means none (what that means is its loader's). */
type Variable =
  | { readonly type: 'string'; readonly default: string | Derived | Mandatory | null }
  | { readonly type: 'url'; readonly default: Mandatory | null }
  | { readonly type: 'integer' | 'number'; readonly default: number | Derived; readonly min: number; readonly max: number }
  | { readonly type: 'boolean'; readonly default: boolean | Derived }
  | { readonly type: 'enum'; readonly values: readonly string[]; readonly default: string | Derived }
  /** comma-separated; unset: empty */
  | { readonly type: 'list'; readonly default: readonly [] }
  /** a path read at start (TLS material: again at each connection) */
  | { readonly type: 'file'; readonly default: null }
  /** a whole number and a unit (duration.ts), in seconds; null: unset means forever */
  | { readonly type: 'duration'; readonly default: number | null };

/**
 * How the hot calls (SNS PublishBatch, SQS ReceiveMessage and DeleteMessageBatch) are made:
 * `signed`, one signed POST each (transport/signed-aws-call.ts, the default: a fraction of the
 * SDK's CPU per call), or `sdk`, the SDK client's send(): the way back if a provider or a new AWS
 * feature breaks the hand-written path. Both take the client's credentials, region, endpoint and signer.
 */
export const AWS_TRANSPORTS = ['signed', 'sdk'] as const;
export type AwsTransport = (typeof AWS_TRANSPORTS)[number];

/**
 * How the worker's SQS destinations send (AWS_SQS_SEND): `direct`, SendMessage as one POST signed
 * with our own SigV4 on node:crypto (destinations/aws/sqs-direct.ts, sigv4-post.ts; the default: the
 * cheapest), `direct-sdk-signer`, the same POST signed by the SDK client's own signer
 * (@smithy/signature-v4: the way back if our signing is ever refused), or `sdk`, the SDK client's
 * send(): the way back if a provider or a new AWS feature breaks the direct path. All three take
 * the client's credentials (the pod's identity, the endpoint's role), region and endpoint.
 */
export const AWS_SQS_SENDS = ['direct', 'direct-sdk-signer', 'sdk'] as const;
export type AwsSqsSend = (typeof AWS_SQS_SENDS)[number];

/**
 * How the Kafka destination produces (KAFKA_PRODUCE): `coalesced`, the records of concurrent
 * attempts for one cluster, topic and partition in one produce request (the default: the client's
 * per-request CPU shared), or `single`, one request per record, the way back
 * (destinations/kafka/produce-coalescer.ts).
 */
export const KAFKA_PRODUCE_MODES = ['coalesced', 'single'] as const;
export type KafkaProduceMode = (typeof KAFKA_PRODUCE_MODES)[number];

/**
 * A sender's traceparent (INBOUND_TRACEPARENT): the parent of the inbound span (one trace from the
 * sender's request to every delivery), a link from a trace of our own (a sender's sampling
 * decision and trace boundaries stay out of ours), or ignored.
 */
export const INBOUND_TRACE_CONTEXTS = ['parent', 'link', 'ignore'] as const;
export type InboundTraceContext = (typeof INBOUND_TRACE_CONTEXTS)[number];

/** What a credential that says nothing allows: TENANCY_DEFAULT_ALLOWED_NAMESPACES (operator, dev mode). */
export const DEFAULT_ALLOWED_NAMESPACES = ['Same', 'All'] as const;
export type DefaultAllowedNamespaces = (typeof DEFAULT_ALLOWED_NAMESPACES)[number];

/** How the console's single-page app logs in (docs/console.md): the specification's flow, or OAuth 2.1's. */
export const CONSOLE_AUTH_FLOWS = ['implicit', 'code'] as const;
export type ConsoleAuthFlow = (typeof CONSOLE_AUTH_FLOWS)[number];

/**
 * TLS to Postgres (docs/deploy.md, "Managed Postgres"). The modes are libpq's: `require` encrypts
 * without checking the server, `verify-ca` checks its certificate against the CA, `verify-full`
 * also that it names the host connected to. `allow` and `prefer` (plaintext when the server says
 * no) are not offered: a production setting that silently falls back to plaintext is a trap.
 */
export const DATABASE_SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
export type DatabaseSslMode = (typeof DATABASE_SSL_MODES)[number];

const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
const OTEL_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

const SECONDS = { type: 'integer', min: 1, max: 3600 } as const;

export const VARIABLES = {
  // every process
  LOG_LEVEL: { type: 'string', default: 'info' },
  MANAGEMENT_PORT: { type: 'integer', default: 9090, min: 0, max: 65535 },

  // Postgres (tls.ts: DATABASE_SSL_MODE and its files)
  DATABASE_URL: { type: 'url', default: REQUIRED },
  DB_POOL_MAX: { type: 'integer', default: 10, min: 1, max: 200 },
  DATABASE_SSL_MODE: {
    type: 'enum',
    values: DATABASE_SSL_MODES,
    default: derived("verify-full when a CA or client certificate file is set; unset: what DATABASE_URL's sslmode says"),
  },
  DATABASE_CA_FILE: { type: 'file', default: null },
  DATABASE_CLIENT_CERT_FILE: { type: 'file', default: null },
  DATABASE_CLIENT_KEY_FILE: { type: 'file', default: null },

  // OpenTelemetry's own variables (the SDK reads them; checked here so that a typo is named at start)
  OTEL_SDK_DISABLED: { type: 'string', default: null },
  OTEL_EXPORTER_OTLP_ENDPOINT: { type: 'string', default: null },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { type: 'string', default: null },
  OTEL_EXPORTER_OTLP_PROTOCOL: { type: 'enum', values: OTLP_PROTOCOLS, default: 'http/protobuf' },
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: { type: 'enum', values: OTLP_PROTOCOLS, default: 'http/protobuf' },
  OTEL_TRACES_SAMPLER: { type: 'enum', values: OTEL_SAMPLERS, default: 'parentbased_always_on' },
  OTEL_TRACES_SAMPLER_ARG: { type: 'number', default: 1, min: 0, max: 1 },
  OTEL_TRACES_EXPORTER: { type: 'enum', values: ['otlp', 'none'], default: 'otlp' },

  // SNS and SQS
  AWS_REGION: { type: 'string', default: 'us-east-1' },
  /** an SNS/SQS-compatible endpoint other than AWS (emulators); unset: AWS */
  AWS_ENDPOINT_URL: { type: 'url', default: null },
  AWS_TRANSPORT: { type: 'enum', values: AWS_TRANSPORTS, default: 'signed' },

  // Temporal (tls.ts: TLS and API key, the Temporal CLI's names)
  TEMPORAL_ADDRESS: { type: 'string', default: 'localhost:7233' },
  TEMPORAL_NAMESPACE: { type: 'string', default: 'default' },
  /** the task queue the fanout worker polls and the consumer starts workflows on */
  TEMPORAL_TASK_QUEUE: { type: 'string', default: 'WEBHOOKS' },
  TEMPORAL_TLS: { type: 'boolean', default: derived('on when any TEMPORAL_TLS_* or TEMPORAL_API_KEY(_FILE) is set') },
  TEMPORAL_TLS_CA: { type: 'file', default: null },
  TEMPORAL_TLS_CERT: { type: 'file', default: null },
  TEMPORAL_TLS_KEY: { type: 'file', default: null },
  TEMPORAL_TLS_SERVER_NAME: { type: 'string', default: null },
  TEMPORAL_API_KEY: { type: 'string', default: null },
  TEMPORAL_API_KEY_FILE: { type: 'file', default: null },

  // the admin API (ingest): AUTH_URL and AUTH_AUDIENCE are required while it is on
  ADMIN_API_ENABLED: { type: 'boolean', default: true },
  AUTH_URL: { type: 'string', default: null },
  AUTH_AUDIENCE: { type: 'string', default: null },
  AUTH_ISSUER: { type: 'string', default: derived('AUTH_URL with one trailing slash, as Auth0 issues tokens') },
  AUTH_CLOCK_TOLERANCE_SECONDS: { type: 'integer', default: 30, min: 0, max: 300 },
  AUTH_JWKS_CACHE_TTL_SECONDS: { type: 'integer', default: 600, min: 10, max: 86_400 },
  /** the claim a tenant's token names its namespaces in; a URL, as Auth0 wants custom claims */
  AUTH_NAMESPACES_CLAIM: { type: 'string', default: 'https://webhookfanout.io/namespaces' },

  // the web console (ingest): CONSOLE_CLIENT_ID is required while it is on
  CONSOLE_ENABLED: { type: 'boolean', default: derived('on when the admin API is on and CONSOLE_CLIENT_ID is set') },
  CONSOLE_CLIENT_ID: { type: 'string', default: null },
  /** one of CONSOLE_AUTH_FLOWS (its loader names a wrong one) */
  CONSOLE_AUTH_FLOW: { type: 'string', default: 'implicit' },

  // ingest
  PORT: { type: 'integer', default: 8080, min: 0, max: 65535 },
  HOST: { type: 'string', default: '0.0.0.0' },
  TOPIC_ARN: { type: 'string', default: REQUIRED },
  INBOUND_BODY_LIMIT_BYTES: { type: 'integer', default: 1024 * 1024, min: 1024, max: 64 * 1024 * 1024 },
  HTTP_HEADERS_TIMEOUT_SECONDS: { ...SECONDS, default: 10 },
  HTTP_REQUEST_TIMEOUT_SECONDS: { ...SECONDS, default: 30 },
  // above the 60 s idle timeout of common load balancers, so that the balancer closes first
  HTTP_IDLE_TIMEOUT_SECONDS: { ...SECONDS, default: 75 },
  CREDENTIAL_CACHE_SIZE: { type: 'integer', default: 1000, min: 0, max: 1_000_000 },
  SWEEP_INTERVAL_SECONDS: { type: 'integer', default: 30, min: 1, max: 86_400 },
  SWEEP_MIN_AGE_SECONDS: { type: 'integer', default: 60, min: 0, max: 86_400 },
  /** how long after publishing an event without a workflow counts as stuck */
  SWEEP_UNSTARTED_AFTER_SECONDS: { type: 'integer', default: 60, min: 10, max: 604_800 },
  /** PublishBatch calls ingest keeps in flight at once, each up to 10 event ids */
  PUBLISH_MAX_IN_FLIGHT: { type: 'integer', default: 4, min: 1, max: 256 },
  INBOUND_TRACEPARENT: { type: 'enum', values: INBOUND_TRACE_CONTEXTS, default: 'parent' },
  /**
   * CIDRs (or single addresses) of the proxies in front of ingest whose X-Forwarded-For / Forwarded
   * name the client (ingest/client-address.ts); unset: none, the TCP peer is the client
   */
  INGEST_TRUSTED_PROXIES: { type: 'list', default: [] },
  /**
   * days a client address a source's credential was proven from keeps its place before the
   * never-seen ones in the wrong-password limiter's line, across restarts (ingest/proven-addresses.ts,
   * docs/sources.md); the retention job deletes older pairs. 0: none is kept (and the table is emptied)
   */
  INGEST_PROVEN_ADDRESS_DAYS: { type: 'integer', default: 30, min: 0, max: 365 },

  // retention (ingest; docs/deploy.md, "Retention")
  RETENTION_MAX_AGE: { type: 'duration', default: null },
  RETENTION_PAYLOAD_MAX_AGE: { type: 'duration', default: null },
  /**
   * 15 min: far above the seconds between a replay's delivery settling and its event's status
   * being recomputed, even with Temporal retrying an activity.
   */
  RETENTION_SETTLED_GRACE: { type: 'duration', default: 900 },
  // every 5 min, 500 events a batch, a 100 ms rest: a batch of 500 events with a few deliveries
  // and attempts each is one short transaction; the rest leaves ingest most of the disk (the
  // figures: docs/benchmarks.md, "Retention")
  RETENTION_INTERVAL_SECONDS: { type: 'integer', default: 300, min: 1, max: 86_400 },
  RETENTION_BATCH_SIZE: { type: 'integer', default: 500, min: 1, max: 10_000 },
  RETENTION_BATCH_PAUSE_MS: { type: 'integer', default: 100, min: 0, max: 60_000 },

  // the queue (the consumer, and a worker with WORKER_CONSUME_QUEUE); setup-transport's names
  QUEUE_URL: { type: 'url', default: REQUIRED },
  CONSUMER_CONCURRENCY: { type: 'integer', default: 10, min: 1, max: 10 },
  QUEUE_VISIBILITY_TIMEOUT_SECONDS: { type: 'integer', default: 30, min: 1, max: 43_200 },
  TOPIC_NAME: { type: 'string', default: 'webhook-fanout-events' },
  QUEUE_NAME: { type: 'string', default: 'webhook-fanout-events' },
  DLQ_NAME: { type: 'string', default: 'webhook-fanout-dlq' },

  // the worker; delivery retries back off exponentially from 1 s, coefficient 2, capped at 10 min (docs/decisions.md)
  DELIVERY_BACKOFF_INITIAL_MS: { type: 'integer', default: 1_000, min: 10, max: 3_600_000 },
  DELIVERY_BACKOFF_COEFFICIENT: { type: 'number', default: 2, min: 1, max: 10 },
  DELIVERY_BACKOFF_MAX_MS: { type: 'integer', default: 600_000, min: 10, max: 86_400_000 },
  /** unset: the metadata ranges denied (delivery/address-policy.ts) */
  OUTBOUND_DENY_CIDRS: { type: 'list', default: [] },
  OUTBOUND_ALLOW_CIDRS: { type: 'list', default: [] },
  /**
   * the forward proxy HTTP deliveries go through (docs/endpoints-proxy.md): http://host:port, no
   * credentials in it (they come from the two files below); unset: every delivery goes direct
   */
  DELIVERY_PROXY_URL: { type: 'url', default: null },
  /** hosts, domains (a.example also matches its subdomains), addresses or CIDRs reached without the proxy; `*`: none through it */
  DELIVERY_NO_PROXY: { type: 'list', default: [] },
  /** the proxy's Basic credentials (a kubernetes.io/basic-auth Secret's username and password), re-read while running */
  DELIVERY_PROXY_USERNAME_FILE: { type: 'file', default: null },
  DELIVERY_PROXY_PASSWORD_FILE: { type: 'file', default: null },
  /** the Kafka destination's records of concurrent attempts in one request per partition, or one request each */
  KAFKA_PRODUCE: { type: 'enum', values: KAFKA_PRODUCE_MODES, default: 'coalesced' },
  WORKER_MAX_CONCURRENT_ACTIVITIES: { type: 'integer', default: 100, min: 1, max: 10_000 },
  WORKER_CONSUME_QUEUE: { type: 'boolean', default: false },
  WORKER_SANDBOX_DIAGNOSTICS: { type: 'boolean', default: false },
  /** the activity that releases an ordered key delivers the key's next delivery itself (docs/ordering.md, "The handoff"); false: a signal per hop */
  ORDERING_HANDOFF: { type: 'boolean', default: true },
  /** the SQS destinations' SendMessage: one POST signed by us or by the SDK's signer, or the SDK's send() (AWS_SQS_SENDS) */
  AWS_SQS_SEND: { type: 'enum', values: AWS_SQS_SENDS, default: 'direct' },
  /** the direct SQS sends of a busy queue (MAX_IN_FLIGHT requests in flight) share SendMessageBatch requests (destinations/aws/sqs-direct.ts) */
  AWS_SQS_BATCH: { type: 'boolean', default: true },

  // operational events (docs/operations-events.md): every process that records or routes them
  /** the reserved source of the service's own events; no InboundCredential may take it */
  OPERATIONS_EVENTS_SOURCE: { type: 'string', default: 'webhook-fanout' },
  /** the platform team's namespaces: their endpoints get every namespace's operational events */
  OPERATIONS_EVENTS_PLATFORM_NAMESPACES: { type: 'list', default: [] },

  // the operator
  /** unset: every namespace */
  WATCH_NAMESPACE: { type: 'list', default: [] },
  TENANCY_DEFAULT_ALLOWED_NAMESPACES: { type: 'enum', values: DEFAULT_ALLOWED_NAMESPACES, default: 'Same' },
  OPERATOR_WORKERS: { type: 'integer', default: 2, min: 1, max: 64 },
  OPERATOR_RESYNC_SECONDS: { type: 'integer', default: 300, min: 5, max: 86_400 },
  /** this replica's name in the Lease and in Events, else HOSTNAME */
  POD_NAME: { type: 'string', default: null },
  HOSTNAME: { type: 'string', default: null },
  LEADER_ELECTION: { type: 'boolean', default: true },
  LEADER_ELECTION_NAMESPACE: { type: 'string', default: derived("POD_NAMESPACE, else 'default'") },
  POD_NAMESPACE: { type: 'string', default: null },
  /** the Lease the operator replicas elect their leader with (chart and RBAC name it too) */
  LEADER_ELECTION_LEASE_NAME: { type: 'string', default: 'webhook-fanout-operator' },
  // client-go's defaults scaled down for a small controller: 15 s lease, 10 s renew deadline, 2 s retry
  LEADER_ELECTION_LEASE_DURATION_SECONDS: { type: 'number', default: 15, min: 1, max: 3600 },
  LEADER_ELECTION_RENEW_DEADLINE_SECONDS: { type: 'number', default: 10, min: 0.5, max: 3600 },
  LEADER_ELECTION_RETRY_PERIOD_SECONDS: { type: 'number', default: 2, min: 0.1, max: 600 },

  // dev mode (dev/dev-config.ts); DATABASE_URL, TEMPORAL_ADDRESS or AWS_ENDPOINT_URL set replaces what it embeds
  WEBHOOK_FANOUT_CONFIG_DIR: { type: 'string', default: derived('examples/dev of the checkout; --config-dir wins') },
  WEBHOOK_FANOUT_DATA_DIR: { type: 'string', default: derived('.data/dev of the checkout; --data-dir wins') },
  /** the local identity provider's port, when dev mode runs one (AUTH_URL unset) */
  DEV_AUTH_PORT: { type: 'integer', default: derived('a free port'), min: 0, max: 65535 },
  WEBHOOK_FANOUT_DEV_USER: { type: 'string', default: derived("dev (dev/dev-idp.ts's DEV_USER)") },
  WEBHOOK_FANOUT_DEV_PASSWORD: { type: 'string', default: derived("dev-password (dev/dev-idp.ts's DEV_USER)") },
} as const satisfies Record<string, Variable>;

const V = VARIABLES;

/** Exponential backoff of delivery retries, global for all endpoints (DELIVERY_BACKOFF_*): the workflow's retry policy is built from it. */
export interface BackoffSettings {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
}

export const DEFAULT_BACKOFF: BackoffSettings = {
  initialIntervalMs: V.DELIVERY_BACKOFF_INITIAL_MS.default,
  backoffCoefficient: V.DELIVERY_BACKOFF_COEFFICIENT.default,
  maximumIntervalMs: V.DELIVERY_BACKOFF_MAX_MS.default,
};

/** How long a client may take, so that slow or never-ending requests do not hold sockets forever (HTTP_*_TIMEOUT_SECONDS). */
export interface HttpTimeouts {
  /** from the connection (or the previous request) until the request's headers are complete */
  headersMs: number;
  /** the whole request, headers and body, until it is received */
  bodyMs: number;
  /** a connection with nothing to do (no bytes either way) is closed after this */
  idleMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = {
  headersMs: V.HTTP_HEADERS_TIMEOUT_SECONDS.default * 1000,
  bodyMs: V.HTTP_REQUEST_TIMEOUT_SECONDS.default * 1000,
  idleMs: V.HTTP_IDLE_TIMEOUT_SECONDS.default * 1000,
};

/** What the retention job deletes and how fast (RETENTION_*; docs/deploy.md, "Retention"). */
export interface RetentionSettings {
  /** RETENTION_MAX_AGE in seconds: events (with deliveries and attempts) older are deleted; null = forever */
  maxAgeSeconds: number | null;
  /** RETENTION_PAYLOAD_MAX_AGE: payload and headers of older events are dropped; null = kept */
  payloadMaxAgeSeconds: number | null;
  intervalMs: number;
  /** events per batch (one transaction; their deliveries and attempts go with them) */
  batchSize: number;
  /** rest between batches: other statements get the disk and autovacuum keeps up */
  batchPauseMs: number;
  /**
   * RETENTION_SETTLED_GRACE in seconds: an event whose event or delivery rows changed more
   * recently is left alone, whatever its age (a replay settles its delivery, then recomputes the
   * event's status in the next activity; the job must not cut in between).
   */
  settledGraceSeconds: number;
}

export const DEFAULT_RETENTION_SCHEDULE = {
  intervalMs: V.RETENTION_INTERVAL_SECONDS.default * 1000,
  batchSize: V.RETENTION_BATCH_SIZE.default,
  batchPauseMs: V.RETENTION_BATCH_PAUSE_MS.default,
} as const;

export const DEFAULT_SETTLED_GRACE_SECONDS = V.RETENTION_SETTLED_GRACE.default;

/**
 * The service's own happenings as events of a reserved source (docs/operations-events.md): its
 * name (OPERATIONS_EVENTS_SOURCE) and the namespaces whose endpoints receive every namespace's
 * (OPERATIONS_EVENTS_PLATFORM_NAMESPACES); any other endpoint receives only those about its own.
 */
export interface OperationsEventsSettings {
  source: string;
  platformNamespaces: readonly string[];
}

export const DEFAULT_OPERATIONS_EVENTS: OperationsEventsSettings = {
  source: V.OPERATIONS_EVENTS_SOURCE.default,
  platformNamespaces: [],
};

export const DEFAULT_UNSTARTED_AFTER_MS = V.SWEEP_UNSTARTED_AFTER_SECONDS.default * 1000;

/** The names and settings of the SNS/SQS topology: setup-transport, dev mode and the config defaults all take them from here. */
export const DEFAULT_TOPOLOGY = {
  topicName: V.TOPIC_NAME.default,
  queueName: V.QUEUE_NAME.default,
  dlqName: V.DLQ_NAME.default,
  /** receives before a message goes to the DLQ */
  maxReceiveCount: 5,
  visibilityTimeoutSeconds: V.QUEUE_VISIBILITY_TIMEOUT_SECONDS.default,
} as const;

export const DEFAULT_PUBLISH_MAX_IN_FLIGHT = V.PUBLISH_MAX_IN_FLIGHT.default;

export const TASK_QUEUE = V.TEMPORAL_TASK_QUEUE.default;

export const DEFAULT_NAMESPACES_CLAIM = V.AUTH_NAMESPACES_CLAIM.default;

export const LEASE_NAME = V.LEADER_ELECTION_LEASE_NAME.default;

/** The leader election's timing, apart from the elector (kube/leader-election.ts), whose module loads @kubernetes/client-node. */
export const LEADER_ELECTION_TIMING = {
  leaseDurationMs: V.LEADER_ELECTION_LEASE_DURATION_SECONDS.default * 1000,
  renewDeadlineMs: V.LEADER_ELECTION_RENEW_DEADLINE_SECONDS.default * 1000,
  retryPeriodMs: V.LEADER_ELECTION_RETRY_PERIOD_SECONDS.default * 1000,
} as const;

/** A leader must give up (renewDeadline) before others may take over (leaseDuration), and retry within it. */
export const validLeaderElectionTiming = (t: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }): boolean =>
  t.leaseDurationMs > t.renewDeadlineMs && t.renewDeadlineMs > t.retryPeriodMs;
