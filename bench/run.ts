// `npm run bench`: the compiled build's inbound throughput beside a bare fastify+INSERT baseline,
// end-to-end deliveries through Temporal beside a bare workflow of the same shape, and the latency
// at a low steady rate. See docs/benchmarks.md.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { Client, Connection } from '@temporalio/client';
import { freePort } from '../src/dev/ports.js';
import { createSqsClient } from '../src/transport/sqs-client.js';
import { ensureTopology } from '../src/transport/topology.js';
import { forkUnit, LOG_DIR, type ChildHandle } from './child-handle.js';
import { CLI, lifetimePeakMbOf, spawnCli, workflowStarts, type CliCommand, type CliHandle } from './cli-unit.js';
import { componentOf, type KnownProcesses } from './components.js';
import { loadBenchConfig, type BenchConfig } from './config.js';
import { cpuSnapshot, type CpuSnapshot } from './cpu.js';
import { measureContentCost } from './content-cost.js';
import { CONTENT_VARIANTS, measureDbPath } from './db-path-rounds.js';
import { measureDestinationSends, sendTargets, type DestinationSendResult } from './destination-send.js';
import { startKafka } from '../test/support/kafka.js';
import { runE2eBench, type BenchDestinations, type E2eBenchDeps, type E2eFigures, type E2ePath } from './e2e-bench.js';
import { startInfra, type Infra } from './infra.js';
import { seedFreshFloodCredentials } from './fresh-flood.js';
import { AUTHORIZATION, BENCH_SOURCE, runIngestBench, seedCredential } from './ingest-bench.js';
import { runLatencyBench, type LatencyFigures } from './latency-bench.js';
import type { UnitConfig, UnitRole } from './protocol.js';
import { RECEIVER_GROUP, startReceiverProcess } from './receiver.js';
import { runScaleOut, type ScaleOutFigures, type ScaleOutSetup } from './scale-out.js';
import { postgresPssMb } from './temporal-postgres.js';
import { runWrongPasswordsBench, type WrongPasswordsFigures } from './wrong-passwords-bench.js';
import {
  renderTable,
  summary,
  type BenchResults,
  type PeakRss,
  type ServiceRss,
  type ShapeFigures,
  type WorkflowStartFigures,
} from './report.js';

/** The SQS destination's fauxqs, a process of its own, and its CPU group (not ours). */
const FAUXQS_PROCESS = fileURLToPath(new URL('./fauxqs-process.ts', import.meta.url));
const DESTINATION_FAUXQS = 'destination-fauxqs';

/** The source the latency phase posts to (its own credential and endpoint). */
const LATENCY_SOURCE = 'bench-latency';

/** How the e2e runs' workflows get started: a consumer process, or the worker reading the queue (eager starts). */
interface Shape {
  consumesQueue: boolean;
  queueUrl: string;
  /** TEMPORAL_TASK_QUEUE of its processes; absent: the default */
  taskQueue?: string;
  /** the CPU groups of its processes (a worker consuming the queue has no consumer) */
  roles: { worker: string; consumer: string };
}
const MAIN_ROLES = { worker: 'worker', consumer: 'consumer' } as const;
const OTHER_ROLES = { worker: 'other-worker', consumer: 'other-consumer' } as const;
/** The other shape's own topic, queue and task queue: each shape's starter sees only its own runs' events. */
const OTHER_SHAPE_TOPOLOGY = { topicName: 'bench-other-shape', queueName: 'bench-other-shape', dlqName: 'bench-other-shape-dlq' } as const;
const OTHER_SHAPE_TASK_QUEUE = 'webhook-fanout-bench-other-shape';
/** The CPU group of the processes of the shape not being measured (idle meanwhile). */
const IDLE_GROUP = 'idle: other shape';

const log = (line: string): void => {
  process.stderr.write(`[bench] ${line}\n`);
};

const cleanups: Array<() => Promise<void>> = [];
async function cleanup(): Promise<void> {
  while (cleanups.length > 0) {
    const step = cleanups.pop();
    await step?.().catch((err: unknown) => log(`cleanup step failed: ${String(err)}`));
  }
}

