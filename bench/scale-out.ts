// BENCH_SCALE_OUT=1: one worker process against two, on the same Temporal, with one-endpoint
// events (the case where the worker's CPU per delivery is highest). The consumer's concurrent
// starts scale with the workers (BENCH_CONSUMER_CONCURRENCY per worker), so each worker is offered
// what the single one was. Per run: throughput, and the cores each component kept busy, which
// shows where the limit is (a component near one core, or the machine's cores all busy).
import type { BenchConfig } from './config.js';
import { runReal, type E2eBenchDeps, type E2eRun } from './e2e-bench.js';
import { median } from './stats.js';

export interface ScaleOutSetup {
  /** worker processes running, each with its own role (worker, worker-2) */
  workers: number;
  /** the consumer's CONSUMER_CONCURRENCY (with the worker consuming the queue: each worker's) */
  consumerConcurrency: number;
}

export interface ScaleOutCase {
  setup: ScaleOutSetup;
  runs: E2eRun[];
  deliveriesPerS: number;
  /** CPU s per wall s by component over all its runs: cores kept busy */
  cores: Record<string, number>;
  /** cores the whole machine kept busy, every process included */
  machineCores: number;
}

export interface ScaleOutFigures {
  one: ScaleOutCase;
  two: ScaleOutCase;
  /** deliveries/s with two workers over deliveries/s with one */
  ratio: number;
}

export interface ScaleOutDeps {
  e2e: E2eBenchDeps;
  cfg: BenchConfig;
  /** starts the processes of a setup (workers and, unless the worker consumes the queue, a consumer) */
  start(setup: ScaleOutSetup): Promise<{ stop(): Promise<void> }>;
}

function caseOf(setup: ScaleOutSetup, runs: E2eRun[]): ScaleOutCase {
  const wall = runs.reduce((a, r) => a + r.wallS, 0);
  const cores: Record<string, number> = {};
  let busy = 0;
  for (const r of runs) {
    busy += r.foreignCpuS;
    for (const [g, s] of Object.entries(r.cpu)) {
      cores[g] = (cores[g] ?? 0) + s / wall;
      busy += s;
    }
  }
  return { setup, runs, deliveriesPerS: median(runs.map((r) => r.deliveriesPerS)), cores, machineCores: busy / wall };
}

/** Rounds of one worker and two, the order mirrored every other round; each setup warmed up first. */
export async function runScaleOut(d: ScaleOutDeps): Promise<ScaleOutFigures> {
  const { cfg, e2e } = d;
  const setups: [ScaleOutSetup, ScaleOutSetup] = [
    { workers: 1, consumerConcurrency: cfg.consumerConcurrency },
    { workers: 2, consumerConcurrency: cfg.consumerConcurrency * (cfg.workerConsumesQueue ? 1 : 2) },
  ];
  const runs: [E2eRun[], E2eRun[]] = [[], []];
  for (let round = 0; round < cfg.e2eRounds; round++) {
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const setup = setups[i] as ScaleOutSetup;
      const running = await d.start(setup);
      try {
        if (cfg.e2eWarmupEvents > 0) await runReal(e2e, 1, cfg.e2eWarmupEvents);
        const r = await runReal(e2e, 1, cfg.scaleOutEvents);
        runs[i]?.push(r);
        e2e.log(
          `scale-out: round ${round + 1}/${cfg.e2eRounds}, ${setup.workers} worker(s): ${r.deliveriesPerS.toFixed(0)} deliveries/s (${r.deliveries} in ${r.seconds.toFixed(2)} s)`,
        );
      } finally {
        await running.stop();
      }
    }
  }
  const one = caseOf(setups[0], runs[0]);
  const two = caseOf(setups[1], runs[1]);
  return { one, two, ratio: two.deliveriesPerS / one.deliveriesPerS };
}
