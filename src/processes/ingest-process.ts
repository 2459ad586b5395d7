import type { FastifyInstance } from 'fastify';
import type { AdminApiWiring } from '../api/admin-api-from-config.js';
import type { RunningProcess } from './running-process.js';
import type { AdminApiConfig, ConsoleConfig, IngestConfig } from '../config/config.js';
import { createBatchingEventInserter } from '../db/event-inserter.js';
import type { Db } from '../db/knex.js';
import type { Repositories } from '../db/repositories.js';
import { buildIngestApp } from '../ingest/app.js';
import { createClientAddressResolver } from '../ingest/client-address.js';
import { createCredentialVerifier } from '../ingest/credential-verifier.js';
import { createProvenAddresses } from '../ingest/proven-addresses.js';
import { createRefusalLimiter, type RefusalLimits } from '../ingest/refusal-limiter.js';
import { createReceiveWebhook } from '../ingest/receive-webhook.js';
import { createSweeper } from '../ingest/sweeper.js';
import { createRetentionJob, RETENTION_OFF } from '../retention/retention-job.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import type { EventPublisher } from '../transport/publisher.js';
import { VARIABLES } from '../config/settings.js';

/** What the ingest process takes from its configuration: IngestConfig, or a test's own values. */
export type IngestSettings = Pick<
  IngestConfig,
  'port' | 'host' | 'bodyLimitBytes' | 'credentialCacheSize' | 'sweepIntervalMs' | 'sweepMinAgeMs'
> &
  // the defaults of config/settings.ts when absent
  Partial<
    Pick<
      IngestConfig,
      'httpTimeouts' | 'sweepUnstartedAfterMs' | 'retention' | 'inboundTraceContext' | 'trustedProxies' | 'provenAddressDays'
    >
  >;

export interface IngestDeps {
  settings: IngestSettings;
  db: Db;
  repos: Repositories;
  publisher: EventPublisher;
  metrics: Metrics;
  logger: Logger;
  /** the admin API beside the inbound route; absent when ADMIN_API_ENABLED=false */
  adminApi?: AdminApiWiring | undefined;
  /** the web console under /console/; absent when CONSOLE_ENABLED=false */
  console?: ConsoleWiring | undefined;
  /** the credential cache's row TTL and clock: tests pass their own to move past the TTL without waiting */
  credentialCache?: { rowTtlMs?: number; now?: () => number };
  /** the inbound route's refusal floor (default REFUSAL_FLOOR_MS): the timing test measures without it too */
  refusalFloorMs?: number;
  /** what bounds wrong passwords' bcrypt (default DEFAULT_REFUSAL_LIMITS): tests that refuse by the hundred raise them */
  refusalLimits?: RefusalLimits;
  /** how often the proven client addresses are read again (default a minute): a test of replicas passes less */
  provenAddressRefreshMs?: number;
}

/** The console's settings and the identity provider it logs in with (the admin API's). */
export interface ConsoleWiring {
  config: ConsoleConfig;
  auth: Pick<AdminApiConfig, 'authUrl' | 'audience'>;
  /** the built console; default dist/console of this package */
  dir?: string;
}

/** The ingest process built and not started: its parts, for start() and for tests. */
export interface IngestProcess {
  /** the public HTTP app (inbound route, admin API), not listening */
  app: FastifyInstance;
  sweeper: ReturnType<typeof createSweeper>;
  /** deletes what is older than settings.retention (off when absent) */
  retention: ReturnType<typeof createRetentionJob>;
  /** listens on settings.port and host, then starts the sweeper and the retention job (a first pass of each at once) */
  start(): Promise<StartedIngest>;
}

export interface StartedIngest extends RunningProcess {
  url: string;
  port: number;
}

