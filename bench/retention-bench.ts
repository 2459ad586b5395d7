/**
 * Retention under load: a backlog of old events (at least a million attempts) is
 * deleted by the retention job inside ingest while ingest takes webhooks at load; ingest's
 * throughput and p99 during the purge are printed beside the same load without it.
 *
 *   npm run bench:retention     (BENCH_RETENTION_EVENTS, _ATTEMPTS_PER_EVENT, _ROUNDS, _DURATION_S,
 *                                BENCH_CONNECTIONS, RETENTION_BATCH_SIZE, RETENTION_BATCH_PAUSE_MS)
 *
 * Real components: Postgres (embedded, with fsync, synchronous_commit and full_page_writes ON as
 * in production, unlike dev mode), fauxqs for SNS, the ingest process as production builds it
 * (buildIngestProcess, its retention job included), autocannon in a process of its own. Rounds
 * alternate (load alone, load + purge, load + purge, load alone, ...) so that noise on the machine
 * hits both; figures are medians over rounds.
 */
import { randomBytes } from 'node:crypto';
import bcrypt from 'bcrypt';
import { startFauxqs } from 'fauxqs';
import { createDb } from '../src/db/knex.js';
import { migrateLatest } from '../src/db/migrate.js';
import { createRepositories } from '../src/db/repositories.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createMetrics } from '../src/metrics/metrics.js';
import { createLogger } from '../src/observability/logger.js';
import { buildIngestProcess } from '../src/processes/ingest-process.js';
import { DEFAULT_RETENTION_SCHEDULE } from '../src/config/settings.js';
import { createRetentionJob, RETENTION_OFF, type RetentionRun } from '../src/retention/retention-job.js';
import { createAwsClients } from '../src/transport/aws-clients.js';
import { createEventPublisher } from '../src/transport/publisher.js';
import { ensureTopology } from '../src/transport/topology.js';
import { forkUnit } from './child-handle.js';
import { median, round } from './stats.js';

const env = process.env;
const int = (name: string, fallback: number): number => (env[name] === undefined ? fallback : Number(env[name]));
const EVENTS = int('BENCH_RETENTION_EVENTS', 250_000);
const ATTEMPTS_PER_EVENT = int('BENCH_RETENTION_ATTEMPTS_PER_EVENT', 4);
const ROUNDS = int('BENCH_RETENTION_ROUNDS', 4);
const DURATION_S = int('BENCH_RETENTION_DURATION_S', 20);
const CONNECTIONS = int('BENCH_CONNECTIONS', 50);
const BATCH_SIZE = int('RETENTION_BATCH_SIZE', DEFAULT_RETENTION_SCHEDULE.batchSize);
const BATCH_PAUSE_MS = int('RETENTION_BATCH_PAUSE_MS', DEFAULT_RETENTION_SCHEDULE.batchPauseMs);
const SOURCE = 'bench';
const AUTHORIZATION = `Basic ${Buffer.from('bench:bench-password').toString('base64')}`;

const log = (line: string): void => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

