import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { freePort } from '../src/dev/ports.js';
import { LOG_DIR, profileFlags } from './child-handle.js';

// The service's own processes as the image runs them: the compiled build, `node dist/cmd/cli.js
// <command>`, configured through the environment only. The bench does not import anything of
// src/processes or src/cmd: what it measures is the CLI an operator deploys.

const ROOT = fileURLToPath(new URL('../', import.meta.url));
// resolved through package.json "bin", as the fault suite does, so a change of the build layout
// does not break the bench
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
export const CLI = path.join(ROOT, Object.values(pkg.bin)[0] ?? 'dist/cmd/cli.js');

/** The image's environment (Dockerfile ENV) that changes how Node runs, read from the Dockerfile. */
const IMAGE_ENV_KEYS = ['NODE_ENV', 'NODE_OPTIONS', 'MALLOC_ARENA_MAX'] as const;

/**
 * What the image sets of IMAGE_ENV_KEYS (production mode, source maps, malloc arenas), parsed from
 * the Dockerfile's ENV instructions so that the bench runs what a pod runs. The bench's own
 * NODE_OPTIONS (tsx) must not leak in.
 */
export function imageEnv(): Record<string, string> {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const out: Record<string, string> = {};
  for (const line of dockerfile.split('\n')) {
    if (!line.startsWith('ENV ')) continue;
    for (const m of line.slice(4).matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g)) {
      const [, key, value] = m;
      if (key && value && (IMAGE_ENV_KEYS as readonly string[]).includes(key)) out[key] = value.replace(/^"|"$/g, '');
    }
  }
  return out;
}

interface ChartComponent {
  settings?: Record<string, unknown>;
  nodeFlags?: unknown;
  consumeQueue?: unknown;
}

/** A component's part of charts/webhook-fanout/values.yaml, read once: what a deployment runs. */
let chartValues: Record<string, ChartComponent | undefined> | undefined;
function chartComponent(command: CliCommand): ChartComponent | undefined {
  chartValues ??= parse(readFileSync(path.join(ROOT, 'charts/webhook-fanout/values.yaml'), 'utf8')) as typeof chartValues;
  return chartValues?.[command];
}

/** The chart's default shape: `worker.consumeQueue` (the worker reads the queue, no consumer Deployment). */
export function chartWorkerConsumesQueue(): boolean {
  return chartComponent('worker')?.consumeQueue === true;
}

/** What the Helm chart sets for a component on top of the image: its NODE_OPTIONS (V8 heap limits). */
export function chartEnv(command: CliCommand): Record<string, string> {
  const nodeOptions = chartComponent(command)?.settings?.NODE_OPTIONS;
  return typeof nodeOptions === 'string' ? { NODE_OPTIONS: nodeOptions } : {};
}

/**
 * node's own flags before the CLI for a component: `overrides` (the bench's BENCH_<PROCESS>_NODE_FLAGS)
 * if it names the component, else the chart's `<component>.nodeFlags` (V8 flags that NODE_OPTIONS
 * refuses, such as --optimize-for-size).
 */
export function nodeFlagsFor(command: CliCommand, overrides: Partial<Record<CliCommand, string[]>> = {}): string[] {
  const flags = overrides[command] ?? chartComponent(command)?.nodeFlags;
  return Array.isArray(flags) ? flags.filter((f): f is string => typeof f === 'string') : [];
}

export type CliCommand = 'ingest' | 'consumer' | 'worker';

export interface CliHandle {
  /** the CPU group it is counted in */
  role: string;
  pid: number;
  /** RSS now, MB (/proc VmRSS) */
  rssMb(): number;
  /** highest RSS sampled (every 100 ms) since the last resetPeak(), MB */
  sampledPeakMb(): number;
  /** the kernel's peak RSS over the whole life of the process, start-up included (VmHWM), MB */
  lifetimePeakMb(): number;
  resetPeak(): void;
  /** V8 heap and external memory now, from its /metrics (prom-client's default metrics), MB */
  heap(): Promise<HeapFigures | undefined>;
  /** its /metrics now, undefined when it does not answer */
  scrape(): Promise<string | undefined>;
  stop(): Promise<void>;
}

export interface HeapFigures {
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  /** time spent in garbage collection over the process's life, s (what a tight heap limit costs) */
  gcSeconds: number;
}

/** Sum of every sample of a metric (over its labels, or those whose labels include `label`), in its own unit. */
function metricSum(text: string, name: string, label?: string): number | undefined {
  let sum: number | undefined;
  for (const m of text.matchAll(new RegExp(`^webhook_fanout_${name}(\\{[^}]*\\})? ([0-9.e+-]+)$`, 'gm'))) {
    if (label === undefined || (m[1] ?? '').includes(label)) sum = (sum ?? 0) + Number(m[2]);
  }
  return sum;
}

