import type { OperationsEventsSettings } from '../../src/config/settings.js';
import type { RefusalLimits } from '../../src/ingest/refusal-limiter.js';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import bcrypt from 'bcrypt';
import type { FastifyInstance } from 'fastify';
import { startFauxqs } from 'fauxqs';
import type { AdminApiWiring } from '../../src/api/admin-api-from-config.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import type { Db } from '../../src/db/knex.js';
import { freePort } from '../../src/dev/ports.js';
import type { HttpTimeouts } from '../../src/config/settings.js';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import {
  buildIngestProcess,
  type ConsoleWiring,
  type IngestProcess,
  type IngestSettings,
  type StartedIngest,
} from '../../src/processes/ingest-process.js';
import { createAwsClients, type AwsClients } from '../../src/transport/aws-clients.js';
import { createEventPublisher } from '../../src/transport/publisher.js';
import { ensureTopology, type Topology } from '../../src/transport/topology.js';

type Fauxqs = Awaited<ReturnType<typeof startFauxqs>>;

/**
 * The ingest process as cmd/ingest.ts builds and starts it (buildIngestProcess, then start():
 * a real socket, the sweeper running), on real Postgres and an SNS/SQS emulator reached over HTTP.
 */
export interface IngestHarness {
  url: string;
  repos: Repositories;
  metrics: Metrics;
  aws: AwsClients;
  topology: Topology;
  app: FastifyInstance;
  /** the process's sweeper; its ticks are a minute apart, so a test drives it with sweepOnce() */
  sweeper: IngestProcess['sweeper'];
  /** another ingest process on the same database and topic: a replica, or this one coming back */
  startAnother(opts: { logger: Logger; sweep: Pick<IngestSettings, 'sweepMinAgeMs' | 'sweepUnstartedAfterMs'> }): Promise<StartedIngest>;
  /** stops the emulator (the topic becomes unreachable) */
  stopTopic(): Promise<void>;
  /** starts it again on the same port and recreates the topology */
  restartTopic(): Promise<void>;
  /** every event id on the queue right now (received with visibility 0, so they stay) */
  queuedEventIds(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startIngestHarness(opts: {
  db: Db;
  bodyLimitBytes?: number;
  rowTtlMs?: number;
  cacheSize?: number;
  timeouts?: HttpTimeouts;
  /** the inbound refusal floor (default REFUSAL_FLOOR_MS) */
  refusalFloorMs?: number;
  /** INGEST_TRUSTED_PROXIES (default none: the TCP peer is the client) */
  trustedProxies?: string[];
  /** what bounds wrong passwords (default DEFAULT_REFUSAL_LIMITS, 10 refusals a minute from one address) */
  refusalLimits?: RefusalLimits;
  /** how often each ingest reads the proven client addresses again (default a minute) */
  provenAddressRefreshMs?: number;
  /** the credential verifier's clock (epoch ms), so a test moves past its cache TTL without waiting */
  now?: () => number;
  /** default: events re-published after a minute, as in production */
  sweep?: Partial<Pick<IngestSettings, 'sweepMinAgeMs' | 'sweepUnstartedAfterMs'>>;
  /** the admin API beside the inbound route, as ingest runs it by default */
  adminApi?: AdminApiWiring;
  /** the web console under /console/, as ingest serves it when CONSOLE_ENABLED */
  console?: ConsoleWiring;
  /** the retention job's settings (RETENTION_*); default off */
  retention?: IngestSettings['retention'];
  logger?: Logger;
  /** OPERATIONS_EVENTS_*: the reserved source ingest refuses (docs/operations-events.md); default webhook-fanout */
  operations?: OperationsEventsSettings;
}): Promise<IngestHarness> {
  const sqsPort = await freePort();
  let fauxqs: Fauxqs | undefined = await startFauxqs({ port: sqsPort, logger: false });
  const awsOptions = { region: 'us-east-1', endpoint: `http://127.0.0.1:${sqsPort}`, maxAttempts: 1 };
  const aws = createAwsClients(awsOptions);
  const publishers: Array<ReturnType<typeof createEventPublisher>> = [];
  let topology = await ensureTopology(aws);
  const repos = createRepositories(opts.db, opts.operations ? { operations: opts.operations } : {});
  const metrics = createMetrics({ defaultMetrics: false });
  const settings: IngestSettings = {
    port: 0,
    host: '127.0.0.1',
    bodyLimitBytes: opts.bodyLimitBytes ?? 1024 * 1024,
    credentialCacheSize: opts.cacheSize ?? 1000,
    ...(opts.timeouts ? { httpTimeouts: opts.timeouts } : {}),
    sweepIntervalMs: 60_000,
    sweepMinAgeMs: 60_000,
    ...opts.sweep,
    ...(opts.retention ? { retention: opts.retention } : {}),
    ...(opts.trustedProxies ? { trustedProxies: opts.trustedProxies } : {}),
  };
  const track = (p: ReturnType<typeof createEventPublisher>): ReturnType<typeof createEventPublisher> => {
    publishers.push(p);
    return p;
  };
  const build = (logger: Logger, overrides: Partial<IngestSettings> = {}) =>
    buildIngestProcess({
      settings: { ...settings, ...overrides },
      db: opts.db,
      repos,
      publisher: track(createEventPublisher({ sns: aws.sns, aws: awsOptions, topicArn: topology.topicArn })),
      metrics,
      logger,
      adminApi: opts.adminApi,
      console: opts.console,
      credentialCache: { ...(opts.rowTtlMs === undefined ? {} : { rowTtlMs: opts.rowTtlMs }), ...(opts.now ? { now: opts.now } : {}) },
      ...(opts.refusalFloorMs === undefined ? {} : { refusalFloorMs: opts.refusalFloorMs }),
      ...(opts.refusalLimits ? { refusalLimits: opts.refusalLimits } : {}),
      ...(opts.provenAddressRefreshMs === undefined ? {} : { provenAddressRefreshMs: opts.provenAddressRefreshMs }),
    });
  const ingest = await build(opts.logger ?? createLogger({ level: 'silent' }));
  const started = await ingest.start();
  const others: StartedIngest[] = [];

  return {
    url: started.url,
    repos,
    metrics,
    aws,
    get topology() {
      return topology;
    },
    app: ingest.app,
    sweeper: ingest.sweeper,
    async startAnother({ logger, sweep }) {
      const other = await (await build(logger, sweep)).start();
      others.push(other);
      return other;
    },
    async stopTopic() {
      await fauxqs?.stop();
      fauxqs = undefined;
    },
    async restartTopic() {
      fauxqs = await startFauxqs({ port: sqsPort, logger: false });
      topology = await ensureTopology(aws);
    },
    async queuedEventIds() {
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await aws.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: topology.queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0, WaitTimeSeconds: 0 }),
        );
        const batch = (r.Messages ?? []).map((m) => (JSON.parse(m.Body ?? '{}') as { eventId: string }).eventId);
        if (batch.length === 0) break;
        for (const id of batch) if (!ids.includes(id)) ids.push(id);
        if (batch.length < 10) break;
      }
      return ids;
    },
    async close() {
      for (const p of [...others, started]) await p.stop();
      for (const p of publishers) await p.close();
      await fauxqs?.stop();
      aws.sns.destroy();
      aws.sqs.destroy();
    },
  };
}

export async function addCredential(repos: Repositories, source: string, username: string, password: string): Promise<void> {
  await repos.credentials.upsertByResourceUid(`test:${source}`, {
    source,
    username,
    passwordHash: await bcrypt.hash(password, 10),
    eventIdRule: null,
    eventTypeRule: null,
    resourceName: `test/${source}`,
  });
}
