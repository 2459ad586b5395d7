import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { freePort, waitForPort } from '../../src/dev/ports.js';
import { sleep } from './wait.js';

/**
 * A real Kubernetes control plane for tests, envtest style (controller-runtime's envtest flags are
 * the model): etcd on a free port with a temporary data dir, and kube-apiserver in front of it with
 * self-signed serving certs, RBAC authorization and static tokens:
 * - an admin user in system:masters (what kubectl and the test code use), and
 * - the operator's ServiceAccount identity (system:serviceaccount:webhook-fanout:webhook-fanout-operator),
 *   which has no permission but what deploy/rbac/*.yaml grants it: tests run the operator as this
 *   user to prove the manifests suffice.
 * The binaries come from scripts/kube/build.sh (.cache/kube/bin) or KUBE_ASSETS_DIR.
 */

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const execFileP = promisify(execFile);

export const OPERATOR_NAMESPACE = 'webhook-fanout';
export const OPERATOR_SERVICE_ACCOUNT = 'webhook-fanout-operator';
export const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NAMESPACE}:${OPERATOR_SERVICE_ACCOUNT}`;

export interface KubeConnection {
  /** https://127.0.0.1:port */
  server: string;
  /** PEM of the self-signed CA the API server generated (in its cert dir) */
  caPem: string;
  adminToken: string;
  operatorToken: string;
  /** kubeconfig file (admin) for kubectl */
  kubeconfigPath: string;
  /** http://127.0.0.1:port of etcd, for tests that compact it */
  etcdUrl: string;
}

export interface KubeControlPlane extends KubeConnection {
  /** stops and starts kube-apiserver on the same port and etcd (watches break, state stays) */
  restartApiServer(): Promise<void>;
  stop(): Promise<void>;
}

function assetsDir(): string {
  return process.env.KUBE_ASSETS_DIR ?? path.join(REPO_ROOT, '.cache/kube/bin');
}

export function kubeBinary(name: 'etcd' | 'kube-apiserver'): string {
  const p = path.join(assetsDir(), name);
  if (!existsSync(p)) throw new Error(`${p} not found: run \`bash scripts/provision.sh\` (builds etcd and kube-apiserver once)`);
  return p;
}

/** kubectl from the PATH, else the one scripts/kube/build.sh built. */
export function kubectlPath(): string {
  const fromEnv = process.env.KUBECTL;
  if (fromEnv) return fromEnv;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'kubectl'))) return path.join(dir, 'kubectl');
  }
  const built = path.join(assetsDir(), 'kubectl');
  if (existsSync(built)) return built;
  throw new Error('kubectl not found on the PATH nor in .cache/kube/bin: run `bash scripts/provision.sh`');
}

/** A kubeconfig document for one user of the control plane. */
export function kubeconfigYaml(conn: Pick<KubeConnection, 'server' | 'caPem'>, user: string, token: string, namespace = 'default'): string {
  const ca = Buffer.from(conn.caPem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: test',
    '  cluster:',
    `    server: ${conn.server}`,
    `    certificate-authority-data: ${ca}`,
    'users:',
    `- name: ${JSON.stringify(user)}`,
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: test',
    '  context:',
    '    cluster: test',
    `    user: ${JSON.stringify(user)}`,
    `    namespace: ${namespace}`,
    'current-context: test',
    '',
  ].join('\n');
}

interface Proc {
  child: ChildProcess;
  exited: Promise<void>;
  output: () => string;
}

function launch(bin: string, args: string[], env: NodeJS.ProcessEnv = process.env): Proc {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let tail = '';
  const keep = (d: Buffer) => {
    tail = (tail + d.toString()).slice(-8000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited, output: () => tail };
}

async function stopProc(p: Proc | undefined, timeoutMs = 10_000): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
  await p.exited;
  clearTimeout(timer);
}

async function waitReady(server: string, token: string, dispatcher: Agent, proc: Proc, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`kube-apiserver exited during start:\n${proc.output()}`);
    try {
      const res = await request(`${server}/readyz`, { headers: { authorization: `Bearer ${token}` }, dispatcher });
      last = `${res.statusCode} ${await res.body.text()}`;
      if (res.statusCode === 200) return;
    } catch (err) {
      last = String(err);
    }
    if (Date.now() > deadline) throw new Error(`kube-apiserver not ready after ${timeoutMs} ms: ${last}\n${proc.output()}`);
    await sleep(250);
  }
}

