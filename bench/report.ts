import { freshSummary, wrongPasswordsRows, type WrongPasswordsFigures } from './wrong-passwords-bench.js';
import os from 'node:os';
import { describeActions, medianActions, type CloudActions } from './cloud-actions.js';
import type { BenchConfig, TemporalKind } from './config.js';
import type { ContentCost } from './content-cost.js';
import { addedOverPlain, type DbPathRound } from './db-path-rounds.js';
import type { DestinationSendResult } from './destination-send.js';
import type { E2eCase, E2eFigures, E2ePath, E2eRun } from './e2e-bench.js';
import type { IngestFigures, ServerFigures } from './ingest-bench.js';
import { nodeFlagsFor, type HeapFigures } from './cli-unit.js';
import type { LatencyFigures } from './latency-bench.js';
import type { ScaleOutCase, ScaleOutFigures } from './scale-out.js';
import { RECEIVER_GROUP } from './receiver.js';
import { median, percentile, round } from './stats.js';

/** Peak RSS of one of the service's compiled processes, MB. */
export interface ServiceRss {
  /** sampled every 100 ms over the measured rounds (after the warm-up) */
  sampled: number;
  /** the kernel's peak over the process's whole life, start-up included (VmHWM): what a memory limit meets */
  lifetime: number;
  /** V8 heap at the end of its phase (the rest of RSS is code, native libraries, buffers) */
  heap: HeapFigures | undefined;
}

export interface PeakRss {
  ingest: ServiceRss;
  baseline: number;
  worker: ServiceRss;
  /** absent when the worker consumes the queue (BENCH_WORKER_CONSUMES_QUEUE) */
  consumer: ServiceRss | undefined;
  bareWorker: number;
  /** the Temporal server's VmHWM over the whole bench (both e2e paths and the floor runs) */
  temporal: number | undefined;
  /** Temporal's own Postgres (BENCH_TEMPORAL=postgres) after the e2e phase: Pss of the cluster */
  temporalPostgres: number | undefined;
}

/** Workflow starts by how the first task reached the worker, per phase (from the starter's /metrics). */
export interface WorkflowStartFigures {
  /** the end-to-end phase, warm-ups included: the worker saturated */
  e2e: { eager: number; taskQueue: number };
  /** the latency phase at its low steady rate */
  latency: { eager: number; taskQueue: number } | undefined;
}

/** The other shape's own figures beside its runs' (BENCH_E2E_SHAPES). */
export interface ShapeFigures {
  /** how its starter's workflows started (from its /metrics) */
  otherStarts: { eager: number; taskQueue: number } | undefined;
  /** VmHWM of its processes over their whole life, MB */
  otherPeakRssMb: { worker: number | undefined; consumer: number | undefined };
}

export interface BenchResults {
  cfg: BenchConfig;
  ingest: IngestFigures;
  e2e: E2eFigures;
  latency: LatencyFigures | undefined;
  rss: PeakRss;
  /** undefined when the starter's /metrics did not answer */
  starts: WorkflowStartFigures | undefined;
  /** BENCH_SCALE_OUT=1 only */
  scaleOut: ScaleOutFigures | undefined;
  /** undefined with BENCH_WRONG_PASSWORDS_S=0 */
  wrongPasswords: WrongPasswordsFigures | undefined;
  /** undefined with BENCH_E2E_SHAPES=0 */
  shapes?: ShapeFigures | undefined;
  /** the filter's and the transform's cost in the bench process (BENCH_E2E_CONTENT) */
  contentCost?: ContentCost | undefined;
  /** the content variants on the worker's database path alone (BENCH_E2E_CONTENT) */
  dbPathContent?: DbPathRound[] | undefined;
  /** one send of each destination alone, CPU per send (BENCH_E2E_DESTINATIONS, BENCH_DESTINATION_SENDS) */
  destinationSends?: DestinationSendResult | undefined;
}

/**
 * The processes a deployment runs for delivery: webhook-fanout's worker and consumer, and the
 * Temporal server and Postgres they use. Left out: the bench process (load, SNS/SQS emulator),
 * the receiver and the brokers (processes of their own), and the other units, idle meanwhile.
 * CPU_TARGET_MS is on this sum.
 */
export const SERVICE_GROUPS = ['worker', 'consumer', 'temporal', 'temporal-postgres', 'postgres'] as const;

/**
 * What webhook-fanout itself spends (OWN_CPU_TARGET_MS): the worker, the consumer and the
 * Postgres backends serving them; Temporal and its Postgres apart (a Temporal cluster or
 * Temporal Cloud pays those, not webhook-fanout's pods).
 */
export const OWN_GROUPS = ['worker', 'consumer', 'postgres'] as const;

const cpuMsPerDeliveryOf = (p: E2ePath, groups: readonly string[]): number =>
  (groups.reduce((a, g) => a + (p.cpu[g] ?? 0), 0) * 1000) / p.totalDeliveries;

/** CPU ms per delivery of the service's processes (SERVICE_GROUPS), over all measured rounds. */
export function serviceCpuMsPerDelivery(p: E2ePath): number {
  return cpuMsPerDeliveryOf(p, SERVICE_GROUPS);
}

/** CPU ms per delivery of webhook-fanout's own processes and their Postgres (OWN_GROUPS). */
export function ownCpuMsPerDelivery(p: E2ePath): number {
  return cpuMsPerDeliveryOf(p, OWN_GROUPS);
}

/** webhook-fanout's own CPU ms per delivery (OWN_GROUPS) of one run: the spread between rounds is the noise. */
export function ownCpuMsPerDeliveryOfRun(r: E2eRun): number {
  return (OWN_GROUPS.reduce((a, g) => a + (r.cpu[g] ?? 0), 0) * 1000) / r.deliveries;
}

/** The two ways the workflows get started, by the names the output gives them. */
export type ShapeName = 'consumer' | 'worker_consumes_queue';
export const SHAPE_LABELS: Record<ShapeName, string> = {
  consumer: 'a consumer process starts the workflows (worker.consumeQueue: false)',
  worker_consumes_queue: 'the worker reads the queue, eager starts (worker.consumeQueue: true)',
};
const shapeOf = (consumesQueue: boolean): ShapeName => (consumesQueue ? 'worker_consumes_queue' : 'consumer');

/**
 * The one-endpoint case in both shapes, the chart's default first: the main runs' path and the
 * other shape's, each with its name. Undefined without the other shape's runs.
 */
export function shapesSideBySide(
  r: Pick<BenchResults, 'cfg' | 'e2e'>,
): { first: { shape: ShapeName; path: E2ePath }; second: { shape: ShapeName; path: E2ePath } } | undefined {
  const other = r.e2e.otherShape;
  if (!other) return undefined;
  const main = { shape: shapeOf(r.cfg.workerConsumesQueue), path: r.e2e.one.real };
  const second = { shape: shapeOf(!r.cfg.workerConsumesQueue), path: other };
  return r.cfg.workerConsumesQueue === r.cfg.chartWorkerConsumesQueue ? { first: main, second } : { first: second, second: main };
}

/** Service CPU per delivery a variant of the one-endpoint round adds over the plain round (OWN_GROUPS), ms. */
export function addedCpuMsPerDelivery(plain: E2ePath, variant: E2ePath): number {
  return ownCpuMsPerDelivery(variant) - ownCpuMsPerDelivery(plain);
}

/** How far a path's rounds lie apart in own CPU per delivery, ms: a difference below this the run can not tell. */
function spreadMs(p: E2ePath): number {
  const each = p.runs.map(ownCpuMsPerDeliveryOfRun);
  return each.length === 0 ? 0 : Math.max(...each) - Math.min(...each);
}

/**
 * A variant's added CPU against its target: met only when it is within the target and the rounds
 * of both runs lie closer together than the target (otherwise the run can not tell).
 */