async function main(): Promise<void> {
  log(
    `retention bench: backlog of ${EVENTS} events x ${ATTEMPTS_PER_EVENT} attempts, ${ROUNDS} rounds of ${DURATION_S} s, ${CONNECTIONS} connections`,
  );
  const pg = await startEmbeddedPostgres({ settings: { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on' } });
  const fauxqs = await startFauxqs({ port: 0, logger: false });
  const db = createDb({ url: pg.url, poolMax: 20 });
  const aws = createAwsClients({ region: 'us-east-1', endpoint: `http://127.0.0.1:${fauxqs.port}` });
  let stopIngest: (() => Promise<void>) | undefined;
  const load = await forkUnit('load', { databaseUrl: pg.url, temporalAddress: '', dbPoolMax: 1, maxConcurrentActivities: 1 });
  try {
    await migrateLatest(db);
    const topology = await ensureTopology(aws, {
      topicName: 'bench-retention',
      queueName: 'bench-retention',
      dlqName: 'bench-retention-dlq',
    });
    const repos = createRepositories(db);
    await repos.credentials.upsertByResourceUid('bench:retention', {
      source: SOURCE,
      username: 'bench',
      passwordHash: await bcrypt.hash('bench-password', 10),
      eventIdRule: null,
      eventTypeRule: null,
      resourceName: 'bench/retention',
    });

    // the backlog: events of 40 to 100 days ago, final, each with one delivery and its attempts
    const seedStarted = Date.now();
    const endpoint = (await db('webhook_endpoint')
      .insert({ name: 'bench/old', source: 'old', url: 'http://127.0.0.1:9/' })
      .returning('id')) as Array<{ id: string }>;
    // seeded on a connection without the services' statement timeout (a chunk of a loaded machine outlasts 10 s)
    const seedDb = createDb({ url: pg.url, poolMax: 1, statementTimeoutMs: 0 });
    const CHUNK = 10_000;
    for (let from = 1; from <= EVENTS; from += CHUNK) {
      const to = Math.min(EVENTS, from + CHUNK - 1);
      await seedDb.raw(
        `WITH ev AS (
           INSERT INTO webhook_event (source, external_event_id, payload, content_type, headers, status, published_at, received_at, completed_at, updated_at, workflow_id)
           SELECT 'old', 'old-' || g, convert_to(repeat('x', 600), 'UTF8'), 'application/json', '{"x-sender":"acme"}'::jsonb, 'FAILED',
                  t, t, t, t, 'wf-' || g
             FROM generate_series(?::int, ?::int) g, LATERAL (SELECT now() - interval '40 days' - make_interval(secs => g * 20) AS t) x
           RETURNING id, received_at),
         d AS (
           INSERT INTO webhook_delivery (event_id, endpoint_id, status, attempts, last_response_status, created_at, updated_at, completed_at)
           SELECT id, ?, 'FAILED', ?, 500, received_at, received_at, received_at FROM ev
           RETURNING id, created_at)
         INSERT INTO webhook_delivery_attempt (delivery_id, attempt, outcome, started_at, duration_ms, response_status, response_body)
         SELECT d.id, a, CASE WHEN a = ? THEN 'FAILED' ELSE 'RETRYING' END, d.created_at, 35, 500, 'upstream unavailable'
           FROM d, generate_series(1, ?) a`,
        [from, to, endpoint[0]!.id, ATTEMPTS_PER_EVENT, ATTEMPTS_PER_EVENT, ATTEMPTS_PER_EVENT],
      );
    }
    await seedDb.raw('VACUUM ANALYZE');
    await seedDb.destroy();
    const sizes = async () =>
      (
        await db.raw<{ rows: Array<{ events: number; deliveries: number; attempts: number; mb: number }> }>(
          `SELECT (SELECT count(*) FROM webhook_event) AS events, (SELECT count(*) FROM webhook_delivery) AS deliveries,
                  (SELECT count(*) FROM webhook_delivery_attempt) AS attempts, (pg_database_size(current_database()) / 1048576)::int AS mb`,
        )
      ).rows[0]!;
    const seeded = await sizes();
    log(
      `seeded ${seeded.events} events, ${seeded.deliveries} deliveries, ${seeded.attempts} attempts (${seeded.mb} MB) in ${round((Date.now() - seedStarted) / 1000)} s`,
    );

    const logger = createLogger({ level: 'warn', name: 'bench-ingest' });
    const ingest = await buildIngestProcess({
      settings: {
        port: 0,
        host: '127.0.0.1',
        bodyLimitBytes: 1024 * 1024,
        credentialCacheSize: 1000,
        sweepIntervalMs: 3_600_000,
        sweepMinAgeMs: 3_600_000,
        retention: RETENTION_OFF,
      },
      db,
      repos,
      publisher: createEventPublisher({
        sns: aws.sns,
        aws: { region: 'us-east-1', endpoint: `http://127.0.0.1:${fauxqs.port}` },
        topicArn: topology.topicArn,
      }),
      metrics: createMetrics(),
      logger,
    });
    const started = await ingest.start();
    stopIngest = () => started.stop();
    // the purge runs in this process, as ingest's own job does in production
    const url = `${started.url.replace('localhost', '127.0.0.1')}/api/webhooks/${SOURCE}`;
    const prefix = randomBytes(4).toString('hex');
    let n = 0;
    const drive = () =>
      load.load({
        url,
        connections: CONNECTIONS,
        durationS: DURATION_S,
        authorization: AUTHORIZATION,
        ids: 'unique',
        idPrefix: `${prefix}-${n++}`,
      });

    const prime = await fetch(url, {
      method: 'POST',
      headers: { authorization: AUTHORIZATION, 'content-type': 'application/json' },
      body: '{"id":"prime"}',
    });
    if (prime.status !== 200) throw new Error(`priming answered ${prime.status}`);
    log('warm-up (5 s)');
    await load.load({
      url,
      connections: CONNECTIONS,
      durationS: 5,
      authorization: AUTHORIZATION,
      ids: 'unique',
      idPrefix: `${prefix}-warm`,
    });

    const results = {
      alone: [] as Array<{ rps: number; p99: number; p50: number; failed: number }>,
      purge: [] as Array<{ rps: number; p99: number; p50: number; failed: number; rowsPerS: number; run: RetentionRun }>,
    };
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? (['alone', 'purge'] as const) : (['purge', 'alone'] as const);
      for (const which of order) {
        if (which === 'alone') {
          const res = await drive();
          results.alone.push({ rps: res.rps, p99: res.p99Ms, p50: res.p50Ms, failed: res.non2xx + res.errors + res.timeouts });
          log(
            `round ${r + 1} load alone:     ${res.rps.toFixed(0)} req/s  p50 ${res.p50Ms} ms  p99 ${res.p99Ms} ms  failed ${res.non2xx + res.errors + res.timeouts}`,
          );
        } else {
          const job = createRetentionJob({
            db,
            metrics: createMetrics({ defaultMetrics: false }),
            logger,
            settings: { ...RETENTION_OFF, maxAgeSeconds: 30 * 86_400, batchSize: BATCH_SIZE, batchPauseMs: BATCH_PAUSE_MS },
          });
          const t0 = Date.now();
          const purge = job.runOnce();
          const res = await drive();
          await job.stop();
          const run = await purge;
          const rows = run.deleted.events + run.deleted.deliveries + run.deleted.attempts;
          const rowsPerS = rows / ((Date.now() - t0) / 1000);
          results.purge.push({
            rps: res.rps,
            p99: res.p99Ms,
            p50: res.p50Ms,
            failed: res.non2xx + res.errors + res.timeouts,
            rowsPerS,
            run,
          });
          log(
            `round ${r + 1} load + purge:   ${res.rps.toFixed(0)} req/s  p50 ${res.p50Ms} ms  p99 ${res.p99Ms} ms  failed ${res.non2xx + res.errors + res.timeouts}  ` +
              `deleted ${run.deleted.events} events ${run.deleted.deliveries} deliveries ${run.deleted.attempts} attempts (${rowsPerS.toFixed(0)} rows/s, ${run.batches} batches)`,
          );
        }
        fauxqs.reset();
      }
    }
    // what is left of the backlog, deleted without load: the purge's own pace
    const rest = createRetentionJob({
      db,
      metrics: createMetrics({ defaultMetrics: false }),
      logger,
      settings: { ...RETENTION_OFF, maxAgeSeconds: 30 * 86_400, batchSize: BATCH_SIZE, batchPauseMs: BATCH_PAUSE_MS },
    });
    const restRun = await rest.runOnce();
    const restRows = restRun.deleted.events + restRun.deleted.deliveries + restRun.deleted.attempts;
    log(
      `rest of the backlog without load: ${restRun.deleted.attempts} attempts in ${round(restRun.durationMs / 1000)} s (${(restRows / (restRun.durationMs / 1000)).toFixed(0)} rows/s)`,
    );
    const left = await sizes();

    const alone = {
      rps: median(results.alone.map((x) => x.rps)),
      p50: median(results.alone.map((x) => x.p50)),
      p99: median(results.alone.map((x) => x.p99)),
    };
    const during = {
      rps: median(results.purge.map((x) => x.rps)),
      p50: median(results.purge.map((x) => x.p50)),
      p99: median(results.purge.map((x) => x.p99)),
    };
    const deletedAttempts = results.purge.reduce((a, x) => a + x.run.deleted.attempts, 0) + restRun.deleted.attempts;
    console.log('\n## Retention under load (medians over rounds)\n');
    console.log('| | req/s | p50 ms | p99 ms | failed |');
    console.log('|---|---|---|---|---|');
    console.log(
      `| ingest alone | ${alone.rps.toFixed(0)} | ${alone.p50} | ${alone.p99} | ${results.alone.reduce((a, x) => a + x.failed, 0)} |`,
    );
    console.log(
      `| ingest during the purge | ${during.rps.toFixed(0)} | ${during.p50} | ${during.p99} | ${results.purge.reduce((a, x) => a + x.failed, 0)} |`,
    );
    console.log(
      `| ratio (purge / alone) | ${round(during.rps / alone.rps, 2)} | ${round(during.p50 / alone.p50, 2)} | ${round(during.p99 / alone.p99, 2)} | |`,
    );
    console.log(
      `\nbacklog ${seeded.events} events / ${seeded.deliveries} deliveries / ${seeded.attempts} attempts (${seeded.mb} MB); ` +
        `deleted ${deletedAttempts} attempts in all; purge pace under load ${median(results.purge.map((x) => x.rowsPerS)).toFixed(0)} rows/s (median), ` +
        `without load ${(restRows / Math.max(restRun.durationMs / 1000, 0.001)).toFixed(0)} rows/s; batch ${BATCH_SIZE} events, pause ${BATCH_PAUSE_MS} ms; ` +
        `left ${left.events} events (those ingest took meanwhile), ${left.attempts} attempts, database ${left.mb} MB (space is reused, not returned, until VACUUM FULL)`,
    );
    if (left.attempts !== 0) throw new Error(`attempts of old events left: ${left.attempts}`);
  } finally {
    await stopIngest?.().catch(() => undefined);
    await load.stop().catch(() => undefined);
    await db.destroy();
    aws.sns.destroy();
    aws.sqs.destroy();
    await fauxqs.stop();
    await pg.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
