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
  /** SIGTERM (it drains), SIGKILL after graceMs; its exit code (null when a signal ended it) */
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
}): Promise<DevMode> {
  for (let start = 1; ; start++) {
    const [port, managementPort, authPort] = [await freePort(), await freePort(), await freePort()];
    let output = '';
    const child: ChildProcess = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cmd/cli.ts', 'dev', '--config-dir', opts.configDir, '--data-dir', opts.dataDir],
      {
        env: {
          ...process.env,
          LOG_LEVEL: 'warn',
          ...opts.env,
          PORT: String(port),
          MANAGEMENT_PORT: String(managementPort),
          DEV_AUTH_PORT: String(authPort),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const exited = once(child, 'exit').catch(() => undefined);
    const stop = async (graceMs = 15_000): Promise<number | null> => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      return child.exitCode;
    };
    const started = await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
        return output.includes('dev mode is running');
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
