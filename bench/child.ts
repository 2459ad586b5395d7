// Entry point of the helper processes run.ts forks (load generator, baseline, bare worker):
// hosts one unit and answers the parent over IPC.
import type { FromChild, ToChild, UnitConfig, UnitRole } from './protocol.js';
import { startBareWorkerUnit } from './units/bare-worker.js';
import { startBaselineUnit } from './units/baseline.js';
import { startLoadUnit } from './units/load.js';
import type { Unit } from './units/unit.js';

const MB = 1024 * 1024;

function send(msg: FromChild): void {
  process.send?.(msg);
}

function startUnit(role: UnitRole, cfg: UnitConfig): Promise<Unit> | Unit {
  switch (role) {
    case 'baseline':
      return startBaselineUnit(cfg);
    case 'bare-worker':
      return startBareWorkerUnit(cfg);
    case 'load':
      return startLoadUnit();
  }
}

// sampled, because RSS peaks between the parent's questions are what matter
let peakRss = process.memoryUsage.rss();
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
}, 100);
sampler.unref();

let unit: Unit | undefined;
let stopping: Promise<void> | undefined;

/** Stops the unit gracefully, then exits: a leaked handle must not keep a child alive. */
function stop(): Promise<void> {
  stopping ??= (async () => {
    clearInterval(sampler);
    try {
      await unit?.stop();
      process.exit(0);
    } catch (err) {
      process.stderr.write(`stopping the unit failed: ${String(err)}\n`);
      process.exit(1);
    }
  })();
  return stopping;
}

async function handle(msg: ToChild): Promise<void> {
  switch (msg.type) {
    case 'start':
      unit = await startUnit(msg.role, msg.config);
      send({ type: 'ready', port: unit.port });
      return;
    case 'load': {
      if (!unit?.load) throw new Error('this unit is not a load generator');
      send({ type: 'load-result', id: msg.id, result: await unit.load(msg.options) });
      return;
    }
    case 'stats': {
      const rss = process.memoryUsage.rss();
      peakRss = Math.max(peakRss, rss);
      send({ type: 'stats', id: msg.id, stats: { peakRssMb: peakRss / MB, rssMb: rss / MB } });
      return;
    }
    case 'reset-peak':
      peakRss = process.memoryUsage.rss();
      return;
    case 'stop':
      await stop();
      return;
  }
}

process.on('message', (msg: ToChild) => {
  handle(msg).catch((err: unknown) => {
    send({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  });
});
// an orphan (the parent died) must not outlive the benchmark
process.on('disconnect', () => void stop());
