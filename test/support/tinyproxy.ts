import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../src/dev/ports.js';

/**
 * Debian's tinyproxy (apt, installed by scripts/provision.sh and .ci/run) as the forward proxy of
 * the delivery tests: what an enterprise's egress proxy is to the worker. On a loopback port, with
 * a config of its own in a temporary folder, in the foreground (-d), one process; every request it
 * handles is in its log (LogLevel Info: "Request ...: CONNECT host:port" for an https target,
 * "Request ...: POST http://host:port/path" for an http one). It can be stopped and started
 * again on the same port (a proxy that is down, then back).
 */
export const TINYPROXY_PATH = process.env.TINYPROXY_PATH ?? '/usr/bin/tinyproxy';

export interface Tinyproxy {
  /** http://127.0.0.1:PORT */
  url: string;
  port: number;
  /** the request lines of its log, in order (what went through it) */
  requests(): Promise<string[]>;
  /** stops the process (its port refuses connections) */
  stop(): Promise<void>;
  /** starts it again on the same port, with the same config or other credentials */
  start(basicAuth?: { username: string; password: string } | null): Promise<void>;
  close(): Promise<void>;
}

export async function startTinyproxy(opts: { basicAuth?: { username: string; password: string } } = {}): Promise<Tinyproxy> {
  if (!existsSync(TINYPROXY_PATH))
    throw new Error(
      `${TINYPROXY_PATH} is missing: scripts/provision.sh installs Debian's tinyproxy (apt-get install tinyproxy), or set TINYPROXY_PATH`,
    );
  const dir = await mkdtemp(path.join(tmpdir(), 'tinyproxy-'));
  const port = await freePort();
  const log = path.join(dir, 'tinyproxy.log');
  let auth = opts.basicAuth ?? null;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async (): Promise<void> => {
    // no ConnectPort line: CONNECT to any port (the receivers listen on free ports); no Allow line: any client
    const conf = [
      `Port ${port}`,
      'Listen 127.0.0.1',
      'Timeout 30',
      'MaxClients 100',
      `LogFile "${log}"`,
      'LogLevel Info',
      `PidFile "${path.join(dir, 'tinyproxy.pid')}"`,
      ...(auth ? [`BasicAuth ${auth.username} ${auth.password}`] : []),
      '',
    ].join('\n');
    await writeFile(path.join(dir, 'tinyproxy.conf'), conf);
    const proc = spawn(TINYPROXY_PATH, ['-d', '-c', path.join(dir, 'tinyproxy.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    child = proc;
    let stderr = '';
    proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    for (let i = 0; ; i++) {
      if (proc.exitCode !== null) throw new Error(`tinyproxy exited at start: ${stderr}${await readFile(log, 'utf8').catch(() => '')}`);
      const up = await new Promise<boolean>((resolve) => {
        const s = connect(port, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
      if (up) return;
      if (i > 200) throw new Error(`tinyproxy did not listen on ${port}: ${stderr}`);
      await sleep(50);
    }
  };

  const stop = async (): Promise<void> => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };

  await start();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    async requests() {
      const text = await readFile(log, 'utf8').catch(() => '');
      return text
        .split('\n')
        .map((l) => /Request \(file descriptor \d+\): (.*)$/.exec(l)?.[1])
        .filter((l): l is string => l !== undefined);
    },
    stop,
    async start(basicAuth) {
      if (basicAuth !== undefined) auth = basicAuth;
      await start();
    },
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
