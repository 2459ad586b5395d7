import { formatDuration, parseDuration } from './duration.js';
import { createEnvReader, redactUrl, type Env, type EnvReader } from './env-reader.js';
import {
  CONSOLE_AUTH_FLOWS,
  DEFAULT_NAMESPACES_CLAIM,
  DEFAULT_SETTLED_GRACE_SECONDS,
  VARIABLES,
  validLeaderElectionTiming,
  type AwsSqsSend,
  type AwsTransport,
  type BackoffSettings,
  type ConsoleAuthFlow,
  type DefaultAllowedNamespaces,
  type HttpTimeouts,
  type InboundTraceContext,
  type KafkaProduceMode,
  type OperationsEventsSettings,
  type RetentionSettings,
} from './settings.js';
import { readDatabaseTls, readTemporalTls, type DatabaseTls, type TemporalTls } from './tls.js';
import { readDeliveryProxy, type DeliveryProxyConfig } from './delivery-proxy.js';
import { tracingWanted } from './tracing-switch.js';

export type { DatabaseTls, TemporalTls } from './tls.js';

export interface CommonConfig {
  logLevel: string;
  managementPort: number;
  /** OPERATIONS_EVENTS_*: the reserved source and who receives its events (docs/operations-events.md) */
  operations: OperationsEventsSettings;
}

/**
 * The OTEL_* variables the SDK reads (observability/tracing.ts), checked here so that a typo is
 * named at start like any other problem instead of silently exporting nothing.
 */
export interface TracingConfig {
  /** an OTLP endpoint is set (and the SDK not disabled) */
  enabled: boolean;
}

export interface DatabaseConfig {
  databaseUrl: string;
  dbPoolMax: number;
  /** TLS to Postgres from DATABASE_SSL_MODE and its files; null: what DATABASE_URL says (docs/deploy.md) */
  databaseTls: DatabaseTls | null;
}

export interface AwsConfig {
  region: string;
  /** AWS_ENDPOINT_URL: an SNS/SQS-compatible endpoint other than AWS (emulators) */
  endpoint: string | undefined;
  /** AWS_TRANSPORT: how the hot SNS/SQS calls are made (transport/publish-calls.ts, queue-calls.ts); absent = signed */
  transport?: AwsTransport;
}

export interface TemporalConfig {
  address: string;
  namespace: string;
  taskQueue: string;
  /** TLS and API key of the connection; null: plaintext (a local or in-cluster Temporal without TLS) */
  tls: TemporalTls | null;
}

/** The admin API's token verification (docs/decisions.md: Credentials). */
export interface AdminApiConfig {
  /** the identity provider's base address, without a trailing slash */
  authUrl: string;
  audience: string;
  /** exact `iss` of its tokens; default `${AUTH_URL}/` as Auth0 issues them */
  issuer: string;
  clockToleranceSeconds: number;
  jwksCacheTtlSeconds: number;
  /** AUTH_NAMESPACES_CLAIM: a token with this claim is a tenant's, scoped to the namespaces it lists (docs/tenancy.md) */
  namespacesClaim: string;
}

/** The web console served by ingest under /console/ (docs/console.md). */
export interface ConsoleConfig {
  /** the SPA's OAuth client id at the identity provider (an Auth0 "Single Page Application") */
  clientId: string;
  /** implicit: response_type=token, the token in the redirect's fragment; code: authorization code with PKCE (S256) */
  authFlow: ConsoleAuthFlow;
}

