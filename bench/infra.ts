import { startFauxqs } from 'fauxqs';
import { createDb, type Db } from '../src/db/knex.js';
import { migrateLatest } from '../src/db/migrate.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { startTemporalDevServer } from '../src/dev/temporal-dev-server.js';
import { createAwsClients, type AwsClients, type AwsClientsOptions } from '../src/transport/aws-clients.js';
import { ensureTopology, type Topology } from '../src/transport/topology.js';
import type { TemporalKind } from './config.js';
import { startTemporalOnPostgres } from './temporal-postgres.js';
import { BASELINE_TABLE_SQL } from './units/baseline.js';

/** Topology of the ingest benchmark: nobody consumes it, so it never feeds the e2e runs. */
export const INGEST_TOPOLOGY = {
  topicName: 'bench-ingest-events',
  queueName: 'bench-ingest-events',
  dlqName: 'bench-ingest-dlq',
} as const;

export interface Infra {
  pgUrl: string;
  db: Db;
  awsEndpoint: string;
  aws: AwsClients;
  /** what `aws` was made with (the publisher takes its timeouts from it) */
  awsOptions: AwsClientsOptions;
  ingestTopology: Topology;
  fanoutTopology: Topology;
  temporalAddress: string;
  /** which Temporal runs: the CLI's dev server in memory, or temporal-server on Postgres */
  temporalKind: TemporalKind;
  /** the Temporal server's process */
  temporalPid: number | undefined;
  /** the postmaster of Temporal's own Postgres (kind postgres): its backends are Temporal's share */
  temporalPostgresPid: number | undefined;
  /** drops every queued message (the ingest queue fills up; nothing reads it) */
  purgeQueues(): void;
  stop(): Promise<void>;
}

/** The Temporal of the run, as startInfra needs it: where, its process, its Postgres, how to stop it. */
async function startTemporal(
  kind: TemporalKind,
  durable: boolean,
): Promise<{ address: string; pid: number | undefined; postgresPid: number | undefined; stop(): Promise<void> }> {
  if (kind === 'postgres') return startTemporalOnPostgres({ durable });
  const dev = await startTemporalDevServer();
  return { address: dev.address, pid: dev.pid, postgresPid: undefined, stop: () => dev.stop() };
}

/**
 * The real dependencies, local: one embedded Postgres (fsync off, as in dev mode), fauxqs in
 * this process, and Temporal: the dev server with its state IN MEMORY (no SQLite file), or
 * (kind postgres) temporal-server on a second embedded Postgres (bench/temporal-postgres.ts).
 */
export async function startInfra(temporalKind: TemporalKind = 'dev', opts: { temporalDurable?: boolean } = {}): Promise<Infra> {
  const stops: Array<() => Promise<void>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.reverse()) await s().catch((err: unknown) => console.error('cleanup step failed:', err));
  };
  try {
    const [pgR, temporalR, fauxqsR] = await Promise.allSettled([
      startEmbeddedPostgres(),
      startTemporal(temporalKind, opts.temporalDurable ?? false),
      startFauxqs({ port: 0, logger: false }),
    ]);
    // whatever did start is stopped again if something else did not
    if (pgR.status === 'fulfilled') stops.push(() => pgR.value.stop());
    if (temporalR.status === 'fulfilled') stops.push(() => temporalR.value.stop());
    if (fauxqsR.status === 'fulfilled') stops.push(() => fauxqsR.value.stop());
    for (const r of [pgR, temporalR, fauxqsR]) if (r.status === 'rejected') throw r.reason;
    const pg = settled(pgR);
    const temporal = settled(temporalR);
    const fauxqs = settled(fauxqsR);
    const awsEndpoint = `http://127.0.0.1:${fauxqs.port}`;
    const db = createDb({ url: pg.url, poolMax: 4 });
    stops.push(() => db.destroy());
    await migrateLatest(db);
    await db.raw(BASELINE_TABLE_SQL);
    const awsOptions = { region: 'us-east-1', endpoint: awsEndpoint };
    const aws = createAwsClients(awsOptions);
    stops.push(async () => {
      aws.sns.destroy();
      aws.sqs.destroy();
    });
    const ingestTopology = await ensureTopology(aws, INGEST_TOPOLOGY);
    const fanoutTopology = await ensureTopology(aws);
    return {
      pgUrl: pg.url,
      db,
      awsEndpoint,
      aws,
      awsOptions,
      ingestTopology,
      fanoutTopology,
      temporalAddress: temporal.address,
      temporalKind,
      temporalPid: temporal.pid,
      temporalPostgresPid: temporal.postgresPid,
      purgeQueues: () => fauxqs.reset(),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function settled<T>(r: PromiseSettledResult<T>): T {
  if (r.status === 'rejected') throw r.reason;
  return r.value;
}
