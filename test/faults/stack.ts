import { randomUUID } from 'node:crypto';
import { createDb, type Db } from '../../src/db/knex.js';
import { migrateLatest } from '../../src/db/migrate.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import { startEmbeddedPostgres, type LocalPostgres } from '../../src/dev/embedded-postgres.js';
import { freePort } from '../../src/dev/ports.js';
import { startTemporalDevServer, type TemporalDevServer } from '../../src/dev/temporal-dev-server.js';
import { createAwsClients, type AwsClients } from '../../src/transport/aws-clients.js';
import { ensureTopology, type Topology } from '../../src/transport/topology.js';
import { basic } from '../support/http.js';
import { addCredential } from '../support/ingest-harness.js';
import { sleep } from '../support/wait.js';
import { startFauxqsProcess, type Backend } from '../transport/backends.js';
import { commonEnv, sigkill, startAll, type Proc } from './processes.js';

/**
 * What every fault file runs against: a real Postgres (its data kept across a stop), a Temporal dev
 * server (its state in a file, so it comes back on its port with its workflows), fauxqs's SNS/SQS
 * emulator as a process of its own (on a fixed port, so a restart comes back where the clients
 * look), the schema migrated from the source tree, a source `shop` (Basic `u:p4ss`), the topology,
 * and the compiled build's processes, each file on its own database and task queue.
 */
export interface FaultStack {
  db: Db;
  repos: Repositories;
  aws: AwsClients;
  topology: Topology;
  /** where ingest listens once launched: http://127.0.0.1:PORT */
  ingestUrl: string;
  temporalAddress: string;
  taskQueue: string;
  procs: Record<string, Proc>;
  /** the environment of each kind of process; `more` is added last */
  ingestEnv(more?: Record<string, string>): Record<string, string>;
  consumerEnv(more?: Record<string, string>): Record<string, string>;
  workerEnv(more?: Record<string, string>): Record<string, string>;
  /** launches each [name, command, env] into `procs` and waits until every one is ready */
  launch(defs: Array<[string, string, Record<string, string>]>): Promise<void>;
  stopPostgres(): Promise<void>;
  /** Postgres again, on its port and data */
  startPostgres(): Promise<void>;
  stopTemporal(): Promise<void>;
  /** Temporal again, on its port and state */
  startTemporal(): Promise<void>;
  /**
   * Kills the emulator, which keeps its state in memory: it comes back empty, its queued messages
   * lost, and the topology is re-created as `setup-transport` would. Resolves when it serves again.
   */
  restartEmulator(downMs: number): Promise<void>;
  /** kills the processes, stops the servers (whatever started) */
  stop(): Promise<void>;
}