export interface IngestConfig extends CommonConfig, DatabaseConfig {
  tracing: TracingConfig;
  /** null when ADMIN_API_ENABLED=false */
  adminApi: AdminApiConfig | null;
  /** null when CONSOLE_ENABLED=false (or, unset, when the admin API is disabled: the console only shows what it answers) */
  console: ConsoleConfig | null;
  /** replays start workflow runs; connected lazily so inbound traffic never waits on Temporal */
  temporal: TemporalConfig;
  port: number;
  host: string;
  aws: AwsConfig;
  topicArn: string;
  bodyLimitBytes: number;
  /** header, whole-request and idle bounds of the public port */
  httpTimeouts: HttpTimeouts;
  credentialCacheSize: number;
  sweepIntervalMs: number;
  sweepMinAgeMs: number;
  sweepUnstartedAfterMs: number;
  /** concurrent PublishBatch calls; ids queue behind them and leave batched */
  publishMaxInFlight: number;
  /** INBOUND_TRACEPARENT: what a sender's traceparent is to the inbound span when tracing (docs/tracing.md) */
  inboundTraceContext: InboundTraceContext;
  /** INGEST_TRUSTED_PROXIES: the proxies whose forwarding headers name the client (ingest/client-address.ts) */
  trustedProxies: string[];
  /** INGEST_PROVEN_ADDRESS_DAYS: how long a client address a credential was proven from counts as known (ingest/proven-addresses.ts) */
  provenAddressDays: number;
  /** what the retention job deletes, and how fast (docs/deploy.md, "Retention") */
  retention: RetentionSettings;
}

/** The queue a consumer reads, and how: the consumer's, and a worker's that consumes the queue itself. */
export interface QueueConsumerConfig {
  aws: AwsConfig;
  queueUrl: string;
  concurrency: number;
  visibilityTimeoutSeconds: number;
}

export interface ConsumerConfig extends CommonConfig, DatabaseConfig, QueueConsumerConfig {
  tracing: TracingConfig;
  temporal: TemporalConfig;
}

/** Delivery retry backoff: the workflow's BackoffSettings, one type. */
export type BackoffConfig = BackoffSettings;

export interface WorkerConfig extends CommonConfig, DatabaseConfig {
  tracing: TracingConfig;
  temporal: TemporalConfig;
  backoff: BackoffConfig;
  outboundDenyCidrs: string[];
  outboundAllowCidrs: string[];
  /** DELIVERY_PROXY_*: the forward proxy HTTP deliveries go through; null: none, every delivery goes direct */
  deliveryProxy: DeliveryProxyConfig | null;
  /** KAFKA_PRODUCE: the Kafka destination's records of concurrent attempts in one request, or one request each */
  kafkaProduce: KafkaProduceMode;
  maxConcurrentActivities: number;
  /**
   * WORKER_CONSUME_QUEUE=true: the worker also does the consumer's work (reads the queue, starts
   * each event's workflow, redrives), starting workflows eagerly on itself (docs/decisions.md,
   * "Consumer and worker in one process"); null: a separate consumer does.
   */
  consumeQueue: QueueConsumerConfig | null;
  /**
   * WORKER_SANDBOX_DIAGNOSTICS=true: the Temporal SDK's deadlock detector and per-promise stack
   * traces in the workflow sandbox, a large share of the worker's CPU per event; off by default
   * (processes/workflow-sandbox.ts).
   */
  sandboxDiagnostics: boolean;
  /**
   * ORDERING_HANDOFF (default true): the activity that releases an ordered key makes the attempt
   * of the key's next delivery itself (docs/ordering.md, "The handoff"); false: it signals the
   * waiting run, which delivers, one signal per hop (the release before's behaviour).
   */
  orderingHandoff: boolean;
  /** AWS_SQS_SEND: how the SQS destinations send (destinations/aws/sqs-direct.ts); `direct` by default */
  awsSqsSend: AwsSqsSend;
  /** AWS_SQS_BATCH: the direct sends of a busy queue share SendMessageBatch requests (destinations/aws/sqs-direct.ts); on by default, off: one SendMessage per send */
  awsSqsBatch: boolean;
}

export interface OperatorConfig extends CommonConfig, DatabaseConfig {
  /** WATCH_NAMESPACE: comma-separated namespaces; empty = every namespace */
  watchNamespaces: string[];
  /** TENANCY_DEFAULT_ALLOWED_NAMESPACES: what an InboundCredential without spec.allowedEndpoints allows (docs/tenancy.md) */
  defaultAllowedNamespaces: DefaultAllowedNamespaces;
  workers: number;
  resyncPeriodMs: number;
  /** this replica's name in the Lease and in Events (POD_NAME, else HOSTNAME) */
  identity: string | undefined;
  /** WebhookReplay resources start replay runs here; connected on the first one */
  temporal: TemporalConfig;
  leaderElection: {
    enabled: boolean;
    namespace: string;
    leaseName: string;
    leaseDurationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
  };
}

