import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOutputTail, describeExit } from './output-tail.js';
import { freePort, waitForPort } from './ports.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The Temporal CLI: TEMPORAL_CLI_PATH, else the copy scripts/provision.sh cached. */
export function temporalCliPath(): string {
  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv) return fromEnv;
  const cached = path.join(REPO_ROOT, '.cache/pytools/bin/temporal');
  if (existsSync(cached)) return cached;
  throw new Error('Temporal CLI not found: run `bash scripts/provision.sh` or set TEMPORAL_CLI_PATH');
}

export interface TemporalDevServer {
  address: string;
  namespace: string;
  /** the server's process (the bench reads its memory from /proc) */
  pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * `temporal server start-dev` with its state in memory (fast: no SQLite fsyncs), or in dbFile
 * with WAL and synchronous=OFF when state should survive a restart.
 */
export async function startTemporalDevServer(
  opts: { port?: number; dbFile?: string; namespace?: string; log?: (line: string) => void } = {},
): Promise<TemporalDevServer> {
  // Its ports are picked free and then bound by the server: another process starting beside it
  // may take one meanwhile, and the server exits. A new set of ports is tried then (not when the
  // caller chose the port).
  const attempts = opts.port === undefined ? 3 : 1;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (err) {
      if (!(err instanceof DevServerExited) || attempt >= attempts) throw err;
    }
  }
}

/** The dev server exited before it listened; the message carries the end of its output. */
class DevServerExited extends Error {}

async function startOnce(opts: {
  port?: number;
  dbFile?: string;
  namespace?: string;
  log?: (line: string) => void;
}): Promise<TemporalDevServer> {
  const port = opts.port ?? (await freePort());
  const namespace = opts.namespace ?? 'default';
  const args = [
    'server',
    'start-dev',
    '--headless',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--http-port',
    String(await freePort()),
    '--metrics-port',
    String(await freePort()),
    '--namespace',
    namespace,
    '--log-level',
    'error',
  ];
  if (opts.dbFile) {
    args.push('--db-filename', opts.dbFile, '--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=OFF');
  }
  const child: ChildProcess = spawn(temporalCliPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const log = opts.log ?? (() => {});
  // the end of its output, for the error when it exits during start
  const tail = createOutputTail();
  const onOutput = (d: Buffer): void => {
    const text = d.toString();
    tail.push(text);
    log(text);
  };
  child.stdout?.on('data', onOutput);
  child.stderr?.on('data', onOutput);
  let exited = false;
  let exitStatus = 'no exit status';
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = true;
      exitStatus = describeExit(code, signal);
      resolve();
    }),
  );
  // a CLI that can not be run (missing, not executable) fails here, not with an exit
  const spawnFailed = new Promise<never>((_resolve, reject) =>
    child.once('error', (err) =>
      reject(new Error(`temporal dev server could not be run (${temporalCliPath()}): ${err.message}`, { cause: err })),
    ),
  );
  spawnFailed.catch(() => undefined); // an error after the start is not this function's to report
  try {
    await Promise.race([
      waitForPort(port, 60_000),
      spawnFailed,
      exit.then(() => {
        throw new DevServerExited(`temporal dev server exited during start (${exitStatus}); its last output:\n${tail.text()}`);
      }),
    ]);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    address: `127.0.0.1:${port}`,
    namespace,
    pid: child.pid,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    },
  };
}
