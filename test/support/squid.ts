import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, waitForPort } from '../../src/dev/ports.js';

/**
 * Debian's squid (apt, installed by scripts/provision.sh and .ci/run like tinyproxy) as a second
 * forward proxy of the delivery tests: where tinyproxy bends HTTP, squid answers as RFC 9110 says
 * (407 with Proxy-Authenticate for wrong credentials, also to a request it would forward; 503 with
 * X-Squid-Error for a receiver it can not reach). On a loopback port, its config, logs and the
 * password file in a temporary folder, in the foreground (-N), no cache; Basic credentials checked
 * by squid's own basic_ncsa_auth helper against an htpasswd file.
 */
export const SQUID_PATH = process.env.SQUID_PATH ?? '/usr/sbin/squid';
const NCSA_AUTH = process.env.SQUID_NCSA_AUTH_PATH ?? '/usr/lib/squid/basic_ncsa_auth';

export interface Squid {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  /** its access log's lines "METHOD URL STATUS" (what went through it, and what it answered) */
  requests(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startSquid(opts: { basicAuth?: { username: string; password: string } } = {}): Promise<Squid> {
  if (!existsSync(SQUID_PATH))
    throw new Error(`${SQUID_PATH} is missing: scripts/provision.sh installs Debian's squid (apt-get install squid), or set SQUID_PATH`);
  const dir = await mkdtemp(path.join(tmpdir(), 'squid-'));
  // started as root, squid runs as the user `proxy`: it writes its logs and pid here
  chmodSync(dir, 0o777);
  const port = await freePort();
  const access = path.join(dir, 'access.log');
  const auth = opts.basicAuth;
  if (auth) {
    // an htpasswd line of an MD5-crypt (apr1) hash, which basic_ncsa_auth reads
    const hash = execFileSync('openssl', ['passwd', '-apr1', auth.password], { encoding: 'utf8' }).trim();
    await writeFile(path.join(dir, 'passwd'), `${auth.username}:${hash}\n`, { mode: 0o644 });
  }
  const conf = [
    `http_port 127.0.0.1:${port}`,
    `pid_filename ${path.join(dir, 'squid.pid')}`,
    // the status squid answered with (%>Hs), after the method and URL
    'logformat egress %rm %ru %>Hs',
    `access_log stdio:${access} egress`,
    `cache_log ${path.join(dir, 'cache.log')}`,
    `coredump_dir ${dir}`,
    // the query string in the log as it was sent (squid strips it by default)
    'strip_query_terms off',
    'cache deny all',
    'cache_mem 8 MB',
    'shutdown_lifetime 0 seconds',
    // the receivers listen on loopback and on any port: no port or destination rules
    ...(auth
      ? [
          `auth_param basic program ${NCSA_AUTH} ${path.join(dir, 'passwd')}`,
          'auth_param basic realm egress',
          'acl authenticated proxy_auth REQUIRED',
          'http_access allow authenticated',
        ]
      : ['http_access allow all']),
    'http_access deny all',
    '',
  ].join('\n');
  const confFile = path.join(dir, 'squid.conf');
  await writeFile(confFile, conf, { mode: 0o644 });
  const child: ChildProcess = spawn(SQUID_PATH, ['-N', '-f', confFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  // listening, or the reason it exited (the promise rejects at every exit, also close()'s: caught)
  const exitedEarly = exited.then(async () => {
    const log = await readFile(path.join(dir, 'cache.log'), 'utf8').catch(() => '');
    throw new Error(`squid exited at start: ${stderr}${log.slice(-2000)}`);
  });
  exitedEarly.catch(() => undefined);
  try {
    await Promise.race([waitForPort(port, 15_000), exitedEarly]);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    async requests() {
      const text = await readFile(access, 'utf8').catch(() => '');
      return text.split('\n').filter((l) => l !== '');
    },
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
