import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../../src/dev/ports.js';
import { eventually } from '../../support/wait.js';

/**
 * `npm start` as a user runs it (the CLI's dev command in a child process), serving the console
 * built from this checkout. Postgres and Temporal may be the test run's shared ones
 * (DATABASE_URL, TEMPORAL_ADDRESS with a task queue of its own), so several stacks start quickly.
 */
export interface DevConsole {
  /** ingest's public address: the console is at `${url}/console/` */
  url: string;
  metricsUrl: string;
  /** the dev identity provider (AUTH_URL) */
  authUrl: string;
  /** everything it printed, log lines included */
  output(): string;
  configDir: string;
  stop(): Promise<void>;
}

export async function startDevConsole(opts: { manifests: string; env?: Record<string, string> }): Promise<DevConsole> {
  const dir = await mkdtemp(path.join(tmpdir(), 'wf-console-'));
  // as root, embedded Postgres (when not given one) runs as "postgres" and must reach the data dir
  await chmod(dir, 0o755);
  const configDir = path.join(dir, 'manifests');
  await import('node:fs/promises').then((fs) => fs.mkdir(configDir));
  await writeFile(path.join(configDir, 'manifests.yaml'), opts.manifests);
  const [port, mgmt, authPort] = [await freePort(), await freePort(), await freePort()];
  let output = '';
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cmd/cli.ts', 'dev', '--config-dir', configDir, '--data-dir', path.join(dir, 'data')],
    {
      env: {
        ...process.env,
        PORT: String(port),
        MANAGEMENT_PORT: String(mgmt),
        DEV_AUTH_PORT: String(authPort),
        LOG_LEVEL: 'info',
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await eventually(async () => {
      if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
      return output.includes('dev mode is running') && output.includes('  try:');
    }, 150_000);
  } catch (err) {
    await stop();
    throw new Error(`dev mode did not start: ${String(err)}\n${output}`, { cause: err });
  }
  return {
    url: `http://127.0.0.1:${port}`,
    metricsUrl: `http://127.0.0.1:${mgmt}/metrics`,
    authUrl: `http://127.0.0.1:${authPort}`,
    output: () => output,
    configDir,
    stop,
  };
}
