import { describe, expect, it } from 'vitest';
import { loadBenchConfig, type BenchConfig } from '../../../bench/config.js';
import type { DbPathRound } from '../../../bench/db-path-rounds.js';
import type { E2ePath, E2eRun } from '../../../bench/e2e-bench.js';
import {
  addedCpuMsPerDelivery,
  contentVerdict,
  dbPathVerdict,
  destinationCpuRatio,
  destinationProcessLine,
  destinationRoundRatios,
  destinationSendRatio,
  floorCpuMs,
  orderedVerdict,
  ownCpuMsPerDelivery,
  ownCpuMsPerDeliveryOfRun,
  ratioSpread,
  serviceCpuMsPerDelivery,
  shapesSideBySide,
  temporalCpu,
} from '../../../bench/report.js';

// CPU seconds by group over two runs of 100 events x 10 endpoints (2 000 deliveries, 200 workflows)
const cpu = { worker: 4, consumer: 0.5, postgres: 1.5, temporal: 3, 'temporal-postgres': 2, bench: 1, 'bare-worker': 0.2 };
const run = (): E2eRun => ({
  events: 100,
  deliveries: 1000,
  seconds: 5,
  deliveriesPerS: 200,
  cpu: {},
  foreignCpuS: 0,
  wallS: 5,
  windowUs: [0, 5e6],
});
const path: E2ePath = {
  events: 100,
  deliveries: 1000,
  seconds: 5,
  deliveriesPerS: 200,
  runs: [run(), run()],
  totalDeliveries: 2000,
  cpu,
  foreignCpuS: 0,
  actions: [],
  hopsMs: [],
  outOfOrder: 0,
  retried: 0,
};

describe("the bench's CPU figures, by whose they are", () => {
  it.each([
    { name: "webhook-fanout itself: worker, consumer and the service's Postgres", ms: ownCpuMsPerDelivery(path), expected: 3 },
    { name: "the whole deployment: Temporal and Temporal's Postgres too", ms: serviceCpuMsPerDelivery(path), expected: 5.5 },
  ])('$name per delivery', ({ ms, expected }) => {
    expect(ms).toBeCloseTo(expected, 6);
  });

  it("Temporal's server and its Postgres apart, per workflow (one per event) and per delivery", () => {
    expect(temporalCpu(path)).toEqual({ serverPerWorkflow: 15, postgresPerWorkflow: 10, serverPerDelivery: 1.5, postgresPerDelivery: 1 });
  });

  it("an empty workflow's Temporal floor counts Temporal's Postgres with the server", () => {
    const floor = floorCpuMs({ ...path, totalDeliveries: 200 });
    expect(floor.temporal).toBeCloseTo(25, 6);
    expect(floor.worker).toBeCloseTo(1, 6);
  });
});

const pathOf = (cpu: Record<string, number>, deliveries = 200, runCpu: Array<Record<string, number>> = []): E2ePath => ({
  events: deliveries,
  deliveries,
  seconds: 4,
  deliveriesPerS: deliveries / 4,
  runs: runCpu.map((c) => ({ ...run(), events: deliveries / runCpu.length, deliveries: deliveries / runCpu.length, cpu: c })),
  totalDeliveries: deliveries,
  cpu,
  foreignCpuS: 0,
  actions: [],
  hopsMs: [],
  outOfOrder: 0,
  retried: 0,
});