export function contentVerdict(plain: E2ePath, variant: E2ePath, target: number): { added: number; noise: number; met: boolean } {
  const added = addedCpuMsPerDelivery(plain, variant);
  const noise = Math.max(spreadMs(plain), spreadMs(variant));
  return { added, noise, met: added <= target && noise <= target };
}

/**
 * A content variant's price on the worker's database path (bench/db-path-rounds.ts): met, as in
 * contentVerdict, when the mean difference over the plain rounds is within the target and so is
 * its noise (here the standard error of that mean).
 */
export function dbPathVerdict(
  rounds: readonly DbPathRound[],
  tag: string,
  target: number,
): { added: number; stderr: number; met: boolean } {
  const { added, stderr } = addedOverPlain(rounds, tag);
  return { added, stderr, met: added <= target && stderr <= target };
}

/** issue 33's targets on the service CPU a filter and a five-field transform add per delivery */
export const CONTENT_TARGET_MS = { filter: 0.05, transform: 0.2 } as const;

/**
 * issue 41's bounds on ordered delivery, against the plain round of the same run: throughput with
 * many keys at least 0.8 of it, CPU per delivery (Temporal included) at most 1.3 of it; one key's
 * hop (a delivery's arrival to the next one's) p50 under 15 ms; and no delivery out of order.
 */
export const ORDERED_TARGETS = { throughputRatio: 0.8, cpuRatio: 1.3, hopP50Ms: 15 } as const;

export interface OrderedVerdict {
  /** many keys over plain: deliveries/s, CPU per delivery with Temporal (SERVICE_GROUPS), webhook-fanout's own (OWN_GROUPS) */
  throughputRatio: number;
  cpuRatio: number;
  ownCpuRatio: number;
  /** one key's deliveries/s over plain's: what serial delivery costs a single hot key */
  oneKeyThroughputRatio: number;
  hopP50Ms: number;
  hopP99Ms: number;
  met: boolean;
}

/** The ordered rounds against the plain one (BENCH_E2E_ORDERED). */
export function orderedVerdict(plain: E2ePath, many: E2ePath, oneKey: E2ePath): OrderedVerdict {
  const hops = oneKey.hopsMs;
  const v = {
    throughputRatio: many.deliveriesPerS / plain.deliveriesPerS,
    cpuRatio: serviceCpuMsPerDelivery(many) / serviceCpuMsPerDelivery(plain),
    ownCpuRatio: ownCpuMsPerDelivery(many) / ownCpuMsPerDelivery(plain),
    oneKeyThroughputRatio: oneKey.deliveriesPerS / plain.deliveriesPerS,
    hopP50Ms: hops.length === 0 ? Number.NaN : percentile(hops, 50),
    hopP99Ms: hops.length === 0 ? Number.NaN : percentile(hops, 99),
  };
  const t = ORDERED_TARGETS;
  return {
    ...v,
    met: v.throughputRatio >= t.throughputRatio && v.cpuRatio <= t.cpuRatio && v.hopP50Ms < t.hopP50Ms && oneKey.outOfOrder === 0,
  };
}

/** Temporal's CPU ms on the real path: its server and its Postgres, per workflow (= event) and per delivery. */
export interface TemporalCpu {
  serverPerWorkflow: number;
  postgresPerWorkflow: number;
  serverPerDelivery: number;
  postgresPerDelivery: number;
}

export function temporalCpu(p: E2ePath): TemporalCpu {
  const workflows = p.runs.reduce((a, r) => a + r.events, 0);
  const server = (p.cpu.temporal ?? 0) * 1000;
  const pg = (p.cpu['temporal-postgres'] ?? 0) * 1000;
  return {
    serverPerWorkflow: server / workflows,
    postgresPerWorkflow: pg / workflows,
    serverPerDelivery: server / p.totalDeliveries,
    postgresPerDelivery: pg / p.totalDeliveries,
  };
}

/**
 * Temporal's floor: CPU ms per empty workflow (no activity) of the Temporal server (its Postgres
 * included) and of the worker that runs it, the least any one-workflow-per-event design pays per
 * event on this server.
 */
export function floorCpuMs(p: E2ePath): { temporal: number; worker: number } {
  return {
    temporal: (((p.cpu.temporal ?? 0) + (p.cpu['temporal-postgres'] ?? 0)) * 1000) / p.totalDeliveries,
    worker: ((p.cpu['bare-worker'] ?? 0) * 1000) / p.totalDeliveries,
  };
}

/** How the run's Temporal is named in the table and in the JSON's `temporal`. */
export const TEMPORAL_NAMES: Record<TemporalKind, { table: string; json: string }> = {
  dev: { table: 'dev server (temporal CLI), state in memory', json: 'dev-server-in-memory' },
  postgres: {
    table: 'temporal-server v1.32.1 (frontend, history, matching; 4 history shards) on its own embedded Postgres, SQL visibility',
    json: 'temporal-server-postgres',
  },
};

/**
 * What the service spends per event above Temporal's floor: its CPU per event (all of one event's
 * deliveries) less the floor's CPU per empty workflow. The part of the cost that webhook-fanout's
 * own work decides (the three steps, Postgres, the HTTP requests, the consumer), comparable
 * between runs at different speeds of the dev server; a yardstick, not one of the targets.
 */
export function cpuMsAboveFloorPerEvent(c: Pick<E2eCase, 'real' | 'endpoints'>, floor: { temporal: number; worker: number }): number {
  return serviceCpuMsPerDelivery(c.real) * c.endpoints - (floor.temporal + floor.worker);
}

/** Share of the starts handed back eagerly, 0 when there were none. */
export function eagerShare(s: { eager: number; taskQueue: number }): number {
  const all = s.eager + s.taskQueue;
  return all === 0 ? 0 : s.eager / all;
}

/** the whole delivery path's CPU per delivery (SERVICE_GROUPS) */
export const CPU_TARGET_MS = { one: 13, ten: 5 } as const;
/** webhook-fanout's own CPU per delivery (OWN_GROUPS) */
export const OWN_CPU_TARGET_MS = { one: 10, ten: 2.5 } as const;
export const RSS_TARGET_MB = { worker: 250, ingest: 150, consumer: 120 } as const;
export const LATENCY_P99_TARGET_MS = 250;

export const INGEST_TARGET = 0.6;
export const E2E_TARGET = 0.8;

export function machine(): { cpus: number; cpuModel: string; memGiB: number; node: string } {
  return {
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memGiB: round(os.totalmem() / 1024 ** 3, 1),
    node: process.version,
  };
}

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join('  '));
}

/** "ingest 0.31, postgres 0.22, ..." CPU per unit of work, largest first, noise left out. */
function cpuPer(cpu: Record<string, number>, units: number, scale: number): string {
  return Object.entries(cpu)
    .filter(([, s]) => s >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([g, s]) => `${g} ${((s * scale) / units).toFixed(2)}`)
    .join(', ');
}

/** CPU of every benchmark process per unit of work, in ms. */
const cpuMsPer = (cpu: Record<string, number>, units: number): number => (Object.values(cpu).reduce((a, b) => a + b, 0) * 1000) / units;

/**
 * Baseline CPU per unit over real CPU per unit: the ratio the throughputs would have if only this
 * benchmark used the machine. Steadier than the throughput ratio when others load the machine.
 */
export function cpuRatios(r: BenchResults): { ingest: number; e2e1: number; e2e10: number } {
  const { ingest, e2e } = r;
  const e2eRatio = (c: E2eCase): number => cpuMsPer(c.bare.cpu, c.bare.totalDeliveries) / cpuMsPer(c.real.cpu, c.real.totalDeliveries);
  return {
    ingest: cpuMsPer(ingest.baseline.cpu, ingest.baseline.ok) / cpuMsPer(ingest.ingest.cpu, ingest.ingest.ok),
    e2e1: e2eRatio(e2e.one),
    e2e10: e2eRatio(e2e.ten),
  };
}

