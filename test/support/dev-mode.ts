import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { freePort } from '../../src/dev/ports.js';
import { DEV_AUDIENCE, DEV_CLIENTS } from '../../src/dev/dev-idp.js';
import { http } from './http.js';
import { eventually } from './wait.js';

/** `webhook-fanout dev` (`npm start`) running as a child process, as a user runs it. */
export interface DevMode {
  /** http://127.0.0.1:PORT: ingest, the admin API */
  url: string;
  managementPort: number;
  /** what it printed so far */
  output(): string;
  /** a token of the local identity provider's client with read and replay (the recipe dev mode prints) */
  token(): Promise<string>;
  /**
   * SIGTERM (it drains), SIGKILL after graceMs; its exit code (null when a signal ended it). Under
   * `npmStart`, a terminal's Ctrl-C instead: SIGINT to the whole process group, SIGKILL to it after graceMs.
   */
  stop(graceMs?: number): Promise<number | null>;
}

/**
 * Starts dev mode on free ports with `env` over the test's own environment and waits for its
 * banner. A port found free may be taken before dev mode binds it (another test file's server):
 * it then exits with EADDRINUSE and is started again on other ports, as a user would.
 */
export async function startDevMode(opts: {
  configDir: string;
  dataDir: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** `npm start` (its script as a user runs it), leading a process group of its own as in a terminal */
  npmStart?: boolean;
  /** returns once the output contains this (default: the banner, dev mode running) */
  until?: string;
}): Promise<DevMode> {
  for (let start = 1; ; start++) {
    const [port, managementPort, authPort] = [await freePort(), await freePort(), await freePort()];
    let output = '';
    const folders = ['--config-dir', opts.configDir, '--data-dir', opts.dataDir];
    const [command, args] = opts.npmStart
      ? ['npm', ['start', '--', ...folders]]
      : [process.execPath, ['--import', 'tsx', 'src/cmd/cli.ts', 'dev', ...folders]];
    const child: ChildProcess = spawn(command, args, {
      detached: opts.npmStart === true,
      env: {
        ...process.env,
        LOG_LEVEL: 'warn',
        ...opts.env,
        PORT: String(port),
        MANAGEMENT_PORT: String(managementPort),
        DEV_AUTH_PORT: String(authPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const exited = once(child, 'exit').catch(() => undefined);
    const signal = (name: NodeJS.Signals): void => {
      if (!opts.npmStart || child.pid === undefined) child.kill(name);
      else
        try {
          process.kill(-child.pid, name);
        } catch {
          // the group is gone already
        }
    };
    const stop = async (graceMs = 15_000): Promise<number | null> => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      signal(opts.npmStart ? 'SIGINT' : 'SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      return child.exitCode;
    };
    const started = await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
        return output.includes(opts.until ?? 'dev mode is running');
      },
      { timeoutMs: opts.timeoutMs ?? 120_000, intervalMs: 250, what: 'dev mode to start' },
    ).catch(async (err: unknown) => {
      await stop(1_000);
      if (start < 3 && output.includes('EADDRINUSE')) return false;
      throw new Error(`dev mode did not start: ${String(err)}\n${output}`);
    });
    if (!started) continue;
    const [client] = DEV_CLIENTS;
    return {
      url: `http://127.0.0.1:${port}`,
      managementPort,
      output: () => output,
      async token() {
        const res = await http(`http://127.0.0.1:${authPort}/oauth/token`, {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            client_id: client?.clientId,
            client_secret: client?.clientSecret,
            audience: DEV_AUDIENCE,
            grant_type: 'client_credentials',
          }),
        });
        if (res.status !== 200) throw new Error(`no token from dev mode's identity provider: ${res.status} ${res.text}`);
        return (res.json() as { access_token: string }).access_token;
      },
      stop,
    };
  }
}
