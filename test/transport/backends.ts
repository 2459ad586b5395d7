import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { startFauxqs } from 'fauxqs';
import { freePort, waitForPort } from '../../src/dev/ports.js';

/** A running SNS/SQS implementation the transport contract tests talk to over HTTP. */
export interface Backend {
  endpoint: string;
  stop(): Promise<void>;
}

export interface BackendKind {
  name: string;
  start(): Promise<Backend>;
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const MOTO_SERVER = path.join(repoRoot, '.cache/pytools/moto-venv/bin/moto_server');

export async function startFauxqsBackend(port = 0): Promise<Backend> {
  const server = await startFauxqs({ port, logger: false });
  return { endpoint: server.address, stop: () => server.stop() };
}

/** moto server as a child process on a free port; killed (and awaited) by stop(). */
export async function startMotoBackend(opts: { port?: number } = {}): Promise<Backend> {
  if (!existsSync(MOTO_SERVER)) {
    throw new Error(`moto server not found at ${MOTO_SERVER}: run \`bash scripts/provision.sh\` first`);
  }
  return startServerProcess('moto server', opts.port, (port) => ({ cmd: MOTO_SERVER, args: ['-H', '127.0.0.1', '-p', String(port)] }));
}

/**
 * fauxqs's own server (its CLI) as a child process: an emulator that can be SIGKILLed like moto,
 * losing its queues as moto does, but about 30 times faster (500 messages published, received
 * and deleted: 1.7 s against 54 s for moto on the test machine), so a suite that drains a
 * backlog measures the service, not the emulator. Needs Node 24 (node:sqlite): the Node running
 * this test, as npm scripts put the project's Node first on PATH.
 */
export async function startFauxqsProcess(opts: { port?: number } = {}): Promise<Backend> {
  const cli = path.join(repoRoot, 'node_modules/fauxqs/dist/cli.js');
  return startServerProcess('fauxqs', opts.port, (port) => ({
    cmd: process.execPath,
    args: [cli],
    env: { FAUXQS_PORT: String(port), FAUXQS_LOGGER: 'false' },
  }));
}

/** a server process on a port (a fixed one lets a test restart it where its clients expect it) */
async function startServerProcess(
  name: string,
  fixedPort: number | undefined,
  command: (port: number) => { cmd: string; args: string[]; env?: Record<string, string> },
): Promise<Backend> {
  const port = fixedPort ?? (await freePort());
  const { cmd, args, env } = command(port);
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  try {
    await Promise.race([
      waitForPort(port, 30_000),
      once(child, 'exit').then(([code]) => {
        throw new Error(`${name} exited with ${String(code)} before listening: ${stderr}`);
      }),
    ]);
  } catch (err) {
    await kill(child);
    throw err;
  }
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => kill(child) };
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

export const BACKENDS: BackendKind[] = [
  { name: 'fauxqs', start: () => startFauxqsBackend() },
  { name: 'moto', start: startMotoBackend },
];
