// What eager workflow start would buy: the same workflows started normally and with
// requestEagerStart, side by side in alternating rounds, on the Temporal dev server the main bench
// uses. Eager start hands the first workflow task back in the start call's answer, to a worker in
// the starting process on the same NativeConnection, which skips the task queue round trip; here
// the starter and the worker share one process, as a consumer hosting a worker would.
//   npx tsx bench/eager-start.ts        (EAGER_WORKFLOWS=300 per run, EAGER_ROUNDS=2)
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startTemporalDevServer } from '../src/dev/temporal-dev-server.js';
import { cpuSnapshot, cpuUsage } from './cpu.js';
import { mapLimit, median } from './stats.js';
import type { StepsWorkflow, StepActivities } from './eager-workflow.js';

const TASK_QUEUE = 'BENCH_EAGER';
const workflows = Number(process.env.EAGER_WORKFLOWS ?? 300);
const rounds = Number(process.env.EAGER_ROUNDS ?? 2);
/** the consumer's default concurrency of starts */
const CONCURRENCY = 10;

Runtime.install({ logger: new DefaultLogger('WARN') });
const server = await startTemporalDevServer();
const connection = await NativeConnection.connect({ address: server.address });
// a Client on the worker's NativeConnection: the only kind eager start works with
const client = new Client({ connection, namespace: server.namespace });
const activities: StepActivities = { step: (n) => Promise.resolve(n) };
const worker = await Worker.create({
  connection,
  namespace: server.namespace,
  taskQueue: TASK_QUEUE,
  workflowsPath: fileURLToPath(new URL('./eager-workflow.ts', import.meta.url)),
  activities,
});
const running = worker.run();
const group = (e: { pid: number; comm: string }): string =>
  e.pid === process.pid ? 'starter+worker' : e.comm.startsWith('temporal') ? 'temporal' : 'other';

interface Run {
  temporalMs: number;
  processMs: number;
  foreignS: number;
  seconds: number;
}

async function run(eager: boolean, steps: number, n: number): Promise<Run> {
  const before = cpuSnapshot(group);
  const t0 = performance.now();
  const tag = `${eager ? 'eager' : 'normal'}-${steps}-${Date.now()}`;
  await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    CONCURRENCY,
    async (i) => {
      const handle = await client.workflow.start<typeof StepsWorkflow>('StepsWorkflow', {
        taskQueue: TASK_QUEUE,
        workflowId: `${tag}-${i}`,
        args: [steps],
        requestEagerStart: eager,
      });
      await handle.result();
    },
  );
  const u = cpuUsage(before, cpuSnapshot(group));
  return {
    temporalMs: ((u.groups.temporal ?? 0) * 1000) / n,
    processMs: ((u.groups['starter+worker'] ?? 0) * 1000) / n,
    foreignS: u.foreignS,
    seconds: (performance.now() - t0) / 1000,
  };
}

try {
  await run(false, 3, 50);
  await run(true, 3, 50);
  console.log(
    `Eager workflow start, ${workflows} workflows per run, ${rounds} alternating rounds, ${CONCURRENCY} concurrent starts; CPU ms per workflow (medians)`,
  );
  console.log('local activities  start    temporal  starter+worker   total  workflows/s  others CPU s');
  const summary: Record<string, number> = {};
  for (const steps of [0, 3]) {
    const byMode: Record<'normal' | 'eager', Run[]> = { normal: [], eager: [] };
    for (let r = 0; r < rounds; r++) {
      for (const eager of r % 2 === 0 ? [false, true] : [true, false])
        byMode[eager ? 'eager' : 'normal'].push(await run(eager, steps, workflows));
    }
    const totals: Record<string, number> = {};
    for (const mode of ['normal', 'eager'] as const) {
      const runs = byMode[mode];
      const t = median(runs.map((x) => x.temporalMs));
      const p = median(runs.map((x) => x.processMs));
      totals[mode] = t + p;
      summary[`steps${steps}_${mode}_temporal_ms`] = Number(t.toFixed(2));
      summary[`steps${steps}_${mode}_total_ms`] = Number((t + p).toFixed(2));
      const rate = median(runs.map((x) => workflows / x.seconds));
      const foreign = runs.reduce((a, x) => a + x.foreignS, 0);
      console.log(
        `${String(steps).padStart(16)}  ${mode.padEnd(6)} ${t.toFixed(2).padStart(9)} ${p.toFixed(2).padStart(15)} ${(t + p).toFixed(2).padStart(7)} ${rate.toFixed(0).padStart(12)} ${foreign.toFixed(1).padStart(13)}`,
      );
    }
    summary[`steps${steps}_eager_ratio`] = Number(((totals.eager ?? 0) / (totals.normal ?? 1)).toFixed(3));
    console.log(`${' '.repeat(18)}eager / normal, total CPU: ${summary[`steps${steps}_eager_ratio`]}`);
  }
  console.log(JSON.stringify(summary));
} finally {
  worker.shutdown();
  await running;
  await connection.close();
  await server.stop();
}