export interface TransportSetupConfig extends CommonConfig {
  aws: AwsConfig;
  topicName: string;
  queueName: string;
  dlqName: string;
  visibilityTimeoutSeconds: number;
}

const common = (r: EnvReader): CommonConfig => ({
  logLevel: r.str('LOG_LEVEL'),
  managementPort: r.int('MANAGEMENT_PORT'),
  operations: { source: r.str('OPERATIONS_EVENTS_SOURCE'), platformNamespaces: r.list('OPERATIONS_EVENTS_PLATFORM_NAMESPACES') },
});

const database = (r: EnvReader): DatabaseConfig => {
  const databaseUrl = r.url('DATABASE_URL');
  return { databaseUrl, dbPoolMax: r.int('DB_POOL_MAX'), databaseTls: readDatabaseTls(r, databaseUrl) };
};

export function readTracingConfig(r: EnvReader): TracingConfig {
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] as const) {
    const v = r.optional(name);
    if (v !== undefined && !/^https?:\/\/[^/]/i.test(v)) r.problems.push(`${name} must be an http(s) URL, got "${redactUrl(v)}"`);
  }
  for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] as const) r.oneOf(name);
  r.oneOf('OTEL_TRACES_SAMPLER');
  if (r.optional('OTEL_TRACES_SAMPLER_ARG') !== undefined) r.num('OTEL_TRACES_SAMPLER_ARG');
  r.oneOf('OTEL_TRACES_EXPORTER');
  return {
    enabled: tracingWanted({
      ...Object.fromEntries(
        (['OTEL_SDK_DISABLED', 'OTEL_TRACES_EXPORTER', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] as const).map(
          (n) => [n, r.optional(n)],
        ),
      ),
    }),
  };
}

const aws = (r: EnvReader): AwsConfig => ({
  region: r.str('AWS_REGION'),
  endpoint: r.optional('AWS_ENDPOINT_URL'),
  transport: r.oneOf('AWS_TRANSPORT'),
});

const temporal = (r: EnvReader): TemporalConfig => ({
  address: r.str('TEMPORAL_ADDRESS'),
  namespace: r.str('TEMPORAL_NAMESPACE'),
  taskQueue: r.str('TEMPORAL_TASK_QUEUE'),
  tls: readTemporalTls(r),
});

/**
 * AUTH_URL and AUTH_AUDIENCE are required: an admin API must never come up unauthenticated or
 * accepting any audience. Returns null when the admin API is explicitly disabled.
 */
export function loadAdminApiConfig(r: EnvReader): AdminApiConfig | null {
  if (!r.bool('ADMIN_API_ENABLED')) return null;
  const hint = 'required for the admin API (set ADMIN_API_ENABLED=false to run without it)';
  const authUrl = r.optional('AUTH_URL');
  const audience = r.optional('AUTH_AUDIENCE');
  if (authUrl === undefined) r.problems.push(`AUTH_URL (the identity provider's base address, e.g. https://tenant.auth0.com) is ${hint}`);
  else if (!/^https?:\/\/[^/]/i.test(authUrl) || !URL.canParse(authUrl))
    r.problems.push(`AUTH_URL must be an http(s) URL, got "${redactUrl(authUrl)}"`);
  if (audience === undefined) r.problems.push(`AUTH_AUDIENCE (the API audience identifier tokens are issued for) is ${hint}`);
  const base = (authUrl ?? '').replace(/\/+$/, '');
  return {
    authUrl: base,
    audience: audience ?? '',
    issuer: r.str('AUTH_ISSUER', `${base}/`),
    clockToleranceSeconds: r.int('AUTH_CLOCK_TOLERANCE_SECONDS'),
    jwksCacheTtlSeconds: r.int('AUTH_JWKS_CACHE_TTL_SECONDS'),
    namespacesClaim: namespacesClaim(r),
  };
}

/** Claims a token's issuer sets itself: the namespaces must not hide in one of them. */
const RESERVED_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'azp', 'scope', 'permissions', 'client_id', 'gty'];

