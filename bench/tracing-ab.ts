// What tracing costs: the compiled ingest, consumer and worker with tracing off (no
// OTEL_* variable: the SDK is not loaded) and on (every span exported over OTLP/HTTP protobuf to a
// real OpenTelemetry Collector, all sampled), side by side in alternating rounds (off, on, on,
// off, ...) so that noise on a shared machine hits both. Each round: fresh processes, a warm-up,
// then EVENTS events posted to ingest (one endpoint each) until every delivery is done; CPU of
// each process from /proc. Prints CPU per request (ingest) and per delivery (the three together).
//   npm run bench:tracing      (TRACING_EVENTS=600, TRACING_ROUNDS=2 per mode, TRACING_CONCURRENCY=20, TRACING_WARMUP=100)
// BENCH_TRACING_BASELINE_REF=<commit> adds a third column: the same rounds against a build of that
// commit (from before tracing existed: `off costs nothing` measured, not argued), built once under
// .data/bench/ (bench/baseline-build.ts), with a database of its own that its own code migrates
// and seeds; rounds go baseline, off, on, then on, off, baseline, ...
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { CLI, spawnCli, type CliHandle } from './cli-unit.js';
import { cpuSnapshot, cpuUsage } from './cpu.js';
import { seedEndpoints } from './e2e-fixtures.js';
import { startInfra } from './infra.js';
import { AUTHORIZATION, seedCredential } from './ingest-bench.js';
import { startReceiver } from './receiver.js';
import { mapLimit, median, round } from './stats.js';
import { startCollector } from '../test/support/otel-collector.js';
import { baselineBuild, seedBaselineDatabase, type BaselineBuild } from './baseline-build.js';

const EVENTS = Number(process.env.TRACING_EVENTS ?? 600);
const ROUNDS = Number(process.env.TRACING_ROUNDS ?? 2);
const CONCURRENCY = Number(process.env.TRACING_CONCURRENCY ?? 20);
const WARMUP = Number(process.env.TRACING_WARMUP ?? 100);
const SOURCE = 'bench-tracing';
const BASELINE_REF = process.env.BENCH_TRACING_BASELINE_REF?.trim() || undefined;
const log = (line: string): void => void process.stderr.write(`[bench:tracing] ${line}\n`);