describe('the one-endpoint variants: both shapes, a filter, a transform', () => {
  const consumerShape = pathOf({ worker: 1.4, consumer: 0.3, postgres: 0.3, temporal: 2 });
  const workerShape = pathOf({ worker: 1.6, postgres: 0.3, temporal: 1.6 });
  const e2e = { one: { endpoints: 1, real: consumerShape, bare: consumerShape, ratio: 1 }, ten: undefined as never, floor: path };

  it.each([
    { chart: false, main: false, first: 'consumer', second: 'worker_consumes_queue' },
    { chart: false, main: true, first: 'consumer', second: 'worker_consumes_queue' },
    { chart: true, main: true, first: 'worker_consumes_queue', second: 'consumer' },
    { chart: true, main: false, first: 'worker_consumes_queue', second: 'consumer' },
  ] as const)('the chart default first (chart consumeQueue $chart, main runs consumeQueue $main)', ({ chart, main, first, second }) => {
    // the main runs are in the shape `main`; the other shape's runs in the opposite one
    const [mainPath, otherPath] = main ? [workerShape, consumerShape] : [consumerShape, workerShape];
    const cfg = { workerConsumesQueue: main, chartWorkerConsumesQueue: chart } as BenchConfig;
    const s = shapesSideBySide({ cfg, e2e: { ...e2e, one: { ...e2e.one, real: mainPath }, otherShape: otherPath } });
    expect(s?.first.shape).toBe(first);
    expect(s?.second.shape).toBe(second);
    expect(s?.first.path).toBe(first === 'consumer' ? consumerShape : workerShape);
  });

  it('without the other shape there is nothing side by side', () => {
    const cfg = { workerConsumesQueue: false, chartWorkerConsumesQueue: false } as BenchConfig;
    expect(shapesSideBySide({ cfg, e2e })).toBeUndefined();
  });

  it("a variant's added CPU is webhook-fanout's own per delivery over the plain round's, Temporal left out", () => {
    // plain: (1.4 + 0.3 + 0.3) s / 200 = 10 ms; filtered: 10.5 ms, Temporal's change not counted
    const filtered = pathOf({ worker: 1.5, consumer: 0.3, postgres: 0.3, temporal: 3 });
    expect(addedCpuMsPerDelivery(consumerShape, filtered)).toBeCloseTo(0.5, 6);
  });

  it("one round's own CPU per delivery, for the spread between rounds", () => {
    const p = pathOf({}, 200, [
      { worker: 0.7, consumer: 0.15, postgres: 0.15, temporal: 1 },
      { worker: 0.8, consumer: 0.15, postgres: 0.15, bench: 1 },
    ]);
    expect(p.runs.map(ownCpuMsPerDeliveryOfRun).map((x) => Number(x.toFixed(6)))).toEqual([10, 11]);
  });
});

describe("a destination's CPU against HTTP's (issue 43)", () => {
  it.each<{ name: string; other: Record<string, number>; ratio: number }>([
    { name: 'the same CPU per delivery', other: { worker: 0.4, postgres: 0.2 }, ratio: 1 },
    { name: "a cheaper publish: below HTTP's", other: { worker: 0.3, postgres: 0.2 }, ratio: 5 / 6 },
    { name: "the broker's own CPU is not ours", other: { worker: 0.4, postgres: 0.2, 'other:java': 5 }, ratio: 1 },
    { name: 'the bench process (fauxqs) is not ours either', other: { worker: 0.6, postgres: 0.3, bench: 2 }, ratio: 1.5 },
  ])('$name: $ratio', ({ other, ratio }) => {
    expect(destinationCpuRatio(pathOf({ worker: 0.4, postgres: 0.2 }), pathOf(other))).toBeCloseTo(ratio, 6);
  });
});

describe("where a destination's extra lands, process by process (issue 43)", () => {
  it("names each process with HTTP / Kafka / SQS per delivery, then what is not ours (the bench's process, the receiver, Kafka's JVM) and the retries", () => {
    const line = destinationProcessLine(
      // CPU seconds over 1 000 deliveries each
      pathOf({ worker: 0.4, consumer: 0.1, postgres: 0.2, temporal: 1, bench: 1, receiver: 0.3 }, 1000),
      { ...pathOf({ worker: 0.3, consumer: 0.1, postgres: 0.2, temporal: 1, 'other:java': 5, bench: 0.5 }, 1000), retried: 3 },
      pathOf({ worker: 0.5, consumer: 0.2, postgres: 0.2, temporal: 1.1, bench: 2 }, 1000),
    );
    expect(line).toBe(
      'CPU ms per delivery by process, HTTP / Kafka / SQS: worker 0.40 / 0.30 / 0.50, consumer 0.10 / 0.10 / 0.20, ' +
        'temporal 1.00 / 1.00 / 1.10, temporal-postgres 0.00 / 0.00 / 0.00, postgres 0.20 / 0.20 / 0.20; ' +
        "not webhook-fanout's: the bench process (the publisher) 1.00 / 0.50 / 2.00, HTTP's receiver 0.30, Kafka's JVM 5.00, SQS's fauxqs 0.00; " +
        "deliveries retried 0 / 3 / 0; the worker's GC ms per delivery - / - / -; workflow tasks per event - / - / -; " +
        "an attempt's median duration ms - / - / -",
    );
  });
});