/** AUTH_NAMESPACES_CLAIM's problem, if any. */
function namespacesClaimProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > 200) return 'AUTH_NAMESPACES_CLAIM must be 1 to 200 characters';
  if (!/^[\x21-\x7e]+$/.test(name)) return 'AUTH_NAMESPACES_CLAIM must be printable ASCII without spaces';
  if (RESERVED_CLAIMS.includes(name)) {
    return `AUTH_NAMESPACES_CLAIM must not be "${name}", a claim the identity provider sets itself (e.g. ${DEFAULT_NAMESPACES_CLAIM})`;
  }
  return undefined;
}

function namespacesClaim(r: EnvReader): string {
  const name = r.str('AUTH_NAMESPACES_CLAIM');
  const problem = namespacesClaimProblem(name);
  if (problem !== undefined) r.problems.push(problem);
  return name;
}

/**
 * The console is a client of the admin API and needs its own client id at the identity provider
 * (never the machine-to-machine client's). CONSOLE_ENABLED unset: on when the admin API is on and
 * CONSOLE_CLIENT_ID is set, off otherwise (a configuration from before the console starts as it
 * did); true: on, the client id required; false: off.
 */
export function loadConsoleConfig(r: EnvReader, adminApi: AdminApiConfig | null): ConsoleConfig | null {
  const explicit = r.optional('CONSOLE_ENABLED');
  const byDefault = adminApi !== null && r.optional('CONSOLE_CLIENT_ID') !== undefined;
  if (!r.bool('CONSOLE_ENABLED', byDefault)) return null;
  if (adminApi === null) {
    if (explicit !== undefined)
      r.problems.push(
        'CONSOLE_ENABLED=true needs the admin API, which ADMIN_API_ENABLED=false turns off (the console shows what the admin API answers)',
      );
    return null;
  }
  const clientId = r.optional('CONSOLE_CLIENT_ID');
  if (clientId === undefined) {
    r.problems.push(
      "CONSOLE_CLIENT_ID (the console's client id at the identity provider, e.g. an Auth0 Single Page Application) is required while the console is on (set CONSOLE_ENABLED=false to run without it)",
    );
  } else if (!/^[\x21-\x7e]{1,200}$/.test(clientId)) {
    r.problems.push('CONSOLE_CLIENT_ID must be 1 to 200 printable ASCII characters without spaces');
  }
  const flow = r.str('CONSOLE_AUTH_FLOW');
  if (!(CONSOLE_AUTH_FLOWS as readonly string[]).includes(flow)) {
    r.problems.push(`CONSOLE_AUTH_FLOW must be one of ${CONSOLE_AUTH_FLOWS.join(', ')}, got "${flow.slice(0, 40)}"`);
  }
  return {
    clientId: clientId ?? '',
    authFlow: (CONSOLE_AUTH_FLOWS as readonly string[]).includes(flow) ? (flow as ConsoleAuthFlow) : 'implicit',
  };
}

/**
 * What ingest's start line says of the console: where it is, or, off, how to turn it on (a
 * feature off until configured must say what configures it).
 */
export function consoleStatus(cfg: Pick<IngestConfig, 'adminApi' | 'console'>, env: Env): string {
  if (cfg.console) return `console on at /console/ (client ${cfg.console.clientId}, ${cfg.console.authFlow} flow)`;
  if (!cfg.adminApi) return 'console off (it needs the admin API, ADMIN_API_ENABLED=false)';
  if (env.CONSOLE_ENABLED?.trim().toLowerCase() === 'false') return 'console off (CONSOLE_ENABLED=false)';
  return (
    'console off: to turn it on, register it at the identity provider as a single-page application ' +
    '(callback {origin}/console/callback) and set CONSOLE_CLIENT_ID to its client id (chart: console.clientId; docs/console.md)'
  );
}

function httpTimeouts(r: EnvReader): HttpTimeouts {
  const t = {
    headersMs: r.int('HTTP_HEADERS_TIMEOUT_SECONDS') * 1000,
    bodyMs: r.int('HTTP_REQUEST_TIMEOUT_SECONDS') * 1000,
    idleMs: r.int('HTTP_IDLE_TIMEOUT_SECONDS') * 1000,
  };
  // Node refuses a headers timeout above the request timeout (the request includes its headers)
  if (t.headersMs > t.bodyMs) r.problems.push('HTTP_HEADERS_TIMEOUT_SECONDS must not exceed HTTP_REQUEST_TIMEOUT_SECONDS');
  return t;
}

