import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/dev/ports.js';
import { sleep } from '../support/wait.js';

// The fault suite's processes: the compiled build's commands, launched, SIGKILLed and waited for.

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// resolved through package.json "bin", so a change of the build layout does not break the suite
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
const CLI = path.join(ROOT, Object.values(pkg.bin)[0] ?? 'dist/cmd/cli.js');

export const log = (m: string) => process.stdout.write(`[faults] ${m}\n`);

export interface Proc {
  name: string;
  cmd: string;
  env: Record<string, string>;
  managementPort: number;
  child?: ChildProcess;
  tail: string[];
}

export function launch(p: Proc): void {
  const child = spawn(process.execPath, [CLI, p.cmd], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      LOG_LEVEL: process.env.FAULTS_LOG_LEVEL ?? 'warn',
      ...p.env,
      MANAGEMENT_PORT: String(p.managementPort),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const keep = (b: Buffer) => {
    if (process.env.FAULTS_LOG_DIR) appendFileSync(`${process.env.FAULTS_LOG_DIR}/${p.name}.log`, b);
    p.tail.push(b.toString());
    if (p.tail.length > 200) p.tail.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  p.child = child;
}

export async function sigkill(p: Proc): Promise<void> {
  const c = p.child;
  if (!c || c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise((r) => c.once('exit', r));
  c.kill('SIGKILL');
  await exited;
}

async function ready(p: Proc): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${p.managementPort}/readyz`, { signal: AbortSignal.timeout(3_000) });
    return res.status === 200;
  } catch {
    return false;
  }
}

/** ms until /readyz says 200, from now */
export async function timeToReady(p: Proc, limitMs = 90_000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    if (await ready(p)) return Date.now() - started;
    if (p.child && p.child.exitCode !== null) throw new Error(`${p.name} exited (${p.child.exitCode}): ${p.tail.join('').slice(-2000)}`);
    await sleep(200);
  }
  throw new Error(`${p.name} not ready within ${limitMs} ms: ${p.tail.join('').slice(-2000)}`);
}

/** The environment every process of the build shares: its Postgres, Temporal (own task queue) and SNS/SQS emulator. */
export const commonEnv = (c: {
  dbUrl: string;
  temporalAddress: string;
  taskQueue: string;
  awsEndpoint: string;
}): Record<string, string> => ({
  DATABASE_URL: c.dbUrl,
  TEMPORAL_ADDRESS: c.temporalAddress,
  TEMPORAL_TASK_QUEUE: c.taskQueue,
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  AWS_ENDPOINT_URL: c.awsEndpoint,
});

/** Launches each [name, command, env] into `procs` and waits until every one is ready. */
export async function startAll(procs: Record<string, Proc>, defs: Array<[string, string, Record<string, string>]>): Promise<void> {
  for (const [name, cmd, env] of defs) {
    procs[name] = { name, cmd, env, managementPort: await freePort(), tail: [] };
    launch(procs[name]);
  }
  for (const p of Object.values(procs)) await timeToReady(p);
}

/** SIGKILLs p, launches it again after `afterMs`, and resolves with the ms it took to be ready. */
export async function restart(p: Proc, afterMs = 500): Promise<number> {
  await sigkill(p);
  await sleep(afterMs);
  launch(p);
  return timeToReady(p);
}
