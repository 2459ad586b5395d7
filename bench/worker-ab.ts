// The worker's CPU per workflow, variants side by side: the production worker with the
// prebuilt workflow bundle and activities that answer at once (bench/worker-ab-child.ts), one
// child process per variant and round, variants alternated round by round (A B, B A, ...) on one
// Temporal dev server. A variant is an environment for the worker child (a NODE_OPTIONS, a
// setting), so the figures say what the SDK and the workflow cost, without Postgres or HTTP.
//   npm run build && WORKER_AB_VARIANTS='base;semi16:NODE_OPTIONS=--max-semi-space-size=16' npx tsx bench/worker-ab.ts
// WORKER_AB_VARIANTS: `name[:K=V,K=V]` separated by `;` (default `base`); WORKER_AB_WORKFLOWS
// (400 per run), WORKER_AB_ROUNDS (4), WORKER_AB_ENDPOINTS (1 per event; a variant may set its own,
// e.g. `none:WORKER_AB_ENDPOINTS=0`: prepare and finishEvent only, one local activity fewer; or
// WORKER_AB_BUNDLE=<path>: another build of the workflow bundle than dist/workflow-bundle.js; or
// WORKER_AB_GLOBALS=swap: the SDK's full swap of the sandbox's globals instead of the locked ones; or
// WORKER_AB_NODE_ARGS='--flag ...': node flags NODE_OPTIONS does not accept).
// Per variant: medians over rounds of CPU ms per workflow of the worker process (and by thread
// name from /proc/<pid>/task: threads that exited meanwhile are `exited`) and of the server.
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { startTemporalDevServer } from '../src/dev/temporal-dev-server.js';
import { fanoutInput } from '../src/temporal/fanout-input.js';
import { WORKFLOW_TYPE } from '../src/workflows/names.js';
import type { WebhookFanoutWorkflow } from '../src/workflows/fanout.js';
import { chartEnv, imageEnv } from './cli-unit.js';
import { cpuSnapshot, cpuUsage } from './cpu.js';
import { mapLimit, median } from './stats.js';

const CHILD = fileURLToPath(new URL('./worker-ab-child.ts', import.meta.url));
const TICKS_PER_S = 100;
const workflows = Number(process.env.WORKER_AB_WORKFLOWS ?? 400);
const rounds = Number(process.env.WORKER_AB_ROUNDS ?? 4);
const endpoints = Number(process.env.WORKER_AB_ENDPOINTS ?? 1);
/** the consumer's default concurrency of starts */
const CONCURRENCY = 10;
const WARMUP = 50;

interface Variant {
  name: string;
  env: Record<string, string>;
}

function parseVariants(spec: string): Variant[] {
  return spec
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((s) => {
      const [name = s, rest = ''] = s.split(/:(.*)/s);
      const env: Record<string, string> = {};
      for (const kv of rest.split(',').filter((x) => x.includes('='))) {
        const i = kv.indexOf('=');
        env[kv.slice(0, i)] = kv.slice(i + 1);
      }
      return { name, env };
    });
}

/** CPU ticks of each live thread of `pid` by thread name, and of the whole process (exited threads included). */
function threadTicks(pid: number): { byName: Map<string, number>; total: number } {
  const ticksOf = (stat: string): { comm: string; ticks: number } => {
    const close = stat.lastIndexOf(')');
    const f = stat.slice(close + 2).split(' ');
    return { comm: stat.slice(stat.indexOf('(') + 1, close), ticks: Number(f[11]) + Number(f[12]) };
  };
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const t = ticksOf(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
      const name = t.comm.replace(/[-\d]+$/, '') || t.comm;
      byName.set(name, (byName.get(name) ?? 0) + t.ticks);
    } catch {
      // the thread exited meanwhile: its CPU is in the process's total
    }
  }
  return { byName, total: ticksOf(readFileSync(`/proc/${pid}/stat`, 'utf8')).ticks };
}

interface Run {
  workerMs: number;
  temporalMs: number;
  threadsMs: Record<string, number>;
  foreignS: number;
  seconds: number;
}

