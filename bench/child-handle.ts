import { fork } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FromChild, LoadOptions, LoadResult, ToChild, UnitConfig, UnitRole, UnitStats } from './protocol.js';

const CHILD_ENTRY = fileURLToPath(new URL('./child.ts', import.meta.url));
export const LOG_DIR = fileURLToPath(new URL('../.data/bench/', import.meta.url));

/** BENCH_PROFILE=ingest,worker writes V8 CPU profiles of those units to .data/bench/ on exit. */
export function profileFlags(role: string): string[] {
  const wanted = (process.env.BENCH_PROFILE ?? '').split(',').map((s) => s.trim());
  return wanted.includes(role) ? ['--cpu-prof', '--cpu-prof-dir', LOG_DIR, '--cpu-prof-name', `${role}.cpuprofile`] : [];
}

export interface ChildHandle {
  role: UnitRole;
  pid: number;
  port: number | null;
  load(options: LoadOptions): Promise<LoadResult>;
  stats(): Promise<UnitStats>;
  resetPeak(): void;
  stop(): Promise<void>;
}

/**
 * Forks bench/child.ts (through tsx) hosting one unit and waits until it is ready. Its logs go to
 * .data/bench/<role>.log: pino still serializes every line, as in production, but the
 * benchmark's own output stays readable.
 */
export async function forkUnit(role: UnitRole, config: UnitConfig, startTimeoutMs = 120_000): Promise<ChildHandle> {
  mkdirSync(LOG_DIR, { recursive: true });
  const logFd = openSync(path.join(LOG_DIR, `${role}.log`), 'w');
  const child = fork(CHILD_ENTRY, [role], {
    execArgv: ['--import', 'tsx', ...profileFlags(role)],
    stdio: ['ignore', logFd, logFd, 'ipc'],
  });
  closeSync(logFd);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not fork the ${role} unit`);

  let nextId = 1;
  const waiting = new Map<number, (msg: FromChild) => void>();
  let onReady: ((port: number | null) => void) | undefined;
  let onFailure: ((err: Error) => void) | undefined;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  child.on('message', (msg: FromChild) => {
    if (msg.type === 'ready') onReady?.(msg.port);
    else if (msg.type === 'failed') onFailure?.(new Error(`${role} unit failed: ${msg.message}`));
    else waiting.get(msg.id)?.(msg);
  });
  void exited.then((code) => onFailure?.(new Error(`${role} unit exited (code ${code}); see ${LOG_DIR}${role}.log`)));

  const post = (msg: ToChild): void => {
    if (child.connected) child.send(msg);
  };
  const ask = <T extends FromChild>(build: (id: number) => ToChild): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, (m) => {
        waiting.delete(id);
        resolve(m as T);
      });
      onFailure = reject;
      post(build(id));
    });

  const port = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${role} unit did not start within ${startTimeoutMs} ms`)), startTimeoutMs);
    onReady = (p) => {
      clearTimeout(timer);
      resolve(p);
    };
    onFailure = (err) => {
      clearTimeout(timer);
      reject(err);
    };
    post({ type: 'start', role, config });
  }).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });

  return {
    role,
    pid,
    port,
    async load(options) {
      const m = await ask<Extract<FromChild, { type: 'load-result' }>>((id) => ({ type: 'load', id, options }));
      return m.result;
    },
    async stats() {
      const m = await ask<Extract<FromChild, { type: 'stats' }>>((id) => ({ type: 'stats', id }));
      return m.stats;
    },
    resetPeak: () => post({ type: 'reset-peak' }),
    async stop() {
      onFailure = undefined;
      if (child.exitCode !== null || child.signalCode !== null) return;
      post({ type: 'stop' });
      // graceful first (the worker drains its activities); a child that hangs is killed
      const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