/** CPU by component: our processes by role (the Temporal server's too), then the dependencies (bench/components.ts). */
const known: KnownProcesses = { roles: new Map<number, string>(), temporalPostgresPid: undefined };
const roles = known.roles;
const snapshot = (): CpuSnapshot => cpuSnapshot(componentOf(known));

/** The environment every compiled process of the service gets: where its dependencies are. */
function serviceEnv(infra: Infra, cfg: BenchConfig): Record<string, string> {
  return {
    DATABASE_URL: infra.pgUrl,
    DB_POOL_MAX: String(cfg.dbPoolMax),
    LOG_LEVEL: cfg.logLevel,
    TEMPORAL_ADDRESS: infra.temporalAddress,
    AWS_ENDPOINT_URL: infra.awsEndpoint,
  };
}

/**
 * The destination rounds' topic and queue (BENCH_E2E_DESTINATIONS): Kafka 4 in KRaft mode as the
 * destination tests start it (test/support/kafka.ts, its jars from scripts/tools/brokers.sh), its
 * JVM's CPU apart from ours (`other:java`); an SQS queue on the bench's fauxqs.
 */
async function benchDestinations(infra: Infra): Promise<BenchDestinations> {
  log('destinations: starting Kafka and a fauxqs of their own, creating the topic and the SQS queue');
  // Kafka's own flush policy, as a production cluster runs (replicas, not a flush per message, keep
  // what acks=all acknowledged): the tests' flush of each message makes every acknowledgement 5-8 ms
  const kafka = await startKafka({ maxMessageBytes: 1024 * 1024, flushEachMessage: false });
  cleanups.push(() => kafka.stop());
  await kafka.createTopic('bench-destination');
  // the SQS destination's queue on a fauxqs in its own process (bench/fauxqs-process.ts), its CPU
  // apart as `destination-fauxqs`: not ours, and its answers no longer wait on this process's loop
  const fauxqs = await startFauxqsProcess();
  cleanups.push(() => fauxqs.stop());
  roles.set(fauxqs.pid, DESTINATION_FAUXQS);
  const sqs = createSqsClient({ ...infra.awsOptions, endpoint: fauxqs.endpoint });
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'bench-destination' })).finally(() => sqs.destroy());
  if (!QueueUrl) throw new Error('fauxqs returned no queue URL for bench-destination');
  return {
    kafka: {
      to: { type: 'Kafka', bootstrapServers: [kafka.bootstrap], topic: 'bench-destination', tls: null, sasl: null },
      address: `kafka://${kafka.bootstrap}/bench-destination`,
    },
    sqs: {
      to: { type: 'SQS', queueUrl: QueueUrl, region: infra.awsOptions.region, endpointUrl: fauxqs.endpoint, roleArn: null },
      address: QueueUrl,
    },
  };
}

/** fauxqs in a process of its own (bench/fauxqs-process.ts): where it listens, its pid, how to stop it. */
async function startFauxqsProcess(): Promise<{ endpoint: string; pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', FAUXQS_PROCESS], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) resolve((JSON.parse(line) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`bench/fauxqs-process.ts exited with ${String(code)} before listening`)));
  });
  if (child.pid === undefined) throw new Error('could not start bench/fauxqs-process.ts');
  return {
    endpoint: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Each kind of e2e run's measured windows (monotonic microseconds, the clock of V8's profiles), to
 * .data/bench/e2e-windows.json: with BENCH_PROFILE, `bench/profile-summary.ts <profile> --runs sqs`
 * keeps only the samples taken while the SQS rounds ran (docs/benchmarks.md).
 */
function writeE2eWindows(e2e: E2eFigures): void {
  const paths: Record<string, E2ePath | undefined> = {
    http: e2e.one.real,
    bare1: e2e.one.bare,
    real10: e2e.ten.real,
    bare10: e2e.ten.bare,
    floor: e2e.floor,
    destinationHttp: e2e.destinationHttp,
    kafka: e2e.kafka,
    sqs: e2e.sqs,
    filtered: e2e.filtered,
    transformed: e2e.transformed,
    ordered: e2e.ordered?.many,
    otherShape: e2e.otherShape,
  };
  const windows = Object.fromEntries(Object.entries(paths).flatMap(([k, p]) => (p ? [[k, p.runs.map((r) => r.windowUs)]] : [])));
  mkdirSync(LOG_DIR, { recursive: true });
  writeFileSync(path.join(LOG_DIR, 'e2e-windows.json'), JSON.stringify(windows) + '\n');
}