/** `name` keeps one file's database, task queue and files apart from another's. */
export async function startFaultStack(
  name: string,
  opts: {
    /** started beside Temporal and the emulator (once Postgres has its port) and stopped with them */
    alongside?: { start(): Promise<unknown>; stop(): Promise<void> };
  } = {},
): Promise<FaultStack> {
  const suffix = `${name}-${randomUUID().slice(0, 8)}`;
  const pgDir = `/tmp/webhook-fanout-faults-pg-${suffix}`;
  const temporalDb = `/tmp/webhook-fanout-faults-temporal-${suffix}.db`;
  const [pgPort, temporalPort, sqsPort, ingestPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  let pg: LocalPostgres | undefined;
  let temporal: TemporalDevServer | undefined;
  let sqs: Backend | undefined;
  let alongsideStarted = false;
  let aws: AwsClients | undefined;
  let db: Db | undefined;
  const procs: Record<string, Proc> = {};
  const stop = async () => {
    for (const p of Object.values(procs)) await sigkill(p).catch(() => {});
    aws?.sns.destroy();
    aws?.sqs.destroy();
    await db?.destroy();
    await Promise.allSettled([temporal?.stop(), pg?.stop(), sqs?.stop(), alongsideStarted ? opts.alongside?.stop() : undefined]);
  };
  try {
    // Postgres first: Temporal's dev server binds internal ports of its own choosing, and once took
    // pgPort between freePort() and Postgres's bind ("Address already in use")
    pg = await startEmbeddedPostgres({ port: pgPort, dataDir: pgDir, persistent: true });
    const [t, q, a] = await Promise.allSettled([
      startTemporalDevServer({ port: temporalPort, dbFile: temporalDb }),
      startFauxqsProcess({ port: sqsPort }),
      opts.alongside?.start(),
    ]);
    // kept before any failure is thrown, so that stop() stops what did start
    if (t.status === 'fulfilled') temporal = t.value;
    if (q.status === 'fulfilled') sqs = q.value;
    alongsideStarted = a.status === 'fulfilled';
    for (const started of [t, q, a]) if (started.status === 'rejected') throw started.reason;
    const database = `faults_${name.replace(/\W/g, '_')}`;
    const admin = createDb({ url: pg.url });
    await admin.raw(`create database ${database}`);
    await admin.destroy();
    const dbUrl = pg.url.replace(/\/postgres$/, `/${database}`);
    db = createDb({ url: dbUrl, poolMax: 4 });
    // from the source tree: where the build looks for migrations/ is another change's business
    await migrateLatest(db);
    const repos = createRepositories(db);
    await addCredential(repos, 'shop', 'u', 'p4ss');
    aws = createAwsClients({ region: 'us-east-1', endpoint: sqs!.endpoint });
    const topologyOptions = { topicName: `t-${suffix}`, queueName: `q-${suffix}`, dlqName: `dlq-${suffix}`, visibilityTimeoutSeconds: 5 };
    const topology = await ensureTopology(aws, topologyOptions);
    const temporalAddress = `127.0.0.1:${temporalPort}`;
    const taskQueue = `faults-${suffix}`;
    const common = commonEnv({ dbUrl, temporalAddress, taskQueue, awsEndpoint: sqs!.endpoint });
    const clients = aws;
    return {
      db,
      repos,
      aws,
      topology,
      ingestUrl: `http://127.0.0.1:${ingestPort}`,
      temporalAddress,
      taskQueue,
      procs,
      ingestEnv: (more = {}) => ({
        ...common,
        PORT: String(ingestPort),
        HOST: '127.0.0.1',
        TOPIC_ARN: topology.topicArn,
        ADMIN_API_ENABLED: 'false',
        ...more,
      }),
      consumerEnv: (more = {}) => ({ ...common, QUEUE_URL: topology.queueUrl, QUEUE_VISIBILITY_TIMEOUT_SECONDS: '5', ...more }),
      workerEnv: (more = {}) => ({
        ...common,
        DELIVERY_BACKOFF_INITIAL_MS: '200',
        DELIVERY_BACKOFF_MAX_MS: '2000',
        OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
        ...more,
      }),
      launch: (defs) => startAll(procs, defs),
      stopPostgres: async () => {
        await pg?.stop();
        pg = undefined;
      },
      startPostgres: async () => {
        pg = await startEmbeddedPostgres({ port: pgPort, dataDir: pgDir, persistent: true });
      },
      stopTemporal: async () => {
        await temporal?.stop();
        temporal = undefined;
      },
      startTemporal: async () => {
        temporal = await startTemporalDevServer({ port: temporalPort, dbFile: temporalDb });
      },
      restartEmulator: async (downMs) => {
        await sqs?.stop();
        sqs = undefined;
        await sleep(downMs);
        sqs = await startFauxqsProcess({ port: sqsPort });
        await ensureTopology(clients, topologyOptions);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * One event sent as a sender does: 5xx and connection errors (ingest killed, Postgres down) retried
 * with the same external id until ingest answers 200; any other answer fails the test. Returns the
 * event's id.
 */
export async function sendUntilAccepted(ingestUrl: string, body: { id: string; type: string; [field: string]: unknown }): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    let status: number | undefined;
    try {
      const res = await fetch(`${ingestUrl}/api/webhooks/shop`, {
        method: 'POST',
        headers: { authorization: basic('u', 'p4ss'), 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
      if (res.status === 200) return ((await res.json()) as { eventId: string }).eventId;
      await res.arrayBuffer();
      status = res.status;
    } catch {
      // ingest unreachable or slow: the same event again
    }
    if (status !== undefined && status < 500) throw new Error(`sender got ${status} for ${body.id}`);
    await sleep(Math.min(200 * attempt, 2_000));
  }
}

/** How many of `ids` have left RECEIVED (completed or failed), waiting for all until `since + withinMs`. */
export async function settledWithin(db: Db, ids: string[], since: number, withinMs: number): Promise<number> {
  let settled = 0;
  while (Date.now() - since < withinMs) {
    const row = await db('webhook_event').whereIn('id', ids).whereNot('status', 'RECEIVED').count<{ n: string }[]>('* as n').first();
    settled = Number(row?.n ?? 0);
    if (settled === ids.length) break;
    await sleep(1_000);
  }
  return settled;
}