/** The public HTTP server (inbound webhooks and the admin API) and the sweeper, wired. */
export async function buildIngestProcess(deps: IngestDeps): Promise<IngestProcess> {
  const { settings } = deps;
  const provenAddressDays = settings.provenAddressDays ?? VARIABLES.INGEST_PROVEN_ADDRESS_DAYS.default;
  // the addresses each source was proven from, across restarts: the limiter's line places them first
  const proven = createProvenAddresses({
    repo: deps.repos.provenAddresses,
    metrics: deps.metrics,
    logger: deps.logger,
    maxAgeMs: provenAddressDays * 86_400_000,
    ...(deps.provenAddressRefreshMs === undefined ? {} : { refreshMs: deps.provenAddressRefreshMs }),
  });
  const verifier = createCredentialVerifier({
    credentials: deps.repos.credentials,
    cacheSize: settings.credentialCacheSize,
    ...deps.credentialCache,
    limiter: createRefusalLimiter(deps.refusalLimits, deps.credentialCache?.now, proven.has),
    onProven: proven.record,
    reservedSource: deps.repos.operationalEvents.source,
  });
  const receiveWebhook = createReceiveWebhook({
    events: deps.repos.events,
    insertEvent: createBatchingEventInserter(deps.db, deps.repos.events),
    publisher: deps.publisher,
    metrics: deps.metrics,
    logger: deps.logger,
  });
  const app = await buildIngestApp({
    receiveWebhook,
    // credentials are checked before the body is read
    verifier,
    timeouts: settings.httpTimeouts,
    metrics: deps.metrics,
    logger: deps.logger,
    bodyLimitBytes: settings.bodyLimitBytes,
    ...(settings.inboundTraceContext ? { inboundTraceContext: settings.inboundTraceContext } : {}),
    // who the client is behind the proxies we trust: what the refusal limits count and the logs name
    resolveClientAddress: createClientAddressResolver(settings.trustedProxies ?? []),
    ...(deps.refusalFloorMs === undefined ? {} : { refusalFloorMs: deps.refusalFloorMs }),
    // imported only when enabled: its routes, schemas, OpenAPI UI and token verification would
    // otherwise stay loaded in every ingest that serves webhooks alone
    adminApi:
      deps.adminApi &&
      (await import('../api/admin-api-from-config.js')).adminApiFromConfig({
        ...deps.adminApi,
        db: deps.db,
        repos: deps.repos,
        logger: deps.logger,
      }),
    console:
      deps.console &&
      (await import('../console-server/console-plugin.js')).consolePlugin({ ...deps.console, metrics: deps.metrics, logger: deps.logger }),
  });
  const sweeper = createSweeper({
    events: deps.repos.events,
    publisher: deps.publisher,
    metrics: deps.metrics,
    logger: deps.logger,
    intervalMs: settings.sweepIntervalMs,
    minAgeMs: settings.sweepMinAgeMs,
    unstartedAfterMs: settings.sweepUnstartedAfterMs,
    bulkReplays: deps.repos.bulkReplays,
  });
  // in ingest because every installation runs it (a consumer may not exist); one replica at a time
  const retention = createRetentionJob({
    db: deps.db,
    metrics: deps.metrics,
    logger: deps.logger,
    settings: settings.retention ?? RETENTION_OFF,
    provenAddressMaxAgeSeconds: provenAddressDays * 86_400,
  });
  return {
    app,
    sweeper,
    retention,
    async start() {
      // before the first request: after a restart during a flood, the known senders go first at once
      await proven.start();
      await app.listen({ port: settings.port, host: settings.host });
      sweeper.start();
      retention.start();
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : settings.port;
      const shownHost = settings.host === '0.0.0.0' || settings.host === '::' ? 'localhost' : settings.host;
      return {
        url: `http://${shownHost}:${port}`,
        port,
        async stop() {
          // close() stops accepting, answers 503 to new requests on kept-alive sockets, drains in-flight ones
          await app.close();
          await Promise.all([sweeper.stop(), retention.stop(), proven.stop()]);
        },
      };
    },
  };
}
