import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { startFauxqs } from 'fauxqs';
import { consoleStatus } from '../config/config.js';
import { loadDevConfig } from '../dev/dev-config.js';
import { createDb, pingDb, type Db } from '../db/knex.js';
import { migrateLatest } from '../db/migrate.js';
import { createRedriveQueries } from '../db/redrive-queries.js';
import { createRepositories } from '../db/repositories.js';
import { devEnvironment, loadDevProcessConfigs, preflight } from '../dev/dev-environment.js';
import { ensureConsoleBuilt } from '../dev/console-build.js';
import { startDevIdentityProvider } from '../dev/dev-idp.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { freePort } from '../dev/ports.js';
import { startTemporalDevServer } from '../dev/temporal-dev-server.js';
import { watchManifests } from '../manifests/watch-manifests.js';
import { createReplayRuns } from '../db/replay-runs.js';
import { createReplayRunner } from '../temporal/replay-runner.js';
import { createReplayQueries } from '../db/replay-queries.js';
import { skipInNamespace } from '../temporal/ordering-skip.js';
import { bindSignalTurn } from '../api/start-replay.js';
import { startReplay } from '../temporal/replay-starter.js';
import { createMetrics } from '../metrics/metrics.js';
import { createLogger } from '../observability/logger.js';
import { installTemporalRuntime } from '../observability/temporal-runtime.js';
import { clientTracing } from '../observability/temporal-tracing.js';
import { startTracing } from '../observability/tracing.js';
import { buildConsumerProcess } from '../processes/consumer-process.js';
import { connectTemporalClient } from '../temporal/connection.js';
import { connectTemporalNative } from '../temporal/native-connection.js';
import { buildIngestProcess } from '../processes/ingest-process.js';
import { buildWorkerProcess } from '../processes/worker-process.js';
import { createAwsClients } from '../transport/aws-clients.js';
import { createEventPublisher } from '../transport/publisher.js';
import { ensureTopology } from '../transport/topology.js';
import { runService } from '../processes/lifecycle.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Composition root: `webhook-fanout dev` (`npm start`). Ingest, consumer, worker and the manifest
 * loader in one process, on embedded Postgres, in-process SNS/SQS (fauxqs) and a Temporal dev
 * server, each replaced by the real thing when DATABASE_URL, AWS_ENDPOINT_URL or TEMPORAL_ADDRESS
 * is set. State lives in .data/dev so events and workflows survive a restart.
 */