async function startChild(v: Variant, address: string, taskQueue: string): Promise<ChildProcess> {
  const base = { ...imageEnv(), ...chartEnv('worker') };
  const nodeOptions = [base.NODE_OPTIONS, v.env.NODE_OPTIONS].filter(Boolean).join(' ');
  const child = fork(CHILD, [address, taskQueue, v.env.WORKER_AB_ENDPOINTS ?? String(endpoints)], {
    // V8 flags that NODE_OPTIONS refuses (e.g. --single-threaded-gc) go on the command line
    execArgv: ['--import', 'tsx', ...(v.env.WORKER_AB_NODE_ARGS ?? '').split(' ').filter(Boolean)],
    env: { ...process.env, ...base, ...v.env, NODE_OPTIONS: nodeOptions, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`worker child ${v.name} exited (${code})`)));
  });
  return child;
}

async function runWorkflows(client: Client, taskQueue: string, tag: string, n: number): Promise<void> {
  await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    CONCURRENCY,
    async (i) => {
      const handle = await client.workflow.start<typeof WebhookFanoutWorkflow>(WORKFLOW_TYPE, {
        taskQueue,
        workflowId: `${tag}-${i}`,
        args: [fanoutInput(`${tag}-${i}`)],
      });
      await handle.result();
    },
  );
}

async function measure(v: Variant, r: number, client: Client, address: string): Promise<Run> {
  const taskQueue = `worker-ab-${v.name}-${r}-${Date.now()}`;
  const child = await startChild(v, address, taskQueue);
  const pid = child.pid ?? 0;
  try {
    await runWorkflows(client, taskQueue, `${taskQueue}-warmup`, WARMUP);
    const group = (e: { comm: string }): string => (e.comm.startsWith('temporal') ? 'temporal' : 'other');
    const before = cpuSnapshot(group);
    const threadsBefore = threadTicks(pid);
    const t0 = performance.now();
    await runWorkflows(client, taskQueue, taskQueue, workflows);
    const seconds = (performance.now() - t0) / 1000;
    const threadsAfter = threadTicks(pid);
    const u = cpuUsage(before, cpuSnapshot(group));
    const perWf = (ticks: number): number => (ticks / TICKS_PER_S / workflows) * 1000;
    const threadsMs: Record<string, number> = {};
    let live = 0;
    for (const [name, t] of threadsAfter.byName) {
      const d = Math.max(0, t - (threadsBefore.byName.get(name) ?? 0));
      live += d;
      threadsMs[name] = perWf(d);
    }
    const total = threadsAfter.total - threadsBefore.total;
    threadsMs.exited = perWf(Math.max(0, total - live));
    return { workerMs: perWf(total), temporalMs: ((u.groups.temporal ?? 0) * 1000) / workflows, threadsMs, foreignS: u.foreignS, seconds };
  } finally {
    child.send('stop');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

const variants = parseVariants(process.env.WORKER_AB_VARIANTS ?? 'base');
const server = await startTemporalDevServer();
const connection = await Connection.connect({ address: server.address });
const client = new Client({ connection, namespace: server.namespace });
try {
  const runs = new Map<string, Run[]>(variants.map((v) => [v.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
      const run = await measure(v, r, client, server.address);
      runs.get(v.name)?.push(run);
      console.error(
        `round ${r + 1}/${rounds} ${v.name.padEnd(12)} worker ${run.workerMs.toFixed(2)} temporal ${run.temporalMs.toFixed(2)} ms/wf  ${(workflows / run.seconds).toFixed(0)} wf/s  others ${run.foreignS.toFixed(1)} CPU s`,
      );
    }
  }
  console.log(
    `${workflows} workflows per run (${endpoints} endpoint(s) unless the variant says), ${rounds} rounds alternating; CPU ms per workflow, medians`,
  );
  const threadNames = [...new Set([...runs.values()].flatMap((rs) => rs.flatMap((x) => Object.keys(x.threadsMs))))].sort();
  console.log(['variant'.padEnd(12), 'worker', 'temporal', ...threadNames, 'others CPU s'].join('  '));
  const summary: Record<string, Record<string, number>> = {};
  for (const v of variants) {
    const rs = runs.get(v.name) ?? [];
    const m = (f: (x: Run) => number): number => Number(median(rs.map(f)).toFixed(2));
    const row: Record<string, number> = { worker: m((x) => x.workerMs), temporal: m((x) => x.temporalMs) };
    for (const t of threadNames) row[t] = m((x) => x.threadsMs[t] ?? 0);
    summary[v.name] = row;
    const foreign = rs.reduce((a, x) => a + x.foreignS, 0);
    console.log([v.name.padEnd(12), ...Object.values(row).map((x) => x.toFixed(2)), foreign.toFixed(1)].join('  '));
  }
  console.log(JSON.stringify(summary));
} finally {
  await connection.close();
  await server.stop();
}