describe("each destination round's ratio to its own HTTP run (issue 43, item 7)", () => {
  // own CPU (worker + consumer + postgres) per run of 100 deliveries: 0.5 s -> 5 ms per delivery
  const runs = (...own: number[]) => own.map((s) => ({ worker: s, temporal: 9, 'other:java': 9 }));
  it.each<{
    name: string;
    http: number[];
    other: number[];
    ratios: number[];
    spread: { median: number; min: number; max: number } | undefined;
  }>([
    {
      name: 'round by round, not over the sums: a dear HTTP round pairs with its own Kafka run',
      http: [0.5, 1.0, 0.5],
      other: [0.5, 1.1, 0.45],
      ratios: [1, 1.1, 0.9],
      spread: { median: 1, min: 0.9, max: 1.1 },
    },
    {
      name: 'an even count: the median is the mean of the middle two',
      http: [1, 1, 1, 1],
      other: [0.8, 1.2, 1, 0.9],
      ratios: [0.8, 1.2, 1, 0.9],
      spread: { median: 0.95, min: 0.8, max: 1.2 },
    },
    {
      name: 'a round without its HTTP run is not read',
      http: [1],
      other: [1.2, 3],
      ratios: [1.2],
      spread: { median: 1.2, min: 1.2, max: 1.2 },
    },
    { name: 'no rounds: nothing to quote', http: [], other: [], ratios: [], spread: undefined },
  ])('$name', ({ http, other, ratios, spread }) => {
    const got = destinationRoundRatios(pathOf({}, 100 * http.length, runs(...http)), pathOf({}, 100 * other.length, runs(...other)));
    expect(got.map((x) => Number(x.toFixed(6)))).toEqual(ratios);
    const s = ratioSpread(got);
    if (spread === undefined) expect(s).toBeUndefined();
    else {
      expect(s?.median).toBeCloseTo(spread.median, 6);
      expect(s?.min).toBeCloseTo(spread.min, 6);
      expect(s?.max).toBeCloseTo(spread.max, 6);
    }
  });
});

describe("the worker's GC and workflow tasks per row (is SQS's extra Temporal's side of the run?)", () => {
  it('reads each row: GC ms per delivery, workflow tasks per event (the mean of the counted histories), the median attempt', () => {
    const tasks = (...n: number[]) => n.map((workflowTasks) => ({ total: 2, markers: 3, markerTasks: 1, byKind: {}, workflowTasks }));
    const line = destinationProcessLine(
      { ...pathOf({ worker: 0.4 }, 1000), workerGcS: 0.05, actions: tasks(1, 1, 1) },
      { ...pathOf({ worker: 0.4 }, 1000), workerGcS: 0.06, actions: tasks(1, 2) },
      { ...pathOf({ worker: 0.5 }, 1000), workerGcS: 0.15, actions: tasks(2, 2, 1, 1), attemptMs: 12.34 },
    );
    expect(line).toMatch(
      /; the worker's GC ms per delivery 0\.05 \/ 0\.06 \/ 0\.15; workflow tasks per event 1\.00 \/ 1\.50 \/ 1\.50; an attempt's median duration ms - \/ - \/ 12\.3$/,
    );
  });
});

