// BENCH_SCALE_OUT=1: one worker process against two, on the same Temporal, with one-endpoint
// events (the case where the worker's CPU per delivery is highest). The consumers scale with the
// workers, one consumer process per worker at BENCH_CONSUMER_CONCURRENCY each (the setting's
// maximum is 10: a deployment adds consumer replicas), so each worker is offered what the single
// one was; with BENCH_WORKER_CONSUMES_QUEUE each worker reads the queue itself. Per run: throughput, and the cores each component kept busy, which
// shows where the limit is (a component near one core, or the machine's cores all busy).
import type { BenchConfig } from './config.js';
import { runReal, type E2eBenchDeps, type E2eRun } from './e2e-bench.js';
import { median } from './stats.js';

export interface ScaleOutSetup {
  /** worker processes running, each with its own role (worker, worker-2) */
  workers: number;
  /** consumer processes (consumer, consumer-2); 0 when the workers consume the queue */
  consumers: number;
  /** CONSUMER_CONCURRENCY of each consumer (or of each worker consuming the queue) */
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
  /** of those, processes outside the bench (other users of the machine) */
  foreignCores: number;
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
  let foreign = 0;
  for (const r of runs) {
    foreign += r.foreignCpuS;
    busy += r.foreignCpuS;
    for (const [g, s] of Object.entries(r.cpu)) {
      cores[g] = (cores[g] ?? 0) + s / wall;
      busy += s;
    }
  }
  return {
    setup,
    runs,
    deliveriesPerS: median(runs.map((r) => r.deliveriesPerS)),
    cores,
    machineCores: busy / wall,
    foreignCores: foreign / wall,
  };
}

/** Rounds of one worker and two, the order mirrored every other round; each setup warmed up first. */
export async function runScaleOut(d: ScaleOutDeps): Promise<ScaleOutFigures> {
  const { cfg, e2e } = d;
  const setup = (workers: number): ScaleOutSetup => ({
    workers,
    consumers: cfg.workerConsumesQueue ? 0 : workers,
    consumerConcurrency: cfg.consumerConcurrency,
  });
  const setups: [ScaleOutSetup, ScaleOutSetup] = [setup(1), setup(2)];
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
