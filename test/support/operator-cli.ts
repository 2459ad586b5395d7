import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { freePort } from '../../src/dev/ports.js';
import { kubeconfigYaml, OPERATOR_NAMESPACE, OPERATOR_USER, type KubeConnection } from './kube.js';
import { eventually } from './wait.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `webhook-fanout operator` as the chart runs it: its own process, configured by its environment only. */
export interface OperatorCli {
  child: ChildProcess;
  /** its exit code once it exited */
  exited: Promise<number | null>;
  /** a GET on its management server */
  get(p: string): Promise<{ status: number; text: string }>;
  /** everything it printed */
  output(): string;
  /** SIGTERM, then SIGKILL after 30 s; removes its kubeconfig */
  stop(): Promise<void>;
}

/**
 * Starts the CLI process with the operator's least-privilege identity (a kubeconfig of its own),
 * DATABASE_URL and the given environment; resolves once its management server answers /healthz.
 */
export async function startOperatorCli(conn: KubeConnection, env: Record<string, string>): Promise<OperatorCli> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'op-cli-'));
  await writeFile(path.join(dir, 'kubeconfig'), kubeconfigYaml(conn, OPERATOR_USER, conn.operatorToken, OPERATOR_NAMESPACE));
  const managementPort = await freePort();
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cmd/cli.ts'), 'operator'], {
    cwd: ROOT,
    env: {
      ...process.env,
      KUBECONFIG: path.join(dir, 'kubeconfig'),
      MANAGEMENT_PORT: String(managementPort),
      POD_NAMESPACE: OPERATOR_NAMESPACE,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const get = async (p: string) => {
    const res = await request(`http://127.0.0.1:${managementPort}${p}`);
    return { status: res.statusCode, text: await res.body.text() };
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
        return (await get('/healthz')).status === 200;
      },
      { timeoutMs: 30_000, what: `the operator's management server on ${managementPort}` },
    );
  } catch (err) {
    await stop();
    throw new Error(`webhook-fanout operator did not start: ${String(err)}\n${output}`, { cause: err });
  }
  return { child, exited, get, output: () => output, stop };
}