const f0 = (n: number): string => n.toFixed(0);
const f1 = (n: number): string => n.toFixed(1);
const f2 = (n: number): string => n.toFixed(2);
const f3 = (n: number): string => n.toFixed(3);

function serverRow(name: string, f: ServerFigures, rssMb: number): string[] {
  return [name, f0(f.rps), f1(f.p50Ms), f1(f.p99Ms), f0(rssMb), f0(f.ok), f0(f.failed)];
}

function e2eRow(name: string, r: E2ePath): string[] {
  return [name, f0(r.events), f0(r.deliveries), f2(r.seconds), f0(r.deliveriesPerS), r.eventsDoneS === undefined ? '-' : f2(r.eventsDoneS)];
}

/**
 * node's flags each compiled process ran with: the chart's nodeFlags, or
 * BENCH_<PROCESS>_NODE_FLAGS (no consumer when the worker consumes the queue).
 */
function nodeFlags(cfg: BenchConfig): Partial<Record<'ingest' | 'consumer' | 'worker', string[]>> {
  const of = (c: 'ingest' | 'consumer' | 'worker'): string[] => nodeFlagsFor(c, cfg.nodeFlags);
  return { ingest: of('ingest'), ...(cfg.workerConsumesQueue ? {} : { consumer: of('consumer') }), worker: of('worker') };
}

/** The human-readable part of the output. */
export function renderTable(r: BenchResults): string {
  const m = machine();
  const { ingest, e2e, cfg } = r;
  const cpu = cpuRatios(r);
  const lines: string[] = [
    '',
    `webhook-fanout benchmark: ${m.cpus} cores (${m.cpuModel}), ${m.memGiB} GiB, Node ${m.node}`,
    `Postgres: embedded, fsync off; SNS/SQS: fauxqs in the bench process; Temporal: ${TEMPORAL_NAMES[cfg.temporalKind].table}` +
      (cfg.temporalKind === 'postgres' && cfg.temporalDurable ? ' (its Postgres durable: fsync and synchronous commits on)' : ''),
    'webhook-fanout: the compiled build (node dist/cmd/cli.js ingest|consumer|worker, NODE_ENV=production); baseline and bare worker: tsx',
    `node's flags (the chart's nodeFlags): ${Object.entries(nodeFlags(cfg))
      .map(([c, f]) => `${c} ${f?.length ? f.join(' ') : '-'}`)
      .join(', ')}`,
    '',
    `Inbound: ${cfg.connections} connections, ${cfg.rounds} alternating rounds of ${cfg.durationS} s per server, medians`,
    ...table([
      ['', 'req/s', 'p50 ms', 'p99 ms', 'peak RSS MB', '2xx', 'failed'],
      serverRow('baseline (fastify + INSERT)', ingest.baseline, r.rss.baseline),
      serverRow('ingest (Basic, idempotent, SNS)', ingest.ingest, r.rss.ingest.lifetime),
      ...(ingest.duplicate
        ? [
            [
              'ingest, duplicate id',
              f0(ingest.duplicate.rps),
              f1(ingest.duplicate.p50Ms),
              f1(ingest.duplicate.p99Ms),
              '',
              f0(ingest.duplicate.ok),
              f0(ingest.duplicate.non2xx + ingest.duplicate.errors),
            ],
          ]
        : []),
    ]),
    `ratio ingest/baseline: ${f2(ingest.ratio)} (target >= ${INGEST_TARGET}); CPU-cost ratio ${f2(cpu.ingest)}`,
    `CPU ms per request, baseline: ${cpuPer(ingest.baseline.cpu, ingest.baseline.ok, 1000)}`,
    `CPU ms per request, ingest:   ${cpuPer(ingest.ingest.cpu, ingest.ingest.ok, 1000)}`,
    `CPU s used by other processes on the machine meanwhile, all rounds: baseline ${f1(ingest.baseline.foreignCpuS)}, ingest ${f1(ingest.ingest.foreignCpuS)}`,
    '',
    `End-to-end: ${cfg.e2eRounds} alternating rounds, medians; first publish (or start) to last delivery; worker max ${cfg.maxConcurrentActivities} concurrent activities, ${cfg.consumerConcurrency} concurrent starts` +
      (cfg.e2eFailFirst ? '; REAL PATH WITH FAILING FIRST ATTEMPTS (503, then 200 after the backoff)' : '') +
      (cfg.workerConsumesQueue ? '; THE WORKER CONSUMES THE QUEUE (eager starts, no consumer process)' : ''),
    ...table([
      ['', 'events', 'deliveries', 's', 'deliveries/s', 'events done s'],
      e2eRow('1 endpoint, real', e2e.one.real),
      e2eRow('1 endpoint, bare workflow', e2e.one.bare),
      e2eRow('10 endpoints, real', e2e.ten.real),
      e2eRow('10 endpoints, bare workflow', e2e.ten.bare),
    ]),
    `ratio real/bare: 1 endpoint ${f2(e2e.one.ratio)}, 10 endpoints ${f2(e2e.ten.ratio)} (target >= ${E2E_TARGET}); ` +
      `CPU-cost ratio: 1 endpoint ${f2(cpu.e2e1)}, 10 endpoints ${f2(cpu.e2e10)}`,
  ];
  for (const [name, c] of [
    ['1', e2e.one],
    ['10', e2e.ten],
  ] as const) {
    lines.push(`CPU ms per delivery, ${name.padStart(2)} endpoint(s), real: ${cpuPer(c.real.cpu, c.real.totalDeliveries, 1000)}`);
    lines.push(`${' '.repeat(35)}bare: ${cpuPer(c.bare.cpu, c.bare.totalDeliveries, 1000)}`);
  }
  const target = (v: number, max: number): string => `${f1(v)} (target <= ${max}${v <= max ? ', met' : ''})`;
  lines.push(
    `CPU ms per delivery of the service (${SERVICE_GROUPS.join(' + ')}): ` +
      `1 endpoint ${target(serviceCpuMsPerDelivery(e2e.one.real), CPU_TARGET_MS.one)}, ` +
      `10 endpoints ${target(serviceCpuMsPerDelivery(e2e.ten.real), CPU_TARGET_MS.ten)}`,
  );
  lines.push(
    `CPU ms per delivery of webhook-fanout itself (${OWN_GROUPS.join(' + ')}; Temporal apart): ` +
      `1 endpoint ${target(ownCpuMsPerDelivery(e2e.one.real), OWN_CPU_TARGET_MS.one)}, ` +
      `10 endpoints ${target(ownCpuMsPerDelivery(e2e.ten.real), OWN_CPU_TARGET_MS.ten)}`,
    ...temporalLines(r),
  );
  const floor = floorCpuMs(e2e.floor);
  const aboveTen = cpuMsAboveFloorPerEvent(e2e.ten, floor);
  lines.push(
    `Temporal's floor, an empty workflow (no activity, started as the bare path is), CPU ms per workflow: ` +
      `temporal ${f2(floor.temporal)} + bare worker ${f2(floor.worker)} = ${f2(floor.temporal + floor.worker)} ` +
      `(the starter's CPU not included); ${e2e.floor.totalDeliveries} workflows, others used ${f1(e2e.floor.foreignCpuS)} s`,
    `The service above that floor, CPU ms per event: 1 endpoint ${f2(cpuMsAboveFloorPerEvent(e2e.one, floor))}, ` +
      `10 endpoints ${f2(aboveTen)} (${f2(aboveTen / e2e.ten.endpoints)} per delivery)`,
  );
  if (r.starts) {
    const share = (s: { eager: number; taskQueue: number }): string => `${s.eager} of ${s.eager + s.taskQueue}`;
    lines.push(
      `Workflow starts whose first task was handed back eagerly: e2e phase (saturated) ${share(r.starts.e2e)}` +
        `${r.starts.latency ? `, latency phase ${share(r.starts.latency)}` : ''}` +
        `${cfg.workerConsumesQueue ? '' : ' (none asked: the consumer is a separate process)'}`,
    );
  }
  const foreign = (c: E2eCase): string => `${f1(c.real.foreignCpuS)} / ${f1(c.bare.foreignCpuS)}`;
  lines.push(
    `CPU s used by other processes on the machine meanwhile, all rounds (real / bare): 1 endpoint ${foreign(e2e.one)}, 10 endpoints ${foreign(e2e.ten)}`,
    `peak RSS MB over the whole life (over the measured rounds): worker ${f0(r.rss.worker.lifetime)} (${f0(r.rss.worker.sampled)}), ` +
      `consumer ${r.rss.consumer ? `${f0(r.rss.consumer.lifetime)} (${f0(r.rss.consumer.sampled)})` : '- (the worker consumes the queue)'}, ingest ${f0(r.rss.ingest.lifetime)} (${f0(r.rss.ingest.sampled)}); ` +
      `targets ${RSS_TARGET_MB.worker} / ${RSS_TARGET_MB.consumer} / ${RSS_TARGET_MB.ingest}; bare worker (tsx) ${f0(r.rss.bareWorker)}; ` +
      `Temporal server ${r.rss.temporal === undefined ? '-' : f0(r.rss.temporal)}` +
      (r.rss.temporalPostgres === undefined
        ? ''
        : `, its Postgres ${f0(r.rss.temporalPostgres)} (Pss of the cluster at the end of the e2e phase)`),
    `V8 heap used / total, external MB at the end of the phase; GC s over the life: ` +
      (['worker', 'consumer', 'ingest'] as const)
        .map((k) => {
          const h = r.rss[k]?.heap;
          return `${k} ${h ? `${f0(h.heapUsedMb)} / ${f0(h.heapTotalMb)}, ${f0(h.externalMb)}; GC ${f1(h.gcSeconds)}` : '-'}`;
        })
        .join('; '),
    '',
  );
  lines.push(...shapeLines(r), ...contentLines(r), ...orderedLines(r), ...destinationLines(r));
  const l = r.latency;
  if (l) {
    lines.push(
      `Latency at ${l.rate} events/s, 1 endpoint, ${l.events} events: inbound 200 -> arrival at the receiver ` +
        `p50 ${f1(l.p50Ms)} ms, p99 ${f1(l.p99Ms)} ms (target < ${LATENCY_P99_TARGET_MS} idle), max ${f1(l.maxMs)} ms; ` +
        `inbound request -> 200 p50 ${f1(l.ingestP50Ms)} ms, p99 ${f1(l.ingestP99Ms)} ms`,
      `CPU ms per event at that rate (idle costs included): ${cpuPer(l.cpu, l.events, 1000)}; other processes ${f1(l.foreignCpuS)} s`,
      '',
    );
  }
  if (r.wrongPasswords) lines.push(...wrongPasswordsRows(r.wrongPasswords), '');
  if (r.scaleOut) lines.push(...scaleOutLines(r.scaleOut, cfg), '');
  return lines.join('\n');
}