export async function startKubeControlPlane(opts: { watchCache?: boolean; log?: (line: string) => void } = {}): Promise<KubeControlPlane> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kube-'));
  const certDir = path.join(dir, 'certs');
  await mkdir(certDir, { recursive: true });
  const etcdPort = await freePort();
  const etcdPeerPort = await freePort();
  const apiPort = await freePort();
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const server = `https://127.0.0.1:${apiPort}`;

  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const saKey = path.join(dir, 'sa.key');
  await writeFile(saKey, privateKey.export({ type: 'pkcs1', format: 'pem' }), { mode: 0o600 });
  const adminToken = randomBytes(24).toString('hex');
  const operatorToken = randomBytes(24).toString('hex');
  const tokenFile = path.join(dir, 'tokens.csv');
  await writeFile(
    tokenFile,
    [
      `${adminToken},admin,admin-uid,"system:masters"`,
      `${operatorToken},${OPERATOR_USER},operator-uid,"system:serviceaccounts,system:serviceaccounts:${OPERATOR_NAMESPACE}"`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );

  const etcd = launch(kubeBinary('etcd'), [
    '--name=test',
    `--data-dir=${path.join(dir, 'etcd')}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
    `--initial-cluster=test=http://127.0.0.1:${etcdPeerPort}`,
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ]);
  const apiArgs = [
    `--etcd-servers=${etcdUrl}`,
    `--cert-dir=${certDir}`,
    `--secure-port=${apiPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--service-account-issuer=${server}`,
    `--service-account-key-file=${saKey}`,
    `--service-account-signing-key-file=${saKey}`,
    '--authorization-mode=RBAC',
    `--token-auth-file=${tokenFile}`,
    '--disable-admission-plugins=ServiceAccount',
    '--allow-privileged=true',
    '--service-cluster-ip-range=10.0.0.0/24',
    // tests compact etcd to provoke "410 Gone" on a resumed watch; the watch cache would hide it
    ...(opts.watchCache === false ? ['--watch-cache=false'] : []),
    '--etcd-compaction-interval=0',
    '-v=0',
  ];
  let api: Proc | undefined;
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  try {
    await waitForPort(etcdPort, 30_000);
    api = launch(kubeBinary('kube-apiserver'), apiArgs);
    await waitForPort(apiPort, 60_000);
    await waitReady(server, adminToken, dispatcher, api, 90_000);
  } catch (err) {
    await stopProc(api);
    await stopProc(etcd);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  // The serving cert file holds the cert and the self-signed CA that issued it.
  const caPem = await readFile(path.join(certDir, 'apiserver.crt'), 'utf8');
  const kubeconfigPath = path.join(dir, 'kubeconfig');
  const conn = { server, caPem };
  await writeFile(kubeconfigPath, kubeconfigYaml(conn, 'admin', adminToken), { mode: 0o600 });
  opts.log?.(`kube-apiserver ready at ${server}`);

  return {
    server,
    caPem,
    adminToken,
    operatorToken,
    kubeconfigPath,
    etcdUrl,
    async restartApiServer() {
      await stopProc(api);
      api = launch(kubeBinary('kube-apiserver'), apiArgs);
      await waitForPort(apiPort, 60_000);
      await waitReady(server, adminToken, dispatcher, api, 90_000);
    },
    async stop() {
      await stopProc(api);
      await stopProc(etcd);
      await dispatcher.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Runs kubectl against the control plane as admin; rejects with its stderr on a non-zero exit. */
export async function kubectl(
  conn: Pick<KubeConnection, 'kubeconfigPath'>,
  args: string[],
  opts: { input?: string; kubeconfigPath?: string } = {},
): Promise<string> {
  const bin = kubectlPath();
  const env = { ...process.env, KUBECONFIG: opts.kubeconfigPath ?? conn.kubeconfigPath };
  if (opts.input === undefined) {
    const { stdout } = await execFileP(bin, args, { env, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(out);
      else reject(new KubectlError(code ?? -1, err.trim() || out.trim()));
    });
    child.stdin.end(opts.input);
  });
}

export class KubectlError extends Error {
  constructor(
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`kubectl exited ${exitCode}: ${stderr}`);
    this.name = 'KubectlError';
  }
}