if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm run bench:tracing does)`);
const infra = await startInfra();
const collector = await startCollector();
const receiver = await startReceiver();
await seedCredential(infra, SOURCE);
await seedEndpoints(infra, SOURCE, 1, receiver.url);

/** the older build and its own database, when BENCH_TRACING_BASELINE_REF asks for one */
let baseline: (BaselineBuild & { databaseUrl: string }) | undefined;
if (BASELINE_REF) {
  const build = await baselineBuild(BASELINE_REF, log);
  const url = new URL(infra.pgUrl);
  url.pathname = `/bench_tracing_baseline_${build.sha.slice(0, 12)}`;
  await infra.db.raw(`CREATE DATABASE ${url.pathname.slice(1)}`);
  await seedBaselineDatabase(build, { url: url.toString(), source: SOURCE, receiverUrl: receiver.url }, log);
  baseline = { ...build, databaseUrl: url.toString() };
  log(`baseline: ${build.sha.slice(0, 12)} (${BASELINE_REF}), built in ${build.dir}`);
}

type Mode = 'baseline' | 'off' | 'on';
interface Round {
  mode: Mode;
  ingestMsPerRequest: number;
  consumerMsPerDelivery: number;
  workerMsPerDelivery: number;
  serviceMsPerDelivery: number;
  spans: number;
  foreignS: number;
}

async function post(port: number, n: number, prefix: string): Promise<void> {
  await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    CONCURRENCY,
    async (i) => {
      const res = await fetch(`http://127.0.0.1:${port}/api/webhooks/${SOURCE}`, {
        method: 'POST',
        headers: { authorization: AUTHORIZATION, 'content-type': 'application/json' },
        body: JSON.stringify({ id: `${prefix}-${i}`, type: 'bench.tracing' }),
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}`);
    },
  );
}

async function delivered(target: number): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (let seen = await receiver.count(); seen < target; seen = await receiver.count()) {
    if (Date.now() > deadline) throw new Error(`only ${seen} of ${target} deliveries within 5 min`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function runRound(mode: Mode, taskQueue: string): Promise<Round> {
  const env: Record<string, string> = {
    DATABASE_URL: mode === 'baseline' && baseline ? baseline.databaseUrl : infra.pgUrl,
    AWS_ENDPOINT_URL: infra.awsEndpoint,
    TEMPORAL_ADDRESS: infra.temporalAddress,
    TEMPORAL_TASK_QUEUE: taskQueue,
    TOPIC_ARN: infra.fanoutTopology.topicArn,
    QUEUE_URL: infra.fanoutTopology.queueUrl,
    ADMIN_API_ENABLED: 'false',
    LOG_LEVEL: 'warn',
    ...(mode === 'on' ? { OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' } : {}),
  };
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const procs: CliHandle[] = [];
  const cli = mode === 'baseline' && baseline ? { cli: baseline.cli } : {};
  try {
    procs.push(await spawnCli('worker', `tracing-${mode}-worker`, env, cli));
    procs.push(await spawnCli('consumer', `tracing-${mode}-consumer`, env, cli));
    procs.push(await spawnCli('ingest', `tracing-${mode}-ingest`, { ...env, PORT: String(port), HOST: '127.0.0.1' }, cli));
    const roles = new Map(procs.map((p) => [p.pid, p.role.replace(`tracing-${mode}-`, '')]));
    const snapshot = () => cpuSnapshot(({ pid }) => roles.get(pid) ?? 'other');
    const prefix = randomBytes(4).toString('hex');
    let target = (await receiver.count()) + WARMUP;
    await post(port, WARMUP, `${prefix}-warm`);
    await delivered(target);
    const spansBefore = collector.spans.length;
    const before = snapshot();
    target = (await receiver.count()) + EVENTS;
    await post(port, EVENTS, prefix);
    await delivered(target);
    // the last batch of spans leaves within the exporter's schedule (5 s by default): counted in
    if (mode === 'on') await new Promise((r) => setTimeout(r, 6_000));
    const usage = cpuUsage(before, snapshot());
    const ms = (role: string): number => ((usage.groups[role] ?? 0) * 1000) / EVENTS;
    const r: Round = {
      mode,
      ingestMsPerRequest: ms('ingest'),
      consumerMsPerDelivery: ms('consumer'),
      workerMsPerDelivery: ms('worker'),
      serviceMsPerDelivery: ms('ingest') + ms('consumer') + ms('worker'),
      spans: collector.spans.length - spansBefore,
      foreignS: usage.foreignS,
    };
    log(
      `${mode}: ${JSON.stringify({ ...r, ingestMsPerRequest: round(r.ingestMsPerRequest, 3), serviceMsPerDelivery: round(r.serviceMsPerDelivery, 3) })}`,
    );
    return r;
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}

const rounds: Round[] = [];
try {
  // off on on off off on ...: each mode goes first as often as the other; with a baseline,
  // baseline off on on off baseline ...: the baseline and `on` take turns at the ends
  const order: Mode[] = baseline
    ? Array.from({ length: ROUNDS }, (_, i): Mode[] => (i % 2 === 0 ? ['baseline', 'off', 'on'] : ['on', 'off', 'baseline'])).flat()
    : Array.from({ length: ROUNDS * 2 }, (_, i) => (i % 4 === 0 || i % 4 === 3 ? 'off' : 'on'));
  for (const [i, mode] of order.entries()) rounds.push(await runRound(mode, `BENCH_TRACING_${i}`));
} finally {
  await receiver.close();
  await collector.stop();
  await infra.stop();
}

const of = (mode: Mode, f: (r: Round) => number): number => median(rounds.filter((r) => r.mode === mode).map(f));
const rows: Array<[string, (r: Round) => number, number]> = [
  ['ingest CPU per request, ms', (r) => r.ingestMsPerRequest, 3],
  ['consumer CPU per delivery, ms', (r) => r.consumerMsPerDelivery, 3],
  ['worker CPU per delivery, ms', (r) => r.workerMsPerDelivery, 3],
  ['ingest+consumer+worker CPU per delivery, ms', (r) => r.serviceMsPerDelivery, 3],
  ['spans exported per event', (r) => r.spans / EVENTS, 1],
  ['CPU of other processes on the machine, s', (r) => r.foreignS, 1],
];
const ratio = (a: number, b: number): string => (b > 0 ? String(round(a / b, 2)) : '-');
const lines = baseline
  ? [
      `before tracing (${baseline.sha.slice(0, 12)}) / tracing off / on, ${EVENTS} events x 1 endpoint per round, ${ROUNDS} rounds each (medians), concurrency ${CONCURRENCY}`,
      '| figure | before tracing | off | on | off / before | on / off |',
      '|---|---|---|---|---|---|',
      ...rows.map(([name, f, d]) => {
        const [before, off, on] = [of('baseline', f), of('off', f), of('on', f)];
        return `| ${name} | ${round(before, d)} | ${round(off, d)} | ${round(on, d)} | ${ratio(off, before)} | ${ratio(on, off)} |`;
      }),
    ]
  : [
      `tracing off / on, ${EVENTS} events x 1 endpoint per round, ${ROUNDS} rounds each (medians), concurrency ${CONCURRENCY}`,
      '| figure | off | on | on / off |',
      '|---|---|---|---|',
      ...rows.map(([name, f, d]) => {
        const off = of('off', f);
        const on = of('on', f);
        return `| ${name} | ${round(off, d)} | ${round(on, d)} | ${ratio(on, off)} |`;
      }),
    ];
process.stdout.write(`${lines.join('\n')}\n`);
process.stdout.write(
  `${JSON.stringify({
    tracing_off_service_cpu_ms_per_delivery: round(
      of('off', (r) => r.serviceMsPerDelivery),
      3,
    ),
    tracing_on_service_cpu_ms_per_delivery: round(
      of('on', (r) => r.serviceMsPerDelivery),
      3,
    ),
    tracing_off_ingest_cpu_ms_per_request: round(
      of('off', (r) => r.ingestMsPerRequest),
      3,
    ),
    tracing_on_ingest_cpu_ms_per_request: round(
      of('on', (r) => r.ingestMsPerRequest),
      3,
    ),
    ...(baseline
      ? {
          before_tracing_ref: baseline.sha,
          before_tracing_service_cpu_ms_per_delivery: round(
            of('baseline', (r) => r.serviceMsPerDelivery),
            3,
          ),
          before_tracing_ingest_cpu_ms_per_request: round(
            of('baseline', (r) => r.ingestMsPerRequest),
            3,
          ),
        }
      : {}),
  })}\n`,
);
