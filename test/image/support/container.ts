import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** The image under test: IMAGE (default webhook-fanout:dev), built by scripts/image/build.sh. */
export const IMAGE = process.env.IMAGE ?? 'webhook-fanout:dev';
/** podman unless CONTAINER_ENGINE=docker (scripts/image/lib.sh decides the same way for builds). */
export const ENGINE = process.env.CONTAINER_ENGINE ?? 'podman';

/**
 * How the chart runs every process (charts/webhook-fanout: securityContext): read-only root
 * filesystem with only /tmp writable, uid/gid 1000, all capabilities dropped, no privilege
 * escalation. Host networking reaches the services the tests start on 127.0.0.1. podman: runc,
 * and nofile/nproc no higher than this machine allows (scripts/image/lib.sh).
 */
export const CHART_FLAGS = [
  '--read-only',
  '--tmpfs',
  '/tmp',
  '--user',
  '1000:1000',
  '--cap-drop',
  'ALL',
  '--security-opt',
  'no-new-privileges',
  '--network',
  'host',
  ...(ENGINE === 'podman' ? ['--runtime', 'runc', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'] : []),
];

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

const envFlags = (env: Record<string, string>) => Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);

export async function engine(args: string[], timeoutMs = 60_000): Promise<RunResult> {
  try {
    const { stdout, stderr } = await exec(ENGINE, args, { timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** One command to completion in a fresh container (`--rm`), as a Job runs it. */
export function runOnce(
  args: string[],
  opts: { env?: Record<string, string>; extra?: string[]; entrypoint?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return engine(
    [
      'run',
      '--rm',
      ...CHART_FLAGS,
      ...envFlags(opts.env ?? {}),
      ...(opts.extra ?? []),
      ...(opts.entrypoint ? ['--entrypoint', opts.entrypoint] : []),
      IMAGE,
      ...args,
    ],
    opts.timeoutMs ?? 120_000,
  );
}

export interface Service {
  name: string;
  logs(): Promise<string>;
  /** SIGTERM, as the kubelet sends it; resolves with the exit code and how long the stop took */
  terminate(): Promise<{ code: number; ms: number }>;
  remove(): Promise<void>;
}

/** A long-running process in a detached container, as a Deployment runs it. */
export async function startService(command: string, env: Record<string, string>, extra: string[] = []): Promise<Service> {
  const name = `wf-image-test-${command}-${randomBytes(3).toString('hex')}`;
  const r = await engine(['run', '-d', '--name', name, ...CHART_FLAGS, ...envFlags(env), ...extra, IMAGE, command]);
  if (r.code !== 0) throw new Error(`${ENGINE} run ${command} failed: ${r.stderr}`);
  return {
    name,
    async logs() {
      const l = await engine(['logs', name]);
      return l.stdout + l.stderr;
    },
    async terminate() {
      const t0 = Date.now();
      await engine(['kill', '--signal', 'TERM', name]);
      const w = await engine(['wait', name], 120_000);
      return { code: Number(w.stdout.trim().split('\n').at(-1)), ms: Date.now() - t0 };
    },
    async remove() {
      await engine(['rm', '-f', name]);
    },
  };
}

/** Pipes text into `node -` inside the image (entrypoint node), for checks run on the image's files. */
export function nodeInImage(script: string): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(ENGINE, ['run', '--rm', '-i', ...CHART_FLAGS, '--entrypoint', 'node', IMAGE, '--input-type=module', '-'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(script);
  });
}