describe("one send alone against HTTP's (bench/destination-send.ts)", () => {
  const m = (cpuMsPerSend: number) => ({ cpuMsPerSend, systemMsPerSend: 0, perBlock: [cpuMsPerSend], sendsPerS: 100, sends: 100 });
  it.each<{ name: string; of: string; sends: Record<string, ReturnType<typeof m>>; ratio: number | undefined }>([
    { name: 'twice the CPU', of: 'kafka', sends: { http: m(0.2), kafka: m(0.4) }, ratio: 2 },
    { name: 'HTTP against itself', of: 'http', sends: { http: m(0.2) }, ratio: 1 },
    { name: 'no HTTP figure', of: 'sqs', sends: { sqs: m(0.4) }, ratio: undefined },
    { name: 'no figure of its own', of: 'sqs', sends: { http: m(0.2) }, ratio: undefined },
    { name: 'an HTTP figure of 0 (nothing measured)', of: 'sqs', sends: { http: m(0), sqs: m(0.4) }, ratio: undefined },
  ])('$name: $ratio', ({ of, sends, ratio }) => {
    const r = destinationSendRatio(sends, of);
    if (ratio === undefined) expect(r).toBeUndefined();
    else expect(r).toBeCloseTo(ratio, 6);
  });
});

describe("the bench's shape settings", () => {
  it.each([
    { env: {}, chart: false, main: false },
    { env: {}, chart: true, main: true },
    { env: { BENCH_WORKER_CONSUMES_QUEUE: '1' }, chart: false, main: true },
    { env: { BENCH_WORKER_CONSUMES_QUEUE: '0' }, chart: true, main: false },
  ])('main runs consume the queue: $main (chart $chart, $env)', ({ env, chart, main }) => {
    const cfg = loadBenchConfig(env, chart);
    expect(cfg.workerConsumesQueue).toBe(main);
    expect(cfg.chartWorkerConsumesQueue).toBe(chart);
    expect([cfg.e2eShapes, cfg.e2eContent, cfg.e2eOrdered, cfg.e2eDestinations]).toEqual([true, true, true, true]);
  });

  it('names a flag that is neither 1 nor 0', () => {
    expect(() => loadBenchConfig({ BENCH_E2E_SHAPES: 'yes' }, false)).toThrow('BENCH_E2E_SHAPES must be 1 or 0, got "yes"');
  });
});

describe("a variant's verdict against its target", () => {
  const rounds = (...ms: number[]): E2ePath =>
    pathOf(
      {},
      200,
      ms.map((m) => ({ worker: m / 10 })),
    );
  // each round 100 deliveries: worker m/10 s is m ms per delivery; the whole path's cpu is what the figure reads
  const withCpu = (p: E2ePath): E2ePath => ({ ...p, cpu: { worker: p.runs.reduce((a, r) => a + (r.cpu.worker ?? 0), 0) } });
  it.each([
    { name: 'within the target, rounds close', plain: [10, 10.02], variant: [10.03, 10.05], met: true },
    { name: 'over the target', plain: [10, 10.02], variant: [10.3, 10.32], met: false },
    { name: 'below the target but the rounds too far apart to tell', plain: [9, 11], variant: [8.5, 11.3], met: false },
  ])('$name: met $met', ({ plain, variant, met }) => {
    expect(contentVerdict(withCpu(rounds(...plain)), withCpu(rounds(...variant)), 0.05).met).toBe(met);
  });
});

