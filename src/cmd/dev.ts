import { mkdir } from 'node:fs/promises';
import { createRedriveQueries } from '../db/redrive-queries.js';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { startFauxqs } from 'fauxqs';
import { adminApiRegistration } from '../api/admin-api-registration.js';
import { loadAdminApiConfig, loadBackoff, type AdminApiConfig } from '../config/config.js';
import { createEnvReader } from '../config/env-reader.js';
import { createDb, pingDb, type Db } from '../db/knex.js';
import { migrateLatest } from '../db/migrate.js';
import { createRepositories } from '../db/repositories.js';
import { startDevIdentityProvider } from '../dev/dev-idp.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { freePort } from '../dev/ports.js';
import { startTemporalDevServer } from '../dev/temporal-dev-server.js';
import { watchManifests } from '../manifests/watch-manifests.js';
import { createMetrics } from '../metrics/metrics.js';
import { createLogger } from '../observability/logger.js';
import { installTemporalRuntime } from '../observability/temporal-runtime.js';
import { startConsumerProcess } from '../processes/consumer-process.js';
import { startIngestProcess, type RunningProcess } from '../processes/ingest-process.js';
import { startWorkerProcess } from '../processes/worker-process.js';
import { createAwsClients } from '../transport/aws-clients.js';
import { createBatchingSnsPublisher } from '../transport/batching-publisher.js';
import { ensureTopology } from '../transport/topology.js';
import { TASK_QUEUE } from '../workflows/names.js';
import { runService } from './lifecycle.js';

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
  const r = createEnvReader(env);
  const configDir = path.resolve(values['config-dir'] ?? r.optional('WEBHOOK_FANOUT_CONFIG_DIR') ?? path.join(REPO_ROOT, 'examples/dev'));
  const dataDir = path.resolve(values['data-dir'] ?? r.optional('WEBHOOK_FANOUT_DATA_DIR') ?? path.join(REPO_ROOT, '.data/dev'));
  const port = r.int('PORT', 8080, 0, 65535);
  const managementPort = r.int('MANAGEMENT_PORT', 9090, 0, 65535);
  const backoff = loadBackoff(r);
  const logLevel = r.str('LOG_LEVEL', 'info');
  const externalDb = r.optional('DATABASE_URL');
  const externalTemporal = r.optional('TEMPORAL_ADDRESS');
  const namespace = r.str('TEMPORAL_NAMESPACE', 'default');
  const externalAws = r.optional('AWS_ENDPOINT_URL');
  // admin API: a real identity provider when AUTH_URL is set, else a local one (dev-idp.ts)
  const adminEnabled = r.bool('ADMIN_API_ENABLED', true);
  const externalAuth = adminEnabled && r.optional('AUTH_URL') !== undefined ? loadAdminApiConfig(r) : null;
  const devAuthPort = r.optional('DEV_AUTH_PORT') === undefined ? undefined : r.int('DEV_AUTH_PORT', 0, 0, 65535);
  const devAudience = r.optional('AUTH_AUDIENCE');
  r.done();

  const logger = createLogger({ level: logLevel, name: 'dev' });
  installTemporalRuntime(logger);
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
      const [pgUrl, temporalAddress, awsEndpoint] = await Promise.all([
        externalDb ??
          startEmbeddedPostgres({ dataDir: path.join(dataDir, 'postgres'), persistent: true, port: await freePort() }).then((pg) => {
            cleanups.push(() => pg.stop());
            return pg.url;
          }),
        externalTemporal ??
          startTemporalDevServer({ dbFile: path.join(dataDir, 'temporal.sqlite'), namespace }).then((t) => {
            cleanups.push(() => t.stop());
            return t.address;
          }),
        externalAws ??
          startFauxqs({ port: await freePort(), logger: false, dataDir: path.join(dataDir, 'sqs') }).then((f) => {
            cleanups.push(() => f.stop());
            return f.address;
          }),
      ]);

      db = createDb({ url: pgUrl, poolMax: 20, logger });
      const liveDb = db;
      cleanups.push(() => liveDb.destroy());
      await migrateLatest(db);
      const repos = createRepositories(db);
      const manifests = await watchManifests({ dir: configDir, repos, logger });
      cleanups.push(() => manifests.close());

      const aws = createAwsClients({ region: 'us-east-1', endpoint: awsEndpoint });
      cleanups.push(async () => {
        aws.sns.destroy();
        aws.sqs.destroy();
      });
      const topology = await ensureTopology(aws);

      const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
      cleanups.push(() => nativeConnection.close());
      const connection = await Connection.connect({ address: temporalAddress });
      cleanups.push(() => connection.close());
      const client = new Client({ connection, namespace });

      let adminApi: AdminApiConfig | null = externalAuth;
      let tokenRecipe: (apiUrl: string) => string[] = () => [];
      if (adminEnabled && !adminApi) {
        const idp = await startDevIdentityProvider({
          dataDir,
          ...(devAuthPort === undefined ? {} : { port: devAuthPort }),
          ...(devAudience ? { audience: devAudience } : {}),
        });
        cleanups.push(() => idp.close());
        adminApi = idp.config;
        tokenRecipe = idp.recipe;
      }

      const parts: RunningProcess[] = [];
      parts.push(
        await startWorkerProcess({
          connection: nativeConnection,
          namespace,
          taskQueue: TASK_QUEUE,
          repos,
          metrics,
          logger,
          backoff,
          outboundDenyCidrs: [],
          outboundAllowCidrs: [],
          maxConcurrentActivities: 100,
        }),
      );
      parts.push(
        startConsumerProcess({
          sqs: aws.sqs,
          queueUrl: topology.queueUrl,
          client,
          taskQueue: TASK_QUEUE,
          repos,
          redrive: createRedriveQueries(liveDb),
          metrics,
          logger,
          concurrency: 10,
        }),
      );
      const ingest = await startIngestProcess({
        db: liveDb,
        repos,
        publisher: createBatchingSnsPublisher({ sns: aws.sns, topicArn: topology.topicArn }),
        metrics,
        logger,
        port,
        host: '127.0.0.1',
        bodyLimitBytes: 1024 * 1024,
        credentialCacheSize: 1000,
        sweepIntervalMs: 10_000,
        sweepMinAgeMs: 10_000,
        ...(adminApi
          ? { register: adminApiRegistration({ db, repos, temporal: { client, taskQueue: TASK_QUEUE }, auth: adminApi, logger }) }
          : {}),
      });
      parts.push(ingest);

      const m = manifests.initial;
      process.stdout.write(
        [
          '',
          'webhook-fanout dev mode is running',
          `  inbound webhooks  POST ${ingest.url}/api/webhooks/{source}   (HTTP Basic per source)`,
          `  metrics & probes  http://localhost:${managementPort}/metrics  /healthz  /readyz`,
          `  manifests         ${configDir}  (${m.endpoints} endpoint(s), ${m.credentials} credential(s)${m.errors.length ? `, ${m.errors.length} rejected` : ''}; edits reload live)`,
          `  postgres          ${externalDb ? 'DATABASE_URL' : pgUrl.replace(/:[^:@/]+@/, ':***@')}`,
          `  temporal          ${temporalAddress} (namespace ${namespace}, task queue WEBHOOKS)`,
          `  sns/sqs           ${awsEndpoint}`,
          ...(adminApi === null
            ? ['  admin API         disabled (ADMIN_API_ENABLED=false)']
            : externalAuth
              ? [`  admin API         ${ingest.url}/api/events  (JWT from ${externalAuth.authUrl}, audience ${externalAuth.audience})`]
              : tokenRecipe(ingest.url)),
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
    },
  });
}