/** A RETENTION_* duration in seconds: unset, its default (null: an age that keeps events forever). */
function age(r: EnvReader, name: 'RETENTION_MAX_AGE' | 'RETENTION_PAYLOAD_MAX_AGE' | 'RETENTION_SETTLED_GRACE'): number | null {
  const unset: number | null = VARIABLES[name].default;
  const v = r.optional(name);
  if (v === undefined) return unset;
  const parsed = parseDuration(v);
  if ('problem' in parsed) {
    const way = unset === null ? 'unset it to keep events forever' : `unset it for the default, ${formatDuration(unset)}`;
    r.problems.push(`${name} ${parsed.problem}; ${way}`);
    return unset;
  }
  return parsed.seconds;
}

/** RETENTION_*: off (nothing deleted) unless an age is set; the pace has defaults for a busy database. */
export function loadRetention(r: EnvReader): RetentionSettings {
  const maxAgeSeconds = age(r, 'RETENTION_MAX_AGE');
  const payloadMaxAgeSeconds = age(r, 'RETENTION_PAYLOAD_MAX_AGE');
  if (maxAgeSeconds !== null && payloadMaxAgeSeconds !== null && payloadMaxAgeSeconds >= maxAgeSeconds) {
    r.problems.push(
      `RETENTION_PAYLOAD_MAX_AGE (${formatDuration(payloadMaxAgeSeconds)}) must be shorter than RETENTION_MAX_AGE (${formatDuration(maxAgeSeconds)}): ` +
        'events are deleted whole at RETENTION_MAX_AGE, so a later payload drop would never happen',
    );
  }
  const grace = age(r, 'RETENTION_SETTLED_GRACE');
  return {
    maxAgeSeconds,
    payloadMaxAgeSeconds,
    settledGraceSeconds: grace ?? DEFAULT_SETTLED_GRACE_SECONDS,
    intervalMs: r.int('RETENTION_INTERVAL_SECONDS') * 1000,
    batchSize: r.int('RETENTION_BATCH_SIZE'),
    batchPauseMs: r.int('RETENTION_BATCH_PAUSE_MS'),
  };
}

export function loadIngestConfig(env: Env): IngestConfig {
  const r = createEnvReader(env);
  const adminApi = loadAdminApiConfig(r);
  const cfg: IngestConfig = {
    ...common(r),
    ...database(r),
    adminApi,
    console: loadConsoleConfig(r, adminApi),
    temporal: temporal(r),
    tracing: readTracingConfig(r),
    port: r.int('PORT'),
    host: r.str('HOST'),
    aws: aws(r),
    topicArn: r.str('TOPIC_ARN'),
    bodyLimitBytes: r.int('INBOUND_BODY_LIMIT_BYTES'),
    httpTimeouts: httpTimeouts(r),
    credentialCacheSize: r.int('CREDENTIAL_CACHE_SIZE'),
    sweepIntervalMs: r.int('SWEEP_INTERVAL_SECONDS') * 1000,
    sweepMinAgeMs: r.int('SWEEP_MIN_AGE_SECONDS') * 1000,
    sweepUnstartedAfterMs: r.int('SWEEP_UNSTARTED_AFTER_SECONDS') * 1000,
    publishMaxInFlight: r.int('PUBLISH_MAX_IN_FLIGHT'),
    inboundTraceContext: r.oneOf('INBOUND_TRACEPARENT'),
    trustedProxies: r.cidrs('INGEST_TRUSTED_PROXIES'),
    provenAddressDays: r.int('INGEST_PROVEN_ADDRESS_DAYS'),
    retention: loadRetention(r),
  };
  r.done();
  return cfg;
}

const queueConsumer = (r: EnvReader): QueueConsumerConfig => ({
  aws: aws(r),
  queueUrl: r.url('QUEUE_URL'),
  concurrency: r.int('CONSUMER_CONCURRENCY'),
  visibilityTimeoutSeconds: r.int('QUEUE_VISIBILITY_TIMEOUT_SECONDS'),
});

export function loadConsumerConfig(env: Env): ConsumerConfig {
  const r = createEnvReader(env);
  const cfg: ConsumerConfig = {
    ...common(r),
    ...database(r),
    ...queueConsumer(r),
    temporal: temporal(r),
    tracing: readTracingConfig(r),
  };
  r.done();
  return cfg;
}