describe("a variant's price on the worker's database path", () => {
  // each round runs plain and the variant back to back: the price is the mean of their differences
  const rounds = (pairs: Array<[number, number]>): DbPathRound[] =>
    pairs.flatMap(([plain, variant], i) =>
      (
        [
          ['plain', plain],
          ['filter', variant],
        ] as const
      ).map(([tag, ms]) => ({
        round: i + 1,
        tag,
        label: tag,
        events: 1000,
        perSecond: 1000,
        nodeMs: ms / 4,
        postgresMs: (ms * 3) / 4,
        foreignS: 0,
      })),
    );
  it.each([
    {
      name: 'a steady small difference',
      pairs: [
        [1.4, 1.43],
        [1.5, 1.53],
        [1.3, 1.34],
        [1.45, 1.47],
      ],
      added: 0.03,
      met: true,
    },
    {
      name: 'over the target',
      pairs: [
        [1.4, 1.5],
        [1.5, 1.6],
        [1.3, 1.4],
        [1.45, 1.55],
      ],
      added: 0.1,
      met: false,
    },
    {
      name: 'within the target, and so is its standard error',
      pairs: [
        [1.4, 1.48],
        [1.5, 1.49],
        [1.3, 1.36],
        [1.45, 1.44],
      ],
      added: 0.03,
      met: true,
    },
    {
      name: 'small on average but too scattered to tell',
      pairs: [
        [1.4, 1.2],
        [1.5, 1.8],
        [1.3, 1.1],
        [1.45, 1.65],
      ],
      added: 0.025,
      met: false,
    },
    { name: 'one round: no standard error', pairs: [[1.4, 1.41]], added: 0.01, met: false },
  ] as Array<{ name: string; pairs: Array<[number, number]>; added: number; met: boolean }>)(
    '$name: adds $added, met $met',
    ({ pairs, added, met }) => {
      const v = dbPathVerdict(rounds(pairs), 'filter', 0.05);
      expect(v.added).toBeCloseTo(added, 6);
      expect(v.met).toBe(met);
    },
  );
});

describe('the ordered rounds against the plain one (issue 41)', () => {
  // 200 deliveries per path: 1 s of worker + Temporal is 5 ms per delivery
  const plain = pathOf({ worker: 1, temporal: 1 });
  const hops = (...ms: number[]): E2ePath => ({ ...pathOf({ worker: 1 }, 100), hopsMs: ms });
  it.each([
    {
      name: 'within every bound',
      many: { ...pathOf({ worker: 1.2, temporal: 1.2 }), deliveriesPerS: 45 },
      oneKey: hops(8, 9, 10, 12, 30),
      met: true,
      expected: { throughputRatio: 0.9, cpuRatio: 1.2, ownCpuRatio: 1.2, hopP50Ms: 10, hopP99Ms: 30 },
    },
    {
      name: 'too slow with many keys',
      many: { ...pathOf({ worker: 1, temporal: 1 }), deliveriesPerS: 35 },
      oneKey: hops(8),
      met: false,
      expected: { throughputRatio: 0.7, cpuRatio: 1 },
    },
    {
      name: 'too much CPU per delivery, Temporal included',
      many: pathOf({ worker: 1, temporal: 1.8 }),
      oneKey: hops(8),
      met: false,
      expected: { throughputRatio: 1, cpuRatio: 1.4, ownCpuRatio: 1 },
    },
    { name: "one key's hop p50 at 15 ms", many: plain, oneKey: hops(15, 15, 14), met: false, expected: { hopP50Ms: 15 } },
    {
      name: 'a delivery of one key out of order',
      many: plain,
      oneKey: { ...hops(8, 9), outOfOrder: 1 },
      met: false,
      expected: { hopP50Ms: 8 },
    },
  ])('$name: met $met', ({ many, oneKey, met, expected }) => {
    const v = orderedVerdict(plain, many, oneKey);
    expect(v.met).toBe(met);
    for (const [k, x] of Object.entries(expected)) expect((v as unknown as Record<string, number>)[k], k).toBeCloseTo(x, 6);
    // one key: 100 deliveries in 4 s against plain's 200 in 4 s
    expect(v.oneKeyThroughputRatio).toBeCloseTo(0.5, 6);
  });

  it('reads the size of the ordered rounds from the environment', () => {
    const cfg = loadBenchConfig({ BENCH_E2E_ORDERED: '1', BENCH_ORDERED_KEYS: '20', BENCH_ORDERED_ONE_KEY_EVENTS: '10' }, false);
    expect([cfg.e2eOrdered, cfg.orderedKeys, cfg.orderedOneKeyEvents]).toEqual([true, 20, 10]);
    expect(loadBenchConfig({ BENCH_E2E_ORDERED: '0' }, false).e2eOrdered).toBe(false);
  });
});
