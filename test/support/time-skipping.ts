import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createConnection, createServer } from 'node:net';
import { sleep } from './wait.js';
import { TestWorkflowEnvironment } from '@temporalio/testing';

export interface TimeSkippingEnv {
  env: TestWorkflowEnvironment;
  stop(): Promise<void>;
}

/** The SDK's own factory, which createTimeSkipping calls; private in its typings. */
type CreateEnv = (opts: {
  server: { type: 'existing' };
  supportsTimeSkipping: true;
  namespace: string;
  address: string;
}) => Promise<TestWorkflowEnvironment>;

/**
 * Temporal's time-skipping test server, as the JVM build from Maven Central that
 * scripts/tools/temporal-test-server.sh provisions into .cache/ (the SDK's default download
 * from GitHub is not reachable from CI). The server is started here rather than by the SDK
 * (`executable: existing-path`) because the SDK gives it 5 s to listen and the JVM takes 2-5 s
 * on a loaded 2-core machine; the environment is then the SDK's own time-skipping one.
 */
export async function startTimeSkippingEnv(): Promise<TimeSkippingEnv> {
  const path = execFileSync('bash', ['scripts/tools/temporal-test-server.sh'], { encoding: 'utf8' }).trim();
  const port = await freePort();
  const child = spawn(path, [String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const exited = once(child, 'exit');
  const stopServer = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  try {
    await waitForPort(port, 60_000, () => child.exitCode !== null);
    if (child.exitCode !== null) throw new Error(`temporal test server exited with ${child.exitCode}: ${stderr}`);
    const create = (TestWorkflowEnvironment as unknown as { create: CreateEnv }).create.bind(TestWorkflowEnvironment);
    const env = await create({
      server: { type: 'existing' },
      supportsTimeSkipping: true,
      namespace: 'default',
      address: `127.0.0.1:${port}`,
    });
    return {
      env,
      async stop() {
        await env.teardown();
        await stopServer();
      },
    };
  } catch (err) {
    await stopServer();
    throw err;
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function waitForPort(port: number, timeoutMs: number, gaveUp: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !gaveUp()) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(100);
  }
  if (!gaveUp()) throw new Error(`temporal test server did not listen on ${port} within ${timeoutMs} ms`);
}