/** "9.81 (9.62, 10.01)": the figure over all rounds, then each round's. */
function withRounds(p: E2ePath, f: (r: E2eRun) => number, all: number): string {
  return `${f2(all)} (${p.runs.map((x) => f2(f(x))).join(', ')})`;
}

/** The one-endpoint case in both shapes, the chart's default first (issue 36). */
function shapeLines(r: BenchResults): string[] {
  const s = shapesSideBySide(r);
  if (!s) return [];
  const row = (x: { shape: ShapeName; path: E2ePath }, first: boolean): string[] => {
    const p = x.path;
    const own = ownCpuMsPerDelivery(p);
    const by = (g: string): string => f2(((p.cpu[g] ?? 0) * 1000) / p.totalDeliveries);
    return [
      `${first ? '(chart default) ' : ''}${SHAPE_LABELS[x.shape]}`,
      f0(p.deliveriesPerS),
      withRounds(p, ownCpuMsPerDeliveryOfRun, own),
      `${by('worker')} / ${by('consumer')} / ${by('postgres')}`,
      f2(serviceCpuMsPerDelivery(p) - own),
      f2(serviceCpuMsPerDelivery(p)),
    ];
  };
  const a = s.first.path;
  const b = s.second.path;
  const starts = r.shapes?.otherStarts;
  return [
    `One endpoint per event in both shapes, side by side (${a.events} events per run, ${r.cfg.e2eRounds} mirrored rounds, medians; CPU over all rounds):`,
    ...table([
      ['', 'deliveries/s', 'webhook-fanout CPU ms/delivery (per round)', 'worker / consumer / postgres', '+ Temporal', '= all'],
      row(s.first, true),
      row(s.second, false),
    ]),
    `second / first: webhook-fanout's CPU ${f2(ownCpuMsPerDelivery(b) / ownCpuMsPerDelivery(a))}, with Temporal ${f2(serviceCpuMsPerDelivery(b) / serviceCpuMsPerDelivery(a))}, ` +
      `throughput ${f2(b.deliveriesPerS / a.deliveriesPerS)}` +
      (starts ? `; the other shape's starts handed back eagerly: ${starts.eager} of ${starts.eager + starts.taskQueue}` : '') +
      `; others used ${f1(a.foreignCpuS)} / ${f1(b.foreignCpuS)} s`,
    `peak RSS MB over the whole life: ${[s.first, s.second].map((x) => `${x.shape} shape: ${shapeRss(r, x.shape)}`).join('; ')}`,
    '',
  ];
}

/** "worker 231, consumer 104" of a shape's processes (the main shape's from the whole bench, the other's from the e2e phase). */
function shapeRss(r: BenchResults, shape: ShapeName): string {
  const isMain = shape === shapeOf(r.cfg.workerConsumesQueue);
  const rss = isMain
    ? { worker: r.rss.worker.lifetime, consumer: r.rss.consumer?.lifetime }
    : { worker: r.shapes?.otherPeakRssMb.worker, consumer: r.shapes?.otherPeakRssMb.consumer };
  return [
    `worker ${rss.worker === undefined ? '-' : f0(rss.worker)}`,
    ...(rss.consumer === undefined ? [] : [`consumer ${f0(rss.consumer)}`]),
  ].join(', ');
}

