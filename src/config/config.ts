import { createEnvReader, type Env, type EnvReader } from './env-reader.js';

export interface CommonConfig {
  logLevel: string;
  managementPort: number;
}

export interface DatabaseConfig {
  databaseUrl: string;
  dbPoolMax: number;
}

export interface AwsConfig {
  region: string;
  /** AWS_ENDPOINT_URL: an SNS/SQS-compatible endpoint other than AWS (emulators) */
  endpoint: string | undefined;
}

export interface TemporalConfig {
  address: string;
  namespace: string;
  taskQueue: string;
}

export interface IngestConfig extends CommonConfig, DatabaseConfig {
  port: number;
  host: string;
  aws: AwsConfig;
  topicArn: string;
  bodyLimitBytes: number;
  credentialCacheSize: number;
  sweepIntervalMs: number;
  sweepMinAgeMs: number;
  sweepUnstartedAfterMs: number;
}

export interface ConsumerConfig extends CommonConfig, DatabaseConfig {
  aws: AwsConfig;
  queueUrl: string;
  temporal: TemporalConfig;
  concurrency: number;
  visibilityTimeoutSeconds: number;
}

export interface BackoffConfig {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
}

export interface WorkerConfig extends CommonConfig, DatabaseConfig {
  temporal: TemporalConfig;
  backoff: BackoffConfig;
  outboundDenyCidrs: string[];
  outboundAllowCidrs: string[];
  maxConcurrentActivities: number;
}

export interface TransportSetupConfig extends CommonConfig {
  aws: AwsConfig;
  topicName: string;
  queueName: string;
  dlqName: string;
  visibilityTimeoutSeconds: number;
}

const common = (r: EnvReader): CommonConfig => ({
  logLevel: r.str('LOG_LEVEL', 'info'),
  managementPort: r.int('MANAGEMENT_PORT', 9090, 0, 65535),
});

const database = (r: EnvReader): DatabaseConfig => ({
  databaseUrl: r.url('DATABASE_URL'),
  dbPoolMax: r.int('DB_POOL_MAX', 10, 1, 200),
});

const aws = (r: EnvReader): AwsConfig => ({
  region: r.str('AWS_REGION', 'us-east-1'),
  endpoint: r.optional('AWS_ENDPOINT_URL'),
});

const temporal = (r: EnvReader): TemporalConfig => ({
  address: r.str('TEMPORAL_ADDRESS', 'localhost:7233'),
  namespace: r.str('TEMPORAL_NAMESPACE', 'default'),
  taskQueue: r.str('TEMPORAL_TASK_QUEUE', 'WEBHOOKS'),
});

export function loadIngestConfig(env: Env): IngestConfig {
  const r = createEnvReader(env);
  const cfg: IngestConfig = {
    ...common(r),
    ...database(r),
    port: r.int('PORT', 8080, 0, 65535),
    host: r.str('HOST', '0.0.0.0'),
    aws: aws(r),
    topicArn: r.str('TOPIC_ARN'),
    bodyLimitBytes: r.int('INBOUND_BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    credentialCacheSize: r.int('CREDENTIAL_CACHE_SIZE', 1000, 0, 1_000_000),
    sweepIntervalMs: r.int('SWEEP_INTERVAL_SECONDS', 30, 1, 86_400) * 1000,
    sweepMinAgeMs: r.int('SWEEP_MIN_AGE_SECONDS', 60, 0, 86_400) * 1000,
    sweepUnstartedAfterMs: r.int('SWEEP_UNSTARTED_AFTER_SECONDS', 600, 10, 604_800) * 1000,
  };
  r.done();
  return cfg;
}

export function loadConsumerConfig(env: Env): ConsumerConfig {
  const r = createEnvReader(env);
  const cfg: ConsumerConfig = {
    ...common(r),
    ...database(r),
    aws: aws(r),
    queueUrl: r.url('QUEUE_URL'),
    temporal: temporal(r),
    concurrency: r.int('CONSUMER_CONCURRENCY', 10, 1, 10),
    visibilityTimeoutSeconds: r.int('QUEUE_VISIBILITY_TIMEOUT_SECONDS', 30, 1, 43_200),
  };
  r.done();
  return cfg;
}

export function loadBackoff(r: EnvReader): BackoffConfig {
  return {
    initialIntervalMs: r.int('DELIVERY_BACKOFF_INITIAL_MS', 1000, 10, 3_600_000),
    backoffCoefficient: r.num('DELIVERY_BACKOFF_COEFFICIENT', 2, 1, 10),
    maximumIntervalMs: r.int('DELIVERY_BACKOFF_MAX_MS', 600_000, 10, 86_400_000),
  };
}

export function loadWorkerConfig(env: Env): WorkerConfig {
  const r = createEnvReader(env);
  const cfg: WorkerConfig = {
    ...common(r),
    ...database(r),
    temporal: temporal(r),
    backoff: loadBackoff(r),
    outboundDenyCidrs: r.list('OUTBOUND_DENY_CIDRS'),
    outboundAllowCidrs: r.list('OUTBOUND_ALLOW_CIDRS'),
    maxConcurrentActivities: r.int('WORKER_MAX_CONCURRENT_ACTIVITIES', 100, 1, 10_000),
  };
  r.done();
  return cfg;
}

export function loadTransportSetupConfig(env: Env): TransportSetupConfig {
  const r = createEnvReader(env);
  const cfg: TransportSetupConfig = {
    ...common(r),
    aws: aws(r),
    topicName: r.str('TOPIC_NAME', 'webhook-fanout-events'),
    queueName: r.str('QUEUE_NAME', 'webhook-fanout-events'),
    dlqName: r.str('DLQ_NAME', 'webhook-fanout-dlq'),
    visibilityTimeoutSeconds: r.int('QUEUE_VISIBILITY_TIMEOUT_SECONDS', 30, 1, 43_200),
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
