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
  // a fixed port lets a test restart it where its clients expect it
  const port = opts.port ?? (await freePort());
  const child = spawn(MOTO_SERVER, ['-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  try {
    await Promise.race([
      waitForPort(port, 30_000),
      once(child, 'exit').then(([code]) => {
        throw new Error(`moto server exited with ${String(code)} before listening: ${stderr}`);
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