/** The filtered and the transformed rounds beside the plain one (issue 33). */
function contentLines(r: BenchResults): string[] {
  const { filtered, transformed, one } = r.e2e;
  if (!filtered || !transformed) return [];
  const plain = one.real;
  const row = (name: string, p: E2ePath, target?: number): string[] => {
    const v = target === undefined ? undefined : contentVerdict(plain, p, target);
    return [
      name,
      f0(p.deliveriesPerS),
      withRounds(p, ownCpuMsPerDeliveryOfRun, ownCpuMsPerDelivery(p)),
      v === undefined
        ? ''
        : `${v.added >= 0 ? '+' : ''}${f2(v.added)} (target <= ${target}` +
          (v.met ? ', met)' : v.noise > (target ?? 0) ? `; rounds ${f2(v.noise)} apart: this run can not tell)` : ')'),
    ];
  };
  const c = r.contentCost;
  const d = r.dbPathContent;
  const dbPathLine = (name: 'filter' | 'transform'): string => {
    if (!d) return '';
    const v = dbPathVerdict(d, name, CONTENT_TARGET_MS[name]);
    return `${name} ${v.added >= 0 ? '+' : ''}${v.added.toFixed(3)} (standard error ${v.stderr.toFixed(3)}; target <= ${CONTENT_TARGET_MS[name]}${v.met ? ', met' : ', not shown'})`;
  };
  return [
    `Content routing, one endpoint, beside the plain round (the main shape, ${plain.events} events per run, ${r.cfg.e2eRounds} mirrored rounds):`,
    ...table([
      ['', 'deliveries/s', 'webhook-fanout CPU ms/delivery (per round)', 'added ms/delivery'],
      row('plain', plain),
      row('filter (CEL)', filtered, CONTENT_TARGET_MS.filter),
      row('transform (JSONata, 5 fields)', transformed, CONTENT_TARGET_MS.transform),
    ]),
    ...(c
      ? [
          `the same expressions alone, in the bench process, CPU ms per delivery (view of the event + evaluation; ${c.iterations} each): ` +
            `filter ${c.filterMs.toFixed(4)}, transform ${c.transformMs.toFixed(4)}; first compile ${f2(c.filterCompileMs)} / ${f2(c.transformCompileMs)} ms`,
        ]
      : []),
    ...(d
      ? [
          `on the worker's database path alone (bench/db-path-rounds.ts, ${d.filter((x) => x.tag === 'plain').length} mirrored rounds of ${d[0]?.events ?? 0} events), ` +
            `worker + Postgres CPU ms per delivery added over plain: ${dbPathLine('filter')}, ${dbPathLine('transform')}`,
        ]
      : []),
    '',
  ];
}

/** The ordered rounds beside the plain one (issue 41). */
function orderedLines(r: BenchResults): string[] {
  const o = r.e2e.ordered;
  if (!o) return [];
  const plain = r.e2e.one.real;
  const v = orderedVerdict(plain, o.many, o.oneKey);
  const perRun = (x: E2eRun): number => (SERVICE_GROUPS.reduce((a, g) => a + (x.cpu[g] ?? 0), 0) * 1000) / x.deliveries;
  const row = (name: string, p: E2ePath, vsPlain: string): string[] => [
    name,
    f0(p.deliveriesPerS),
    withRounds(p, perRun, serviceCpuMsPerDelivery(p)),
    f2(ownCpuMsPerDelivery(p)),
    vsPlain,
  ];
  const t = ORDERED_TARGETS;
  const actions = (p: E2ePath): string => {
    const a = medianActions(p.actions);
    return a
      ? `${f2(meanActions(p.actions) ?? a.total)} over ${p.actions.length} histories (the median one ${a.total}: ${describeActions(a)})`
      : '-';
  };
  return [
    `Ordered delivery (issue 41), one endpoint, beside the plain round (the main shape, ${r.cfg.e2eRounds} mirrored rounds, medians; CPU over all rounds):`,
    ...table([
      ['', 'deliveries/s', 'CPU ms/delivery with Temporal (per round)', 'webhook-fanout CPU ms/delivery', 'against plain'],
      row(`plain, unordered (${plain.events} events)`, plain, ''),
      row(
        `ordered, ${o.keys} keys (the same ${o.many.events} events)`,
        o.many,
        `throughput x${f2(v.throughputRatio)} (target >= ${t.throughputRatio}), CPU x${f2(v.cpuRatio)} (target <= ${t.cpuRatio}), own CPU x${f2(v.ownCpuRatio)}`,
      ),
      row(`ordered, one key (${o.oneKey.events} events in a row)`, o.oneKey, `throughput x${f2(v.oneKeyThroughputRatio)}`),
    ]),
    `one key, a delivery's arrival at the receiver to the next one's (the receiver answers at once; ${o.oneKey.hopsMs.length} hops): ` +
      `p50 ${f1(v.hopP50Ms)} ms (target < ${t.hopP50Ms}), p99 ${f1(v.hopP99Ms)} ms, max ${f1(Math.max(...o.oneKey.hopsMs))} ms; ` +
      `out of order: ${o.oneKey.outOfOrder} (the guarantee: 0)`,
    `Temporal Cloud Actions per ordered event: ${o.keys} keys ${actions(o.many)}; one key ${actions(o.oneKey)}`,
    `CPU ms per delivery by process, plain / ${o.keys} keys / one key: ` +
      SERVICE_GROUPS.map((g) => `${g} ${[plain, o.many, o.oneKey].map((p) => f2(cpuMsPerDeliveryOf(p, [g]))).join(' / ')}`).join(', '),
    `the worker's garbage collection, ms per delivery, plain / ${o.keys} keys / one key: ${[plain, o.many, o.oneKey].map((p) => (p.workerGcS === undefined ? '-' : f2((p.workerGcS * 1000) / p.totalDeliveries))).join(' / ')}`,
    `workflow tasks per ordered event (the same histories; a second one is a wait): ${o.keys} keys ${tasksPerEvent(o.many.actions)}; one key ${tasksPerEvent(o.oneKey.actions)}`,
    `bounds met: ${v.met ? 'yes' : 'no'}; others used ${f1(plain.foreignCpuS)} / ${f1(o.many.foreignCpuS)} / ${f1(o.oneKey.foreignCpuS)} s`,
    '',
  ];
}

/**
 * A destination's CPU against HTTP's, from rounds run side by side: webhook-fanout's own CPU per
 * delivery (worker, consumer, Postgres; the broker's is not ours) divided by the HTTP round's. The
 * issue's target (43, item 7): no more than HTTP's, a ratio <= 1.
 */
export function destinationCpuRatio(http: E2ePath, other: E2ePath): number {
  return ownCpuMsPerDelivery(other) / ownCpuMsPerDelivery(http);
}

/**
 * Each destination round's ratio to its own HTTP run (the n-th run of each path came from the same
 * round, side by side): one reading per round, so the rounds' spread of ratios says how far one
 * reading can be trusted.
 */
export function destinationRoundRatios(http: E2ePath, other: E2ePath): number[] {
  return other.runs.flatMap((r, i) => {
    const h = http.runs[i];
    return h ? [ownCpuMsPerDeliveryOfRun(r) / ownCpuMsPerDeliveryOfRun(h)] : [];
  });
}