export async function main(env: NodeJS.ProcessEnv, argv: string[] = []): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { 'config-dir': { type: 'string' }, 'data-dir': { type: 'string' } },
    allowPositionals: false,
  });
  const dev = loadDevConfig(env);
  // every process's configuration checked before anything starts; read again once the addresses are known
  const before = preflight(env, dev);
  const configDir = path.resolve(values['config-dir'] ?? dev.configDir ?? path.join(REPO_ROOT, 'examples/dev'));
  const dataDir = path.resolve(values['data-dir'] ?? dev.dataDir ?? path.join(REPO_ROOT, '.data/dev'));
  const { logLevel, managementPort } = before.ingest;
  const namespace = before.worker.temporal.namespace;

  const logger = createLogger({ level: logLevel, name: 'dev' });
  installTemporalRuntime(logger);
  // one tracer provider for the parts, as in production (OTEL_* variables; off when none is set)
  const tracing = await startTracing('dev', env, logger);
  const metrics = createMetrics();
  await mkdir(dataDir, { recursive: true });
  const cleanups: Array<() => Promise<void>> = [];
  let db: Db | undefined;

  await runService({
    name: 'webhook-fanout dev',
    logger,
    managementPort,
    // like the public port: dev mode serves this machine only
    managementHost: '127.0.0.1',
    registry: metrics.registry,
    checks: { postgres: async () => (db ? pingDb(db) : false) },
    start: async () => {
      logger.info({ configDir, dataDir }, 'starting embedded dependencies');
      // the console is served from dist/console as in production: built (meanwhile) when missing
      // or older than its sources; a failed build is named, and the rest of dev mode still runs
      const consoleBuilt = before.ingest.console
        ? ensureConsoleBuilt({ repoRoot: REPO_ROOT, logger }).catch((err: unknown) => {
            logger.error({ err: String(err) }, 'the console could not be built: its pages answer 503 (see npm run build)');
          })
        : undefined;
      const [databaseUrl, temporalAddress, awsEndpoint] = await Promise.all([
        dev.external.databaseUrl ??
          startEmbeddedPostgres({ dataDir: path.join(dataDir, 'postgres'), persistent: true, port: await freePort() }).then((pg) => {
            cleanups.push(() => pg.stop());
            if (pg.dataDir !== path.join(dataDir, 'postgres')) {
              logger.info(
                { postgresDataDir: pg.dataDir },
                'Postgres keeps its data outside the checkout: its "postgres" user can not reach it',
              );
            }
            return pg.url;
          }),
        dev.external.temporalAddress ??
          startTemporalDevServer({ dbFile: path.join(dataDir, 'temporal.sqlite'), namespace }).then((t) => {
            cleanups.push(() => t.stop());
            return t.address;
          }),
        dev.external.awsEndpoint ??
          startFauxqs({ port: await freePort(), logger: false, dataDir: path.join(dataDir, 'sqs') }).then((f) => {
            cleanups.push(() => f.stop());
            return f.address;
          }),
      ]);

      const awsOptions = { ...before.ingest.aws, endpoint: awsEndpoint };
      const aws = createAwsClients(awsOptions);
      cleanups.push(async () => {
        aws.sns.destroy();
        aws.sqs.destroy();
      });
      const topology = await ensureTopology(aws, before.transport);

      // the admin API trusts a local identity provider unless AUTH_URL names one (dev-idp.ts)
      const idpSettings = dev.devIdentityProvider;
      const idp = idpSettings
        ? await startDevIdentityProvider({
            dataDir,
            user: idpSettings.user,
            // the claim the admin API reads (AUTH_NAMESPACES_CLAIM), for dev-tenant's tokens
            ...(before.ingest.adminApi ? { namespacesClaim: before.ingest.adminApi.namespacesClaim } : {}),
            ...(idpSettings.port === undefined ? {} : { port: idpSettings.port }),
            ...(idpSettings.audience ? { audience: idpSettings.audience } : {}),
          })
        : undefined;
      if (idp) cleanups.push(() => idp.close());
      const cfg = loadDevProcessConfigs(
        devEnvironment(env, { databaseUrl, temporalAddress, awsEndpoint, ...topology, devIdentityProvider: idp?.config ?? null }),
      );

      db = createDb({ url: cfg.ingest.databaseUrl, poolMax: cfg.ingest.dbPoolMax, tls: cfg.ingest.databaseTls, logger });
      const liveDb = db;
      cleanups.push(() => liveDb.destroy());
      await migrateLatest(db);
      const repos = createRepositories(db, { operations: cfg.ingest.operations });

      // an external Temporal may take TLS and an API key (TEMPORAL_TLS_*), as the processes do
      const nativeConnection = await connectTemporalNative(cfg.worker.temporal);
      cleanups.push(() => nativeConnection.close());
      const connection = await connectTemporalClient(cfg.consumer.temporal);
      cleanups.push(() => connection.close());
      const interceptors = await clientTracing(tracing);
      const client = new Client({ connection, namespace, ...(interceptors ? { interceptors } : {}) });

      // a WebhookReplay manifest is applied once, its runs started on this client (manifests/drive-replays.ts)
      const replays = {
        runner: createReplayRunner({
          runs: createReplayRuns(db, repos.operationalEvents),
          startRun: (req) => startReplay(client, { ...req, taskQueue: cfg.consumer.temporal.taskQueue }),
          skip: skipInNamespace({
            replays: createReplayQueries(db),
            ordering: repos.ordering,
            signalTurn: bindSignalTurn(() => Promise.resolve(client), cfg.consumer.temporal.taskQueue),
            logger,
          }),
          logger,
        }),
        endpoint: (ns: string, name: string) => repos.endpoints.activeByName(ns, name),
      };
      const manifests = await watchManifests({
        dir: configDir,
        repos,
        logger,
        options: { defaultAllowedNamespaces: dev.defaultAllowedNamespaces },
        replays,
      });
      cleanups.push(() => manifests.close());

      const worker = await buildWorkerProcess({ settings: cfg.worker, connection: nativeConnection, repos, metrics, logger, tracing });
      const consumer = buildConsumerProcess({
        settings: cfg.consumer,
        sqs: aws.sqs,
        client,
        repos,
        redrive: createRedriveQueries(liveDb),
        metrics,
        logger,
      });
      const publisher = createEventPublisher({
        sns: aws.sns,
        aws: awsOptions,
        topicArn: cfg.ingest.topicArn,
        maxInFlight: cfg.ingest.publishMaxInFlight,
      });
      cleanups.push(() => publisher.close());
      await consoleBuilt;
      const ingestProcess = await buildIngestProcess({
        settings: cfg.ingest,
        db,
        repos,
        publisher,
        metrics,
        logger,
        adminApi: cfg.ingest.adminApi
          ? { auth: cfg.ingest.adminApi, temporal: { client: () => Promise.resolve(client), taskQueue: cfg.ingest.temporal.taskQueue } }
          : undefined,
        console: cfg.ingest.console && cfg.ingest.adminApi ? { config: cfg.ingest.console, auth: cfg.ingest.adminApi } : undefined,
      });
      const parts = [worker.start(), consumer.start()];
      const ingest = await ingestProcess.start();
      parts.push(ingest);
      if (cfg.ingest.console) idp?.allowConsoleAt(ingest.url);

      const m = manifests.initial;
      const auth = cfg.ingest.adminApi;
      process.stdout.write(
        [
          '',
          'webhook-fanout dev mode is running',
          `  inbound webhooks  POST ${ingest.url}/api/webhooks/{source}   (HTTP Basic per source)`,
          `  metrics & probes  http://localhost:${managementPort}/metrics  /healthz  /readyz`,
          `  manifests         ${configDir}  (${m.endpoints} endpoint(s), ${m.credentials} credential(s)${m.errors.length ? `, ${m.errors.length} rejected` : ''}${m.denied.length ? `, ${m.denied.length} endpoint(s) not allowed by their source` : ''}; edits reload live)`,
          `  postgres          ${dev.external.databaseUrl ? 'DATABASE_URL' : databaseUrl.replace(/:[^:@/]+@/, ':***@')}`,
          `  temporal          ${temporalAddress} (namespace ${namespace}, task queue ${cfg.worker.temporal.taskQueue})`,
          `  sns/sqs           ${awsEndpoint}`,
          ...(auth === null
            ? ['  admin API         disabled (ADMIN_API_ENABLED=false)']
            : idp
              ? idp.recipe(ingest.url, { console: cfg.ingest.console !== null })
              : [
                  `  admin API         ${ingest.url}/api/events  (JWT from ${auth.authUrl}, audience ${auth.audience})`,
                  cfg.ingest.console
                    ? `  console           ${ingest.url}/console/  (logs in at ${auth.authUrl}, client ${cfg.ingest.console.clientId})`
                    : `  console           ${consoleStatus(cfg.ingest, env)}`,
                ]),
          '',
          '  try:',
          `    curl -u example:example-password -H 'content-type: application/json' \\`,
          `      -d '{"id":"evt_1","type":"order.created"}' ${ingest.url}/api/webhooks/example`,
          '',
          '  Ctrl-C stops everything.',
          '',
        ].join('\n'),
      );
      return parts;
    },
    cleanup: async () => {
      for (const c of cleanups.reverse()) await c().catch((err: unknown) => logger.warn({ err: String(err) }, 'cleanup step failed'));
      await tracing.shutdown();
    },
  });
}