/**
 * Workflow starts by how their first task reached the worker (`start` label of
 * webhook_fanout_workflows_started_total) in a /metrics text: eager and through the task queue.
 */
export function workflowStarts(text: string | undefined): { eager: number; taskQueue: number } | undefined {
  if (text === undefined) return undefined;
  const count = (mode: string): number => metricSum(text, 'workflows_started_total', `start="${mode}"`) ?? 0;
  return { eager: count('eager'), taskQueue: count('task_queue') };
}

/** Peak RSS over the life of any process (VmHWM), MB; 0 once it has exited. */
export function lifetimePeakMbOf(pid: number): number {
  return statusKb(pid, 'VmHWM') / 1024;
}

const mb = (bytes: number | undefined): number | undefined => (bytes === undefined ? undefined : bytes / 1024 / 1024);

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0; // exited meanwhile
  }
}

async function waitReady(managementPort: number, role: string, exited: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited()) throw new Error(`${role} exited during start-up; see ${LOG_DIR}${role}.log`);
    try {
      const res = await fetch(`http://127.0.0.1:${managementPort}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${role} not ready within ${timeoutMs} ms; see ${LOG_DIR}${role}.log`);
}

/**
 * Spawns `node <nodeFlagsFor(command, opts.nodeFlags)> dist/cmd/cli.js <command>`
 * with `env` on top of the image's and the chart's environment, waits for /readyz, and samples its
 * RSS from /proc every 100 ms. Logs go to .data/bench/<role>.log. BENCH_PROFILE=<role> adds
 * --cpu-prof (the profile is written when it stops).
 */
export async function spawnCli(
  command: CliCommand,
  role: string,
  env: Record<string, string>,
  opts: {
    nodeFlags?: Partial<Record<CliCommand, string[]>>;
    startTimeoutMs?: number;
    /** another build's CLI (bench/baseline-build.ts); default this checkout's */
    cli?: string;
  } = {},
): Promise<CliHandle> {
  mkdirSync(LOG_DIR, { recursive: true });
  const managementPort = await freePort();
  const logFd = openSync(path.join(LOG_DIR, `${role}.log`), 'w');
  const child = spawn(process.execPath, [...profileFlags(role), ...nodeFlagsFor(command, opts.nodeFlags), opts.cli ?? CLI, command], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      ...imageEnv(),
      ...chartEnv(command),
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: 'us-east-1',
      ...env,
      MANAGEMENT_PORT: String(managementPort),
    },
    stdio: ['ignore', logFd, logFd],
  });
  closeSync(logFd);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not spawn ${role}`);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const hasExited = (): boolean => child.exitCode !== null || child.signalCode !== null;

  let peakKb = 0;
  const sampler = setInterval(() => {
    peakKb = Math.max(peakKb, statusKb(pid, 'VmRSS'));
  }, 100);
  sampler.unref();

  try {
    await waitReady(managementPort, role, hasExited, opts.startTimeoutMs ?? 120_000);
  } catch (err) {
    clearInterval(sampler);
    child.kill('SIGKILL');
    throw err;
  }
  let lastHwmKb = 0;
  const scrape = async (): Promise<string | undefined> => {
    try {
      const res = await fetch(`http://127.0.0.1:${managementPort}/metrics`, { signal: AbortSignal.timeout(5_000) });
      return res.ok ? await res.text() : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    role,
    pid,
    rssMb: () => statusKb(pid, 'VmRSS') / 1024,
    sampledPeakMb: () => Math.max(peakKb, statusKb(pid, 'VmRSS')) / 1024,
    lifetimePeakMb: () => {
      if (!hasExited()) lastHwmKb = statusKb(pid, 'VmHWM');
      return lastHwmKb / 1024;
    },
    resetPeak: () => {
      peakKb = statusKb(pid, 'VmRSS');
    },
    scrape,
    async heap() {
      try {
        const text = await scrape();
        if (text === undefined) return undefined;
        const heapUsedMb = mb(metricSum(text, 'nodejs_heap_size_used_bytes'));
        const heapTotalMb = mb(metricSum(text, 'nodejs_heap_size_total_bytes'));
        const externalMb = mb(metricSum(text, 'nodejs_external_memory_bytes'));
        const gcSeconds = metricSum(text, 'nodejs_gc_duration_seconds_sum') ?? 0;
        if (heapUsedMb === undefined || heapTotalMb === undefined || externalMb === undefined) return undefined;
        return { heapUsedMb, heapTotalMb, externalMb, gcSeconds };
      } catch {
        return undefined;
      }
    },
    async stop() {
      clearInterval(sampler);
      if (hasExited()) return;
      lastHwmKb = statusKb(pid, 'VmHWM');
      // graceful (SIGTERM drains, as in a pod); one that hangs is killed
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
