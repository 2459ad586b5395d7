import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { createOutputTail, describeExit } from '../../src/dev/output-tail.js';
import { waitForPort } from '../../src/dev/ports.js';

/**
 * Runs scripts/tools/brokers.sh for one broker: a no-op when it is provisioned (the background
 * queue did it), else the download or the install, which the caller then waits for.
 */
export function provisionBroker(broker: 'kafka' | 'rabbitmq' | 'nats'): void {
  execFileSync('bash', ['scripts/tools/brokers.sh', broker], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A broker's server process, started and stopped by a test (never the system's service). */
export interface BrokerProcess {
  /** SIGTERM, then SIGKILL after graceMs; resolves once it exited */
  stop(graceMs?: number): Promise<void>;
  /** the end of its output, for an error */
  output(): string;
}

/**
 * Spawns the server and resolves when `port` accepts connections; rejects, with the end of its
 * output, when it exits first or does not listen within timeoutMs (the JVM and the Erlang VM take
 * seconds to start on a loaded 2-core machine).
 */
export async function spawnBroker(opts: {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  port: number;
  timeoutMs?: number;
}): Promise<BrokerProcess> {
  const tail = createOutputTail(40);
  const child: ChildProcess = spawn(opts.command, opts.args, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (c: Buffer) => tail.push(c.toString()));
  child.stderr?.on('data', (c: Buffer) => tail.push(c.toString()));
  const exited = once(child, 'exit').catch(() => undefined);
  const running = () => child.exitCode === null && child.signalCode === null;
  const stop = async (graceMs = 20_000): Promise<void> => {
    if (!running()) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const failed = new Promise<never>((_, reject) => {
    child.once('exit', (code, signal) =>
      reject(new Error(`${opts.name} exited while starting (${describeExit(code, signal)}):\n${tail.text()}`)),
    );
    child.once('error', (err) => reject(new Error(`${opts.name} did not start: ${err.message}`)));
  });
  failed.catch(() => undefined);
  try {
    await Promise.race([waitForPort(opts.port, opts.timeoutMs ?? 90_000), failed]);
  } catch (err) {
    await stop(1_000);
    throw err instanceof Error && err.message.startsWith('nothing listens')
      ? new Error(`${opts.name} did not listen on ${opts.port}: ${err.message}\n${tail.text()}`)
      : err;
  }
  return { stop, output: () => tail.text() };
}

/** A broker a test can stop and start again on the same data (an outage), then stop for good. */
export interface RestartableBroker {
  /** the broker stops; its data stays for start() */
  halt(): Promise<void>;
  /** starts it again on the same ports and data */
  start(): Promise<void>;
  /** stops it, and deletes its data */
  stop(): Promise<void>;
}

/**
 * Starts a broker whose data lives in `dir`: `spawn` starts its process, `ready` (optional) waits
 * until it serves. halt() stops the process and keeps `dir`; stop() also runs `cleanup` (what the
 * broker leaves running beside it) and deletes `dir`. A first start that fails cleans up the same.
 */
export async function startRestartable(opts: {
  dir: string;
  spawn: () => Promise<BrokerProcess>;
  ready?: () => Promise<unknown>;
  cleanup?: () => Promise<void>;
}): Promise<RestartableBroker> {
  let server: BrokerProcess | undefined;
  const start = async (): Promise<void> => {
    server = await opts.spawn();
    await opts.ready?.();
  };
  const halt = async (): Promise<void> => {
    await server?.stop();
    server = undefined;
  };
  const stop = async (): Promise<void> => {
    await halt();
    await opts.cleanup?.();
    await rm(opts.dir, { recursive: true, force: true });
  };
  try {
    await start();
  } catch (err) {
    await stop();
    throw err;
  }
  return { halt, start, stop };
}
