import { chartWorkerConsumesQueue } from './cli-unit.js';

/** BENCH_TEMPORAL: the CLI's dev server in memory, or temporal-server on Postgres (bench/temporal-postgres.ts) */
export type TemporalKind = 'dev' | 'postgres';

export interface BenchConfig {
  temporalKind: TemporalKind;
  /** BENCH_TEMPORAL_DURABLE=1 (with postgres): Temporal's Postgres with fsync and synchronous commits on */
  temporalDurable: boolean;
  /** BENCH_SCALE_OUT=1: the scale-out phase (one worker, then two), events per run of it */
  scaleOut: boolean;
  scaleOutEvents: number;
  /** concurrent connections of the load generator, the same for ingest and baseline */
  connections: number;
  durationS: number;
  warmupS: number;
  /** alternating baseline/ingest rounds; the figures are the medians */
  rounds: number;
  /** the duplicate-id run against ingest; 0 skips it */
  duplicateDurationS: number;
  e2eEvents1: number;
  e2eEvents10: number;
  e2eWarmupEvents: number;
  /** rounds of the four e2e runs; the figures are the medians */
  e2eRounds: number;
  /** knex pool of every unit (production default DB_POOL_MAX = 10) */
  dbPoolMax: number;
  /** log level of the units (production default info) */
  logLevel: string;
  /** WORKER_MAX_CONCURRENT_ACTIVITIES, for the real and the bare worker alike */
  maxConcurrentActivities: number;
  /** CONSUMER_CONCURRENCY; the bare workflows are started with the same concurrency */
  consumerConcurrency: number;
  /** real e2e runs: each delivery's first request answered 503, the retry (after the production backoff) 200 */
  e2eFailFirst: boolean;
  /**
   * The shape of the bench's main runs (both e2e cases, the latency and scale-out phases): true, no
   * consumer process, the worker reads the queue and starts eagerly; false, a consumer process
   * starts the workflows. The chart's `worker.consumeQueue` unless BENCH_WORKER_CONSUMES_QUEUE
   * (1 or 0) says otherwise.
   */
  workerConsumesQueue: boolean;
  /** the chart's default `worker.consumeQueue` (values.yaml), what `helm install` runs */
  chartWorkerConsumesQueue: boolean;
  /** BENCH_E2E_SHAPES (on; 0 skips): the one-endpoint case in the other shape too, beside the main one */
  e2eShapes: boolean;
  /** BENCH_E2E_CONTENT (on; 0 skips): a filtered and a transformed one-endpoint round beside the plain one */
  e2eContent: boolean;
  /**
   * BENCH_E2E_ORDERED (on; 0 skips): the ordered rounds beside the plain one (issue 41): the plain
   * round's events ordered over BENCH_ORDERED_KEYS customers (100), and one customer's
   * BENCH_ORDERED_ONE_KEY_EVENTS events (100) delivered one after the other
   */
  e2eOrdered: boolean;
  orderedKeys: number;
  orderedOneKeyEvents: number;
  /**
   * BENCH_E2E_DESTINATIONS (on; 0 skips): one-endpoint rounds to a Kafka topic (a local Kafka 4,
   * scripts/tools/brokers.sh) and to an SQS queue (the bench's fauxqs) beside HTTP's (issue 43)
   */
  e2eDestinations: boolean;
  /**
   * BENCH_DESTINATION_ROUNDS (8): the destination rounds' own count, after the main rounds: each
   * round an HTTP, a Kafka and an SQS run of BENCH_E2E_EVENTS_1 events side by side, every other
   * round backwards; each round's ratio to its HTTP run is one reading, their median and range the figure
   */
  destinationRounds: number;
  /**
   * BENCH_DESTINATION_SENDS (500; 0 skips): with the destination rounds, each destination's sends
   * per block (4 blocks, 10 in flight) alone in a child process (bench/destination-send.ts)
   */
  destinationSends: number;
  /** the latency phase: events per second offered to ingest, and for how long (0 skips it) */
  latencyRate: number;
  latencyDurationS: number;
  /** the wrong-passwords phase: a valid sender's rate, how long alone and under the flood (0 skips it), the flood's connections */
  wrongPasswordsRate: number;
  wrongPasswordsDurationS: number;
  wrongPasswordsConnections: number;
  /** BENCH_FRESH_FLOOD_S: seconds of each fresh-ingest case (five senders' first requests on an ingest just started; 0 skips them) */
  freshFloodDurationS: number;
  /** extra environment of the compiled worker / consumer / ingest (BENCH_WORKER_ENV="K=V,K=V"), to try settings */
  workerEnv: Record<string, string>;
  consumerEnv: Record<string, string>;
  ingestEnv: Record<string, string>;
  /**
   * node's flags for a compiled process in place of the chart's `<component>.nodeFlags`
   * (BENCH_CONSUMER_NODE_FLAGS="--flag --flag"; set and empty: none), to try V8 flags
   */
  nodeFlags: Partial<Record<'worker' | 'consumer' | 'ingest', string[]>>;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

function envList(env: NodeJS.ProcessEnv, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (env[name] ?? '').split(',').filter((p) => p.trim() !== '')) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw new Error(`${name} must be K=V pairs separated by commas, got ${JSON.stringify(pair)}`);
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

function temporalKind(env: NodeJS.ProcessEnv): TemporalKind {
  const raw = env.BENCH_TEMPORAL ?? '';
  if (raw === '' || raw === 'dev') return 'dev';
  if (raw === 'postgres') return 'postgres';
  throw new Error(`BENCH_TEMPORAL must be dev or postgres, got ${JSON.stringify(raw)}`);
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === '1' || raw === '0') return raw === '1';
  throw new Error(`${name} must be 1 or 0, got ${JSON.stringify(raw)}`);
}