export function loadBackoff(r: EnvReader): BackoffConfig {
  return {
    initialIntervalMs: r.int('DELIVERY_BACKOFF_INITIAL_MS'),
    backoffCoefficient: r.num('DELIVERY_BACKOFF_COEFFICIENT'),
    maximumIntervalMs: r.int('DELIVERY_BACKOFF_MAX_MS'),
  };
}

export function loadWorkerConfig(env: Env): WorkerConfig {
  const r = createEnvReader(env);
  const cfg: WorkerConfig = {
    ...common(r),
    ...database(r),
    temporal: temporal(r),
    tracing: readTracingConfig(r),
    backoff: loadBackoff(r),
    outboundDenyCidrs: r.list('OUTBOUND_DENY_CIDRS'),
    outboundAllowCidrs: r.list('OUTBOUND_ALLOW_CIDRS'),
    deliveryProxy: readDeliveryProxy(r),
    kafkaProduce: r.oneOf('KAFKA_PRODUCE'),
    maxConcurrentActivities: r.int('WORKER_MAX_CONCURRENT_ACTIVITIES'),
    consumeQueue: r.bool('WORKER_CONSUME_QUEUE') ? queueConsumer(r) : null,
    sandboxDiagnostics: r.bool('WORKER_SANDBOX_DIAGNOSTICS'),
    orderingHandoff: r.bool('ORDERING_HANDOFF'),
    awsSqsSend: r.oneOf('AWS_SQS_SEND'),
    awsSqsBatch: r.bool('AWS_SQS_BATCH'),
  };
  r.done();
  return cfg;
}

/** `webhook-fanout operator`. The cluster comes from KUBECONFIG, else the in-cluster ServiceAccount. */
export function loadOperatorConfig(env: Env): OperatorConfig {
  const r = createEnvReader(env);
  const cfg: OperatorConfig = {
    ...common(r),
    ...database(r),
    watchNamespaces: r.list('WATCH_NAMESPACE'),
    defaultAllowedNamespaces: r.oneOf('TENANCY_DEFAULT_ALLOWED_NAMESPACES'),
    workers: r.int('OPERATOR_WORKERS'),
    resyncPeriodMs: r.int('OPERATOR_RESYNC_SECONDS') * 1000,
    identity: r.optional('POD_NAME') ?? r.optional('HOSTNAME'),
    temporal: temporal(r),
    leaderElection: {
      enabled: r.bool('LEADER_ELECTION'),
      namespace: r.optional('LEADER_ELECTION_NAMESPACE') ?? r.optional('POD_NAMESPACE') ?? 'default',
      leaseName: r.str('LEADER_ELECTION_LEASE_NAME'),
      leaseDurationMs: r.num('LEADER_ELECTION_LEASE_DURATION_SECONDS') * 1000,
      renewDeadlineMs: r.num('LEADER_ELECTION_RENEW_DEADLINE_SECONDS') * 1000,
      retryPeriodMs: r.num('LEADER_ELECTION_RETRY_PERIOD_SECONDS') * 1000,
    },
  };
  if (!validLeaderElectionTiming(cfg.leaderElection)) {
    r.problems.push(
      'LEADER_ELECTION_LEASE_DURATION_SECONDS must be greater than LEADER_ELECTION_RENEW_DEADLINE_SECONDS, which must be greater than LEADER_ELECTION_RETRY_PERIOD_SECONDS',
    );
  }
  r.done();
  return cfg;
}

export function loadTransportSetupConfig(env: Env): TransportSetupConfig {
  const r = createEnvReader(env);
  const cfg: TransportSetupConfig = {
    ...common(r),
    aws: aws(r),
    topicName: r.str('TOPIC_NAME'),
    queueName: r.str('QUEUE_NAME'),
    dlqName: r.str('DLQ_NAME'),
    visibilityTimeoutSeconds: r.int('QUEUE_VISIBILITY_TIMEOUT_SECONDS'),
  };
  r.done();
  return cfg;
}

export function loadMigrateConfig(env: Env): CommonConfig & DatabaseConfig {
  const r = createEnvReader(env);
  const cfg = { ...common(r), ...database(r) };
  r.done();
  return cfg;
}