/** The median of the rounds' ratios and their range: "x1.01 in [0.95, 1.07]". */
export function ratioSpread(ratios: readonly number[]): { median: number; min: number; max: number } | undefined {
  return ratios.length === 0 ? undefined : { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
}

/** A destination's CPU per send alone over HTTP's (bench/destination-send.ts); undefined when either is missing. */
export function destinationSendRatio(sends: DestinationSendResult, name: string): number | undefined {
  const http = sends.http?.cpuMsPerSend;
  const other = sends[name]?.cpuMsPerSend;
  return http === undefined || other === undefined || http <= 0 ? undefined : other / http;
}

/** The Kafka and SQS rounds beside the plain (HTTP) one (issue 43). */
function destinationLines(r: BenchResults): string[] {
  const { kafka, sqs } = r.e2e;
  const http = r.e2e.destinationHttp ?? r.e2e.one.real;
  if (!kafka || !sqs) return [];
  const row = (name: string, p: E2ePath): string[] => [
    name,
    f0(p.deliveriesPerS),
    withRounds(p, ownCpuMsPerDeliveryOfRun, ownCpuMsPerDelivery(p)),
    p === http ? '1' : f2(destinationCpuRatio(http, p)),
    p === http ? '1' : roundRatios(http, p),
  ];
  return [
    `Destinations, one endpoint, in rounds of their own (the main shape, ${http.events} events per run, ${http.runs.length} rounds, ` +
      `HTTP, Kafka, SQS side by side, every other round backwards; target: CPU ratio <= 1):`,
    ...table([
      [
        '',
        'deliveries/s',
        'webhook-fanout CPU ms/delivery (per round)',
        'CPU / HTTP',
        "each round's / its HTTP run's: median [range] (per round)",
      ],
      row('HTTP (the receiver, a process of its own)', http),
      row('Kafka (a local Kafka 4, acks=all)', kafka),
      row('SQS (fauxqs)', sqs),
    ]),
    `the far side's own CPU is not webhook-fanout's: the receiver ${f1(http.cpu[RECEIVER_GROUP] ?? 0)} s, Kafka's JVM ${f1(kafka.cpu['other:java'] ?? 0)} s, ` +
      `the queue's fauxqs ${f1(sqs.cpu['destination-fauxqs'] ?? 0)} s (each a process of its own)`,
    destinationProcessLine(http, kafka, sqs),
    ...sendLines(r.destinationSends),
    '',
  ];
}

/** "x1.01 [0.95, 1.07] (0.95, 1.02, 1.07)": the rounds' ratios to their HTTP runs, their median and range. */
function roundRatios(http: E2ePath, p: E2ePath): string {
  const ratios = destinationRoundRatios(http, p);
  const s = ratioSpread(ratios);
  return s ? `x${f2(s.median)} [${f2(s.min)}, ${f2(s.max)}] (${ratios.map(f2).join(', ')})` : '-';
}

/**
 * Where a destination's extra CPU per delivery lands, process by process: the worker's is the send
 * itself; the consumer's, Temporal's and Postgres's a side effect (a slower round spreads their
 * steady costs over fewer deliveries; fauxqs serves the ingest queue and the destination's).
 */
export function destinationProcessLine(http: E2ePath, kafka: E2ePath, sqs: E2ePath): string {
  const each = (f: (p: E2ePath) => string): string => [http, kafka, sqs].map(f).join(' / ');
  return (
    'CPU ms per delivery by process, HTTP / Kafka / SQS: ' +
    SERVICE_GROUPS.map((g) => `${g} ${each((p) => f2(cpuMsPerDeliveryOf(p, [g])))}`).join(', ') +
    // not ours, but on the same cores: the far side of each send slows the round it runs in
    `; not webhook-fanout's: the bench process (the publisher) ${each((p) => f2(cpuMsPerDeliveryOf(p, ['bench'])))}, ` +
    `HTTP's receiver ${f2(cpuMsPerDeliveryOf(http, [RECEIVER_GROUP]))}, Kafka's JVM ${f2(cpuMsPerDeliveryOf(kafka, ['other:java']))}, SQS's fauxqs ${f2(cpuMsPerDeliveryOf(sqs, ['destination-fauxqs']))}; deliveries retried ${each((p) => String(p.retried))}; ` +
    // the worker's extra may be Temporal's side of the run, not the send: its GC and its workflow tasks
    `the worker's GC ms per delivery ${each((p) => (p.workerGcS === undefined ? '-' : f2((p.workerGcS * 1000) / p.totalDeliveries)))}; ` +
    `workflow tasks per event ${each((p) => tasksPerEvent(p.actions))}; ` +
    // the far side's answer time: an attempt held longer keeps its activity (and the worker's state of it) longer
    `an attempt's median duration ms ${each((p) => (p.attemptMs === undefined ? '-' : f1(p.attemptMs)))}`
  );
}

/** One send of each destination alone (bench/destination-send.ts): what the rounds above can not resolve. */
function sendLines(sends: DestinationSendResult | undefined): string[] {
  if (!sends) return [];
  const named = Object.entries(sends).map(([name, m]) => {
    const ratio = destinationSendRatio(sends, name);
    return `${name} ${f3(m.cpuMsPerSend)} (${m.perBlock.map(f3).join(', ')})${name === 'http' || ratio === undefined ? '' : ` x${f2(ratio)}`}`;
  });
  const first = Object.values(sends)[0];
  return [
    `one send alone, the destinations in a process of their own (${first?.sends ?? 0} sends each, 10 in flight, alternating blocks), ` +
      `CPU ms per send (per block), against HTTP's: ${named.join('; ')}`,
  ];
}

/** Temporal's cost on the real path, and Temporal Cloud's Actions per event. */
function temporalLines(r: BenchResults): string[] {
  const { e2e, cfg } = r;
  const pg = cfg.temporalKind === 'postgres';
  const of = (t: number, p: number): string => (pg ? `${f2(t)} + its Postgres ${f2(p)} = ${f2(t + p)}` : f2(t));
  const t1 = temporalCpu(e2e.one.real);
  const t10 = temporalCpu(e2e.ten.real);
  const fl = e2e.floor.totalDeliveries;
  const lines = [
    `Temporal (${cfg.temporalKind}), CPU ms per workflow (one per event): 1 endpoint ${of(t1.serverPerWorkflow, t1.postgresPerWorkflow)}, ` +
      `10 endpoints ${of(t10.serverPerWorkflow, t10.postgresPerWorkflow)}, empty workflow ` +
      `${of(((e2e.floor.cpu.temporal ?? 0) * 1000) / fl, ((e2e.floor.cpu['temporal-postgres'] ?? 0) * 1000) / fl)}; ` +
      `per delivery: 1 endpoint ${of(t1.serverPerDelivery, t1.postgresPerDelivery)}, 10 endpoints ${of(t10.serverPerDelivery, t10.postgresPerDelivery)}`,
  ];
  for (const [name, c] of [
    ['1 endpoint', e2e.one],
    ['10 endpoints', e2e.ten],
  ] as const) {
    const a = medianActions(c.real.actions);
    if (!a) continue;
    const totals = c.real.actions.map((x) => x.total);
    lines.push(
      `Temporal Cloud Actions per event, ${name}: ${a.total} (${describeActions(a)}); from ${totals.length} histories` +
        (Math.min(...totals) === Math.max(...totals) ? '' : `, ${Math.min(...totals)} to ${Math.max(...totals)}`),
    );
  }
  return lines;
}

/** The scale-out phase: throughput of one worker and two, and the cores each component kept busy. */
function scaleOutLines(s: ScaleOutFigures, cfg: BenchConfig): string[] {
  const cores = (c: ScaleOutCase): string =>
    Object.entries(c.cores)
      .filter(([, v]) => v >= 0.02)
      .sort((a, b) => b[1] - a[1])
      .map(([g, v]) => `${g} ${f2(v)}`)
      .join(', ');
  const row = (c: ScaleOutCase): string =>
    `${c.setup.workers} worker(s), ` +
    (c.setup.consumers === 0 ? 'each consuming the queue' : `${c.setup.consumers} consumer(s)`) +
    ` at concurrency ${c.setup.consumerConcurrency}: ${f0(c.deliveriesPerS)} deliveries/s; ` +
    `cores busy: machine ${f2(c.machineCores)} of ${machine().cpus} (other processes ${f2(c.foreignCores)}); ${cores(c)}`;
  return [
    `Scale-out (BENCH_SCALE_OUT): ${cfg.scaleOutEvents} one-endpoint events per run, ${cfg.e2eRounds} mirrored rounds, medians; ` +
      (cfg.workerConsumesQueue ? 'each worker consumes the queue' : 'one consumer per worker'),
    `  ${row(s.one)}`,
    `  ${row(s.two)}`,
    `  ratio two workers / one: ${f2(s.ratio)}`,
  ];
}

/** Temporal Cloud's Actions per event (the median history), when counted. */
const actionsPerEvent = (samples: readonly CloudActions[]): number | undefined => medianActions(samples)?.total;
/** The ordered runs' Actions per event: the mean of histories spread over the run (some wait, some do not). */
const meanActions = (samples: readonly CloudActions[]): number | undefined =>
  samples.length === 0 ? undefined : Math.round((samples.reduce((s, a) => s + a.total, 0) / samples.length) * 100) / 100;

/** The mean over histories of one figure of each (workflow tasks per event). */
const perEvent = (samples: readonly CloudActions[], f: (a: CloudActions) => number): number | undefined =>
  samples.length === 0 ? undefined : Math.round((samples.reduce((s, a) => s + f(a), 0) / samples.length) * 100) / 100;
const tasksPerEvent = (samples: readonly CloudActions[]): string =>
  samples.length === 0 ? '-' : f2(perEvent(samples, (a) => a.workflowTasks) ?? 0);

/** The machine-readable summary: printed as the very last line. */
export function summary(r: BenchResults): Record<string, number | string | boolean> {
  const { ingest, e2e, cfg } = r;
  const m = machine();
  const cpu = cpuRatios(r);
  return {
    ingest_rps: round(ingest.ingest.rps),
    ingest_p50_ms: round(ingest.ingest.p50Ms),
    ingest_p99_ms: round(ingest.ingest.p99Ms),
    baseline_rps: round(ingest.baseline.rps),
    baseline_p50_ms: round(ingest.baseline.p50Ms),
    baseline_p99_ms: round(ingest.baseline.p99Ms),
    ratio: round(ingest.ratio, 3),
    ...(ingest.duplicate
      ? { ingest_duplicate_rps: round(ingest.duplicate.rps), ingest_duplicate_p99_ms: round(ingest.duplicate.p99Ms) }
      : {}),
    e2e_deliveries_per_s: round(e2e.ten.real.deliveriesPerS),
    e2e_baseline_per_s: round(e2e.ten.bare.deliveriesPerS),
    e2e_ratio: round(e2e.ten.ratio, 3),
    e2e_1_deliveries_per_s: round(e2e.one.real.deliveriesPerS),
    e2e_1_baseline_per_s: round(e2e.one.bare.deliveriesPerS),
    e2e_1_ratio: round(e2e.one.ratio, 3),
    e2e_10_deliveries_per_s: round(e2e.ten.real.deliveriesPerS),
    e2e_10_baseline_per_s: round(e2e.ten.bare.deliveriesPerS),
    e2e_10_ratio: round(e2e.ten.ratio, 3),
    ingest_cpu_ratio: round(cpu.ingest, 3),
    e2e_1_cpu_ratio: round(cpu.e2e1, 3),
    e2e_10_cpu_ratio: round(cpu.e2e10, 3),
    ingest_target_met: ingest.ratio >= INGEST_TARGET,
    e2e_target_met: Math.min(e2e.one.ratio, e2e.ten.ratio) >= E2E_TARGET,
    e2e_1_cpu_ms_per_delivery: round(serviceCpuMsPerDelivery(e2e.one.real), 2),
    e2e_10_cpu_ms_per_delivery: round(serviceCpuMsPerDelivery(e2e.ten.real), 2),
    e2e_1_service_cpu_ms_per_delivery: round(ownCpuMsPerDelivery(e2e.one.real), 2),
    e2e_10_service_cpu_ms_per_delivery: round(ownCpuMsPerDelivery(e2e.ten.real), 2),
    ...temporalSummary(r),
    e2e_1_bare_cpu_ms_per_delivery: round(cpuMsPer(e2e.one.bare.cpu, e2e.one.bare.totalDeliveries), 2),
    e2e_10_bare_cpu_ms_per_delivery: round(cpuMsPer(e2e.ten.bare.cpu, e2e.ten.bare.totalDeliveries), 2),
    e2e_floor_temporal_cpu_ms_per_workflow: round(floorCpuMs(e2e.floor).temporal, 2),
    e2e_floor_cpu_ms_per_workflow: round(floorCpuMs(e2e.floor).temporal + floorCpuMs(e2e.floor).worker, 2),
    ...(r.starts ? { e2e_eager_start_share: round(eagerShare(r.starts.e2e), 3) } : {}),
    ...(r.starts?.latency ? { latency_eager_start_share: round(eagerShare(r.starts.latency), 3) } : {}),
    e2e_1_cpu_ms_above_floor_per_event: round(cpuMsAboveFloorPerEvent(e2e.one, floorCpuMs(e2e.floor)), 2),
    e2e_10_cpu_ms_above_floor_per_event: round(cpuMsAboveFloorPerEvent(e2e.ten, floorCpuMs(e2e.floor)), 2),
    ...(r.latency ? { e2e_p50_ms: round(r.latency.p50Ms), e2e_p99_ms: round(r.latency.p99Ms), latency_rate: r.latency.rate } : {}),
    ...(r.wrongPasswords
      ? {
          wrong_passwords_valid_p99_alone_ms: r.wrongPasswords.alone.p99Ms,
          wrong_passwords_valid_p99_flooded_ms: r.wrongPasswords.flooded.p99Ms,
          wrong_passwords_p99_ratio: r.wrongPasswords.ratio,
          wrong_passwords_valid_all_accepted:
            r.wrongPasswords.alone.accepted === r.wrongPasswords.alone.sent &&
            r.wrongPasswords.flooded.accepted === r.wrongPasswords.flooded.sent,
          wrong_passwords_target_met: r.wrongPasswords.ratio <= 3 && r.wrongPasswords.flooded.accepted === r.wrongPasswords.flooded.sent,
          ...(r.wrongPasswords.fresh ? freshSummary(r.wrongPasswords.fresh) : {}),
        }
      : {}),
    ingest_peak_rss_mb: round(r.rss.ingest.lifetime, 0),
    baseline_peak_rss_mb: round(r.rss.baseline, 0),
    worker_peak_rss_mb: round(r.rss.worker.lifetime, 0),
    ...(r.rss.consumer ? { consumer_peak_rss_mb: round(r.rss.consumer.lifetime, 0) } : {}),
    bare_worker_peak_rss_mb: round(r.rss.bareWorker, 0),
    ...(r.rss.temporal === undefined ? {} : { temporal_peak_rss_mb: round(r.rss.temporal, 0) }),
    ...(r.rss.temporalPostgres === undefined ? {} : { temporal_postgres_pss_mb: round(r.rss.temporalPostgres, 0) }),
    connections: cfg.connections,
    duration_s: cfg.durationS,
    rounds: cfg.rounds,
    e2e_events_1: cfg.e2eEvents1,
    e2e_events_10: cfg.e2eEvents10,
    e2e_rounds: cfg.e2eRounds,
    build: 'compiled',
    e2e_fail_first: cfg.e2eFailFirst,
    worker_consumes_queue: cfg.workerConsumesQueue,
    ...Object.fromEntries(Object.entries(nodeFlags(cfg)).map(([c, f]) => [`${c}_node_flags`, (f ?? []).join(' ')])),
    ...variantSummary(r),
    temporal: TEMPORAL_NAMES[cfg.temporalKind].json,
    temporal_kind: cfg.temporalKind,
    ...(cfg.temporalKind === 'postgres' ? { temporal_postgres_durable: cfg.temporalDurable } : {}),
    cpus: m.cpus,
    node: m.node,
  };
}

/** The keys of the one-endpoint variants: both shapes, the filter and the transform, the Kafka and SQS destinations. */
function variantSummary(r: BenchResults): Record<string, number | string | boolean> {
  const out: Record<string, number | string | boolean> = { chart_worker_consume_queue: r.cfg.chartWorkerConsumesQueue };
  const s = shapesSideBySide(r);
  if (s) {
    out.e2e_1_shape_default = s.first.shape;
    for (const x of [s.first, s.second]) {
      out[`e2e_1_${x.shape}_deliveries_per_s`] = round(x.path.deliveriesPerS);
      out[`e2e_1_${x.shape}_service_cpu_ms_per_delivery`] = round(ownCpuMsPerDelivery(x.path), 2);
      out[`e2e_1_${x.shape}_cpu_ms_per_delivery`] = round(serviceCpuMsPerDelivery(x.path), 2);
    }
    out.e2e_1_shape_service_cpu_ratio = round(ownCpuMsPerDelivery(s.second.path) / ownCpuMsPerDelivery(s.first.path), 3);
    out.e2e_1_shape_cpu_ratio = round(serviceCpuMsPerDelivery(s.second.path) / serviceCpuMsPerDelivery(s.first.path), 3);
    const starts = r.shapes?.otherStarts;
    if (starts) out.e2e_1_other_shape_eager_start_share = round(eagerShare(starts), 3);
  }
  const { filtered, transformed, one } = r.e2e;
  if (filtered && transformed) {
    const f = contentVerdict(one.real, filtered, CONTENT_TARGET_MS.filter);
    const t = contentVerdict(one.real, transformed, CONTENT_TARGET_MS.transform);
    Object.assign(out, {
      filter_cpu_ms_per_delivery: round(f.added, 3),
      transform_cpu_ms_per_delivery: round(t.added, 3),
      // met only when the rounds lie closer together than the target: else the run could not tell
      filter_target_met: f.met,
      transform_target_met: t.met,
      filter_cpu_ms_noise: round(f.noise, 3),
      transform_cpu_ms_noise: round(t.noise, 3),
      e2e_1_filter_deliveries_per_s: round(filtered.deliveriesPerS),
      e2e_1_transform_deliveries_per_s: round(transformed.deliveriesPerS),
    });
  }
  const { kafka, sqs } = r.e2e;
  const http = r.e2e.destinationHttp ?? one.real;
  if (r.e2e.destinationHttp) {
    out.e2e_1_destination_http_deliveries_per_s = round(http.deliveriesPerS);
    out.destination_http_service_cpu_ms_per_delivery = round(ownCpuMsPerDelivery(http), 2);
  }
  for (const [name, p] of [
    ['kafka', kafka],
    ['sqs', sqs],
  ] as const) {
    if (!p) continue;
    out[`e2e_1_${name}_deliveries_per_s`] = round(p.deliveriesPerS);
    out[`${name}_service_cpu_ms_per_delivery`] = round(ownCpuMsPerDelivery(p), 2);
    out[`${name}_cpu_ratio_to_http`] = round(destinationCpuRatio(http, p), 3);
    // each round's ratio to its own HTTP run: the median and the range the claim quotes
    const spread = ratioSpread(destinationRoundRatios(http, p));
    if (spread) {
      out[`${name}_cpu_ratio_to_http_median`] = round(spread.median, 3);
      out[`${name}_cpu_ratio_to_http_min`] = round(spread.min, 3);
      out[`${name}_cpu_ratio_to_http_max`] = round(spread.max, 3);
    }
  }
  if (r.destinationSends) {
    for (const [name, m] of Object.entries(r.destinationSends)) {
      out[`${name}_send_cpu_ms`] = round(m.cpuMsPerSend, 4);
      const ratio = destinationSendRatio(r.destinationSends, name);
      if (name !== 'http' && ratio !== undefined) out[`${name}_send_cpu_ratio_to_http`] = round(ratio, 3);
    }
  }
  if (r.dbPathContent) {
    for (const [name, target] of Object.entries(CONTENT_TARGET_MS)) {
      const d = dbPathVerdict(r.dbPathContent, name, target);
      out[`${name}_db_path_cpu_ms_per_delivery`] = round(d.added, 3);
      out[`${name}_db_path_stderr`] = round(d.stderr, 3);
      out[`${name}_db_path_target_met`] = d.met;
      // the target is met when either measure resolves it within the target
      out[`${name}_target_met`] = out[`${name}_target_met`] === true || d.met;
    }
    const refused = r.dbPathContent.filter((x) => x.tag === 'refused');
    if (refused.length > 0)
      out.refused_filter_db_path_cpu_ms_per_event = round(refused.reduce((a, x) => a + x.nodeMs + x.postgresMs, 0) / refused.length, 3);
  }
  const o = r.e2e.ordered;
  if (o) {
    const v = orderedVerdict(one.real, o.many, o.oneKey);
    const a = meanActions(o.many.actions);
    const a1 = meanActions(o.oneKey.actions);
    Object.assign(out, {
      ordered_keys: o.keys,
      e2e_1_ordered_deliveries_per_s: round(o.many.deliveriesPerS),
      e2e_1_ordered_throughput_ratio: round(v.throughputRatio, 3),
      e2e_1_ordered_cpu_ms_per_delivery: round(serviceCpuMsPerDelivery(o.many), 2),
      e2e_1_ordered_cpu_ratio: round(v.cpuRatio, 3),
      e2e_1_ordered_service_cpu_ratio: round(v.ownCpuRatio, 3),
      ordered_one_key_events: o.oneKey.events,
      ordered_one_key_deliveries_per_s: round(o.oneKey.deliveriesPerS),
      ordered_one_key_throughput_ratio: round(v.oneKeyThroughputRatio, 3),
      ordered_one_key_hop_p50_ms: round(v.hopP50Ms),
      ordered_one_key_hop_p99_ms: round(v.hopP99Ms),
      ordered_one_key_out_of_order: o.oneKey.outOfOrder,
      ...(a === undefined ? {} : { temporal_cloud_actions_per_ordered_event: a }),
      ...(a1 === undefined ? {} : { temporal_cloud_actions_per_ordered_event_one_key: a1 }),
      ...(o.many.actions.length === 0
        ? {}
        : {
            ordered_workflow_tasks_per_event: perEvent(o.many.actions, (x) => x.workflowTasks),
          }),
      ...Object.fromEntries(
        SERVICE_GROUPS.map((g) => [`e2e_1_ordered_${g.replace('-', '_')}_cpu_ms_per_delivery`, round(cpuMsPerDeliveryOf(o.many, [g]), 3)]),
      ),
      ordered_target_met: v.met,
    });
  }
  if (r.contentCost) {
    out.filter_isolated_cpu_ms_per_delivery = round(r.contentCost.filterMs, 4);
    out.transform_isolated_cpu_ms_per_delivery = round(r.contentCost.transformMs, 4);
  }
  return out;
}

/** Temporal's keys of the summary: CPU by server kind, Cloud Actions, scale-out. */
function temporalSummary(r: BenchResults): Record<string, number> {
  const t1 = temporalCpu(r.e2e.one.real);
  const t10 = temporalCpu(r.e2e.ten.real);
  const a1 = actionsPerEvent(r.e2e.one.real.actions);
  const a10 = actionsPerEvent(r.e2e.ten.real.actions);
  const s = r.scaleOut;
  return {
    // the server process per one-endpoint workflow; its Postgres apart (0 on the dev server)
    temporal_cpu_ms_per_workflow: round(t1.serverPerWorkflow, 2),
    temporal_postgres_cpu_ms_per_workflow: round(t1.postgresPerWorkflow, 2),
    temporal_10_cpu_ms_per_workflow: round(t10.serverPerWorkflow, 2),
    temporal_10_postgres_cpu_ms_per_workflow: round(t10.postgresPerWorkflow, 2),
    temporal_1_cpu_ms_per_delivery: round(t1.serverPerDelivery, 2),
    temporal_1_postgres_cpu_ms_per_delivery: round(t1.postgresPerDelivery, 2),
    temporal_10_cpu_ms_per_delivery: round(t10.serverPerDelivery, 2),
    temporal_10_postgres_cpu_ms_per_delivery: round(t10.postgresPerDelivery, 2),
    ...(a1 === undefined ? {} : { temporal_cloud_actions_per_event_1: a1 }),
    ...(a10 === undefined ? {} : { temporal_cloud_actions_per_event_10: a10 }),
    ...(s
      ? {
          scale_out_ratio: round(s.ratio, 3),
          scale_out_1_deliveries_per_s: round(s.one.deliveriesPerS),
          scale_out_2_deliveries_per_s: round(s.two.deliveriesPerS),
          scale_out_1_machine_cores: round(s.one.machineCores, 2),
          scale_out_2_machine_cores: round(s.two.machineCores, 2),
        }
      : {}),
  };
}