async function main(): Promise<void> {
  const cfg = loadBenchConfig();
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm run bench does)`);
  log(
    cfg.temporalKind === 'postgres'
      ? 'starting embedded Postgres, fauxqs, and temporal-server on a second embedded Postgres'
      : 'starting embedded Postgres, fauxqs and the Temporal dev server (in memory)',
  );
  // registered before it is up: a Ctrl-C while the databases and Temporal start stops them once started
  const starting = startInfra(cfg.temporalKind, { temporalDurable: cfg.temporalDurable });
  cleanups.push(async () => (await starting.catch(() => undefined))?.stop());
  const infra = await starting;
  // what a filter and a transform add to the worker's database path, the one part of the pipeline
  // they change (bench/db-path-rounds.ts), first, while this process is fresh: run after the
  // pipeline, its heap of ten minutes made every round dearer and the differences noisier
  const dbPathContent = cfg.e2eContent
    ? await measureDbPath({ events: 1000, endpoints: 1, concurrency: 10, rounds: 6, variants: CONTENT_VARIANTS })
    : undefined;
  if (infra.temporalPid !== undefined) roles.set(infra.temporalPid, 'temporal');
  known.temporalPostgresPid = infra.temporalPostgresPid;
  await seedCredential(infra);
  await seedCredential(infra, LATENCY_SOURCE);
  if (cfg.wrongPasswordsDurationS > 0 && cfg.freshFloodDurationS > 0) await seedFreshFloodCredentials(infra.db);

  const unitConfig: UnitConfig = {
    databaseUrl: infra.pgUrl,
    temporalAddress: infra.temporalAddress,
    dbPoolMax: cfg.dbPoolMax,
    maxConcurrentActivities: cfg.maxConcurrentActivities,
  };
  const fork = async (role: UnitRole): Promise<ChildHandle> => {
    const h = await forkUnit(role, unitConfig);
    roles.set(h.pid, role);
    cleanups.push(() => h.stop());
    return h;
  };
  const spawnService = async (command: CliCommand, role: string, env: Record<string, string>): Promise<CliHandle> => {
    const h = await spawnCli(command, role, { ...serviceEnv(infra, cfg), ...env }, { nodeFlags: cfg.nodeFlags });
    roles.set(h.pid, role);
    cleanups.push(() => h.stop());
    return h;
  };
  const ingestEnv = async (topicArn: string): Promise<{ port: number; env: Record<string, string> }> => {
    const port = await freePort();
    // the admin API is another process's concern in a deployment; the sweeper keeps its defaults
    return { port, env: { PORT: String(port), HOST: '127.0.0.1', TOPIC_ARN: topicArn, ADMIN_API_ENABLED: 'false', ...cfg.ingestEnv } };
  };

  // Phase 1: inbound. The load generator and each server have their own process and event loop.
  log('ingest: starting the load generator and baseline (tsx) and the compiled ingest');
  const ingestSetup = await ingestEnv(infra.ingestTopology.topicArn);
  const ingestStarts = [fork('load'), spawnService('ingest', 'ingest', ingestSetup.env), fork('baseline')] as const;
  // on a failed start the others still register their cleanup before the error stops the bench
  await Promise.allSettled(ingestStarts);
  const [load, ingest, baseline] = await Promise.all(ingestStarts);
  const ingestFigures = await runIngestBench({
    cfg,
    infra,
    load,
    ingest: { port: ingestSetup.port, resetPeak: ingest.resetPeak },
    baseline,
    snapshot,
    log,
  });
  const baselineStats = await baseline.stats();
  const ingestRss: ServiceRss = { sampled: ingest.sampledPeakMb(), lifetime: ingest.lifetimePeakMb(), heap: await ingest.heap() };
  await Promise.all([load.stop(), ingest.stop(), baseline.stop()]);
  // Nothing consumed the ingest topic, so these events never got a workflow: a later ingest's
  // sweeper (the latency phase's) would re-publish tens of thousands of them to the fanout topic.
  await infra.db('webhook_event').where({ source: BENCH_SOURCE }).delete();
  // Their dead rows (some 200 000, each with an entry in every index) are cleaned up now, not by
  // autovacuum during the e2e phase, whose Postgres CPU per delivery it would inflate.
  await infra.db.raw('VACUUM webhook_event');

  // Phase 1b: a valid sender alone, then under a flood of wrong passwords (the refusal limits at
  // their defaults; docs/sources.md, "What wrong passwords may cost").
  let wrongPasswords: WrongPasswordsFigures | undefined;
  if (cfg.wrongPasswordsDurationS > 0) {
    const setup = await ingestEnv(infra.ingestTopology.topicArn);
    const wpIngest = await spawnService('ingest', 'ingest-wrong-passwords', setup.env);
    wrongPasswords = await runWrongPasswordsBench({
      ingestUrl: `http://127.0.0.1:${setup.port}`,
      source: BENCH_SOURCE,
      authorization: AUTHORIZATION,
      rate: cfg.wrongPasswordsRate,
      durationS: cfg.wrongPasswordsDurationS,
      connections: cfg.wrongPasswordsConnections,
      log,
      // issue 45: an ingest of its own for each fresh case, nothing proven
      freshDurationS: cfg.freshFloodDurationS,
      startFreshIngest: async () => {
        const fresh = await ingestEnv(infra.ingestTopology.topicArn);
        const handle = await spawnService('ingest', 'ingest-fresh-flood', fresh.env);
        return { url: `http://127.0.0.1:${fresh.port}`, stop: () => handle.stop() };
      },
      // each case starts from an empty webhook_proven_address (the never-seen senders' cases need it)
      forgetProven: async () => void (await infra.db('webhook_proven_address').delete()),
    });
    await wpIngest.stop();
    await infra.db('webhook_event').where({ source: BENCH_SOURCE }).delete();
  }

  // Phase 2: end to end. The compiled worker and consumer, and the bare worker (tsx), each alone.
  log('e2e: starting the receiver, the compiled worker and consumer, and the bare worker (it bundles its workflow)');
  // a process of its own, as the other destinations' brokers are: its CPU is not ours, nor the bench's
  const receiver = await startReceiverProcess();
  cleanups.push(() => receiver.close());
  if (receiver.pid !== undefined) roles.set(receiver.pid, RECEIVER_GROUP);
  const connection = await Connection.connect({ address: infra.temporalAddress });
  cleanups.push(() => connection.close());
  const client = new Client({ connection, namespace: 'default' });
  // The main shape (the chart's default unless BENCH_WORKER_CONSUMES_QUEUE says otherwise) on the
  // fanout topology and the default task queue; the other shape (BENCH_E2E_SHAPES) on a topology
  // and a task queue of its own, its processes idle while the main shape's run, and the reverse.
  const main: Shape = { consumesQueue: cfg.workerConsumesQueue, queueUrl: infra.fanoutTopology.queueUrl, roles: MAIN_ROLES };
  const otherTopology = cfg.e2eShapes ? await ensureTopology(infra.aws, OTHER_SHAPE_TOPOLOGY) : undefined;
  const other: Shape | undefined = otherTopology && {
    consumesQueue: !cfg.workerConsumesQueue,
    queueUrl: otherTopology.queueUrl,
    taskQueue: OTHER_SHAPE_TASK_QUEUE,
    roles: OTHER_ROLES,
  };
  const queueEnv = (shape: Shape, concurrency: number): Record<string, string> => ({
    QUEUE_URL: shape.queueUrl,
    CONSUMER_CONCURRENCY: String(concurrency),
    ...(shape.taskQueue ? { TEMPORAL_TASK_QUEUE: shape.taskQueue } : {}),
  });
  const spawnWorker = (role: string, concurrency: number, shape: Shape = main): Promise<CliHandle> =>
    spawnService('worker', role, {
      WORKER_MAX_CONCURRENT_ACTIVITIES: String(cfg.maxConcurrentActivities),
      // the receiver is on loopback, which the outbound address policy refuses by default
      OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
      ...(shape.taskQueue ? { TEMPORAL_TASK_QUEUE: shape.taskQueue } : {}),
      ...(shape.consumesQueue ? { WORKER_CONSUME_QUEUE: 'true', ...queueEnv(shape, concurrency), ...cfg.consumerEnv } : {}),
      ...cfg.workerEnv,
    });
  const spawnConsumer = (concurrency: number, role = 'consumer', shape: Shape = main): Promise<CliHandle> | undefined =>
    shape.consumesQueue ? undefined : spawnService('consumer', role, { ...queueEnv(shape, concurrency), ...cfg.consumerEnv });
  const e2eStarts = [
    spawnWorker(main.roles.worker, cfg.consumerConcurrency),
    spawnConsumer(cfg.consumerConcurrency),
    fork('bare-worker'),
    other && spawnWorker(other.roles.worker, cfg.consumerConcurrency, other),
    other && spawnConsumer(cfg.consumerConcurrency, other.roles.consumer, other),
  ] as const;
  // a consumer that fails to start must not leave the worker running once the bench exits
  await Promise.allSettled(e2eStarts);
  const [worker, consumer, bareWorker, otherWorker, otherConsumer] = await Promise.all(e2eStarts);
  // sampled peaks of the measured rounds (the lifetime peak, start-up included, comes from VmHWM)
  const afterWarmup = (): void => [worker, consumer, bareWorker, otherWorker, otherConsumer].forEach((h) => h?.resetPeak());
  const idle = (shape: Shape): Record<string, string> => ({ [shape.roles.worker]: IDLE_GROUP, [shape.roles.consumer]: IDLE_GROUP });
  // the worker's GC per run: the ordered rows' extra CPU was mostly the worker's collector (docs/benchmarks.md)
  const workerGcSeconds = async (): Promise<number | undefined> => (await worker.heap())?.gcSeconds;
  const deps: E2eBenchDeps = {
    cfg,
    infra,
    client,
    receiver,
    snapshot,
    log,
    afterWarmup,
    workerGcSeconds,
    ...(other ? { cpuGroups: idle(other) } : {}),
  };
  const otherDeps: E2eBenchDeps | undefined = other &&
    otherTopology && {
      ...deps,
      topicArn: otherTopology.topicArn,
      workerGcSeconds: async () => (await otherWorker?.heap())?.gcSeconds,
      cpuGroups: { ...idle(main), [other.roles.worker]: 'worker', [other.roles.consumer]: 'consumer' },
    };

  // what a filter and a transform cost in this process, beside the pipeline's figures
  const contentCost = cfg.e2eContent ? await measureContentCost() : undefined;
  const destinations = cfg.e2eDestinations ? await benchDestinations(infra) : undefined;
  const e2eFigures = await runE2eBench(deps, cfg.e2eRounds, {
    ...(otherDeps ? { otherShape: otherDeps } : {}),
    content: cfg.e2eContent,
    ...(cfg.e2eOrdered ? { ordered: { keys: cfg.orderedKeys, oneKeyEvents: cfg.orderedOneKeyEvents } } : {}),
    ...(destinations ? { destinations: { ...destinations, rounds: cfg.destinationRounds } } : {}),
  });
  writeE2eWindows(e2eFigures);
  // one send of each destination alone, in a process of its own: a send's part of a delivery is
  // inside the rounds' scatter above (bench/destination-send.ts)
  let destinationSends: DestinationSendResult | undefined;
  if (destinations && cfg.destinationSends > 0) {
    log(`destinations: ${cfg.destinationSends * 4} sends each alone (HTTP, Kafka, SQS), in a child process`);
    destinationSends = await measureDestinationSends(sendTargets(receiver.url, destinations), { sends: cfg.destinationSends });
  }
  // the process that starts the workflows counts how each run's first task reached the worker
  const starter = consumer ?? worker;
  const startsE2e = workflowStarts(await starter.scrape());
  const otherStarts = workflowStarts(await (otherConsumer ?? otherWorker)?.scrape());
  // the other shape's part is done: the phases after this one run the main shape alone
  await Promise.all([otherWorker?.stop(), otherConsumer?.stop()]);

  // Phase 3: latency at a low steady rate, through a compiled ingest that publishes to the topic
  // the consumer reads.
  let latency: LatencyFigures | undefined;
  if (cfg.latencyDurationS > 0) {
    const setup = await ingestEnv(infra.fanoutTopology.topicArn);
    const latencyIngest = await spawnService('ingest', 'ingest-latency', setup.env);
    latency = await runLatencyBench({
      cfg,
      infra,
      receiver,
      ingestUrl: `http://127.0.0.1:${setup.port}`,
      source: LATENCY_SOURCE,
      snapshot,
      log,
    });
    await latencyIngest.stop();
  }
  const startsAll = workflowStarts(await starter.scrape());
  const starts: WorkflowStartFigures | undefined = startsE2e &&
    startsAll && {
      e2e: startsE2e,
      latency: latency && { eager: startsAll.eager - startsE2e.eager, taskQueue: startsAll.taskQueue - startsE2e.taskQueue },
    };

  const bareStats = await bareWorker.stats();
  const rss: PeakRss = {
    ingest: ingestRss,
    baseline: baselineStats.peakRssMb,
    worker: { sampled: worker.sampledPeakMb(), lifetime: worker.lifetimePeakMb(), heap: await worker.heap() },
    consumer: consumer && { sampled: consumer.sampledPeakMb(), lifetime: consumer.lifetimePeakMb(), heap: await consumer.heap() },
    bareWorker: bareStats.peakRssMb,
    temporal: infra.temporalPid === undefined ? undefined : lifetimePeakMbOf(infra.temporalPid),
    temporalPostgres: infra.temporalPostgresPid === undefined ? undefined : postgresPssMb(infra.temporalPostgresPid),
  };

  // Phase 4 (BENCH_SCALE_OUT=1): one worker process against two, the others stopped first.
  let scaleOut: ScaleOutFigures | undefined;
  if (cfg.scaleOut) {
    await Promise.all([worker.stop(), consumer?.stop(), bareWorker.stop()]);
    const start = async (setup: ScaleOutSetup): Promise<{ stop(): Promise<void> }> => {
      const nth = (role: string, i: number): string => (i === 0 ? role : `${role}-${i + 1}`);
      const starts = [
        ...Array.from({ length: setup.workers }, (_, i) => spawnWorker(nth('worker', i), setup.consumerConcurrency)),
        ...Array.from({ length: setup.consumers }, (_, i) => spawnConsumer(setup.consumerConcurrency, nth('consumer', i))),
      ];
      await Promise.allSettled(starts);
      const handles = (await Promise.all(starts)).filter((h): h is CliHandle => h !== undefined);
      return { stop: async () => void (await Promise.all(handles.map((h) => h.stop()))) };
    };
    log(`scale-out: ${cfg.scaleOutEvents} one-endpoint events per run, one worker then two, ${cfg.e2eRounds} mirrored rounds`);
    scaleOut = await runScaleOut({ e2e: deps, cfg, start });
  }
  log('stopping everything');
  await cleanup();

  const shapes: ShapeFigures | undefined = e2eFigures.otherShape && {
    otherStarts,
    otherPeakRssMb: { worker: otherWorker?.lifetimePeakMb(), consumer: otherConsumer?.lifetimePeakMb() },
  };
  const results: BenchResults = {
    cfg,
    ingest: ingestFigures,
    e2e: e2eFigures,
    latency,
    rss,
    starts,
    scaleOut,
    wrongPasswords,
    shapes,
    contentCost,
    dbPathContent,
    destinationSends,
  };
  process.stdout.write(renderTable(results) + '\n');
  process.stdout.write(JSON.stringify(summary(results)) + '\n');
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping everything`);
    void cleanup().finally(() => process.exit(130));
  });
}

try {
  await main();
} catch (err) {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
  await cleanup();
}
// Everything was stopped; should a library still hold a handle, do not hang forever on it.
setTimeout(() => {
  log('a handle was still open 10 s after cleanup; exiting anyway');
  process.exit(process.exitCode ?? 0);
}, 10_000).unref();