/**
 * Defaults keep the whole `npm run bench` at about six minutes on a 2-core machine (docs/benchmarks.md).
 * `chartConsumesQueue`: the chart's default `worker.consumeQueue` (read from values.yaml).
 */
export function loadBenchConfig(env: NodeJS.ProcessEnv = process.env, chartConsumesQueue = chartWorkerConsumesQueue()): BenchConfig {
  return {
    temporalKind: temporalKind(env),
    temporalDurable: env.BENCH_TEMPORAL_DURABLE === '1',
    scaleOut: env.BENCH_SCALE_OUT === '1',
    scaleOutEvents: int(env, 'BENCH_SCALE_OUT_EVENTS', 400, 1),
    connections: int(env, 'BENCH_CONNECTIONS', 50, 1),
    durationS: int(env, 'BENCH_DURATION_S', 10, 1),
    warmupS: int(env, 'BENCH_WARMUP_S', 3, 0),
    rounds: int(env, 'BENCH_ROUNDS', 3, 1),
    duplicateDurationS: int(env, 'BENCH_DUP_DURATION_S', 5, 0),
    e2eEvents1: int(env, 'BENCH_E2E_EVENTS_1', 200, 1),
    e2eEvents10: int(env, 'BENCH_E2E_EVENTS_10', 100, 1),
    e2eWarmupEvents: int(env, 'BENCH_E2E_WARMUP_EVENTS', 20, 0),
    e2eRounds: int(env, 'BENCH_E2E_ROUNDS', 2, 1),
    dbPoolMax: int(env, 'BENCH_DB_POOL_MAX', 10, 1),
    logLevel: env.BENCH_LOG_LEVEL ?? 'info',
    maxConcurrentActivities: int(env, 'BENCH_MAX_CONCURRENT_ACTIVITIES', 100, 1),
    consumerConcurrency: int(env, 'BENCH_CONSUMER_CONCURRENCY', 10, 1),
    e2eFailFirst: env.BENCH_E2E_FAIL_FIRST === '1',
    workerConsumesQueue: flag(env, 'BENCH_WORKER_CONSUMES_QUEUE', chartConsumesQueue),
    chartWorkerConsumesQueue: chartConsumesQueue,
    e2eShapes: flag(env, 'BENCH_E2E_SHAPES', true),
    e2eContent: flag(env, 'BENCH_E2E_CONTENT', true),
    e2eOrdered: flag(env, 'BENCH_E2E_ORDERED', true),
    orderedKeys: int(env, 'BENCH_ORDERED_KEYS', 100, 1),
    orderedOneKeyEvents: int(env, 'BENCH_ORDERED_ONE_KEY_EVENTS', 100, 2),
    e2eDestinations: flag(env, 'BENCH_E2E_DESTINATIONS', true),
    destinationRounds: int(env, 'BENCH_DESTINATION_ROUNDS', 8, 1),
    destinationSends: int(env, 'BENCH_DESTINATION_SENDS', 500, 0),
    latencyRate: int(env, 'BENCH_LATENCY_RATE', 5, 1),
    latencyDurationS: int(env, 'BENCH_LATENCY_S', 20, 0),
    wrongPasswordsRate: int(env, 'BENCH_WRONG_PASSWORDS_RATE', 20, 1),
    wrongPasswordsDurationS: int(env, 'BENCH_WRONG_PASSWORDS_S', 15, 0),
    wrongPasswordsConnections: int(env, 'BENCH_WRONG_PASSWORDS_CONNECTIONS', 200, 1),
    freshFloodDurationS: int(env, 'BENCH_FRESH_FLOOD_S', 20, 0),
    workerEnv: envList(env, 'BENCH_WORKER_ENV'),
    consumerEnv: envList(env, 'BENCH_CONSUMER_ENV'),
    ingestEnv: envList(env, 'BENCH_INGEST_ENV'),
    nodeFlags: Object.fromEntries(
      (['worker', 'consumer', 'ingest'] as const).flatMap((c) => {
        const raw = env[`BENCH_${c.toUpperCase()}_NODE_FLAGS`];
        return raw === undefined ? [] : [[c, raw.split(/\s+/).filter((f) => f !== '')]];
      }),
    ),
  };
}
