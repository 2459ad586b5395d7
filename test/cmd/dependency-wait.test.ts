import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/ports.js';
import { startTemporalDevServer, type TemporalDevServer } from '../../src/dev/temporal-dev-server.js';
import { fileDatabase } from '../support/db.js';
import { eventually, sleep } from '../support/wait.js';

interface Started {
  child: ChildProcess;
  output: string[];
  management: string;
}

/** A service as an operator runs it, with Temporal not (yet) listening at its address. */
async function startService(cmd: 'consumer' | 'worker', env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cmd/cli.ts', cmd], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', MANAGEMENT_PORT: String(port), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout?.on('data', (b: Buffer) => output.push(b.toString()));
  child.stderr?.on('data', (b: Buffer) => output.push(b.toString()));
  return { child, output, management: `http://127.0.0.1:${port}` };
}

/** status, or 'none' when nothing answered within the time a kubelet probe waits by default (1 s + slack) */
async function probe(url: string): Promise<number | 'none'> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(3_000) });
    return res.status;
  } catch {
    return 'none';
  }
}

describe('consumer and worker started while Temporal is unreachable', () => {
  const t = fileDatabase();
  let temporal: TemporalDevServer | undefined;
  const services: Started[] = [];
  let temporalPort: number;
  beforeAll(async () => {
    temporalPort = await freePort();
  });
  afterAll(async () => {
    for (const s of services) s.child.kill('SIGKILL');
    await temporal?.stop();
  });

  it('wait and log instead of exiting, answer /readyz 503 at once, and become ready once Temporal is up', async () => {
    const env = {
      DATABASE_URL: t.database.url,
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      QUEUE_URL: 'http://127.0.0.1:9/000000000000/unused',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    };
    const consumer = await startService('consumer', env);
    const worker = await startService('worker', env);
    services.push(consumer, worker);

    for (const s of [consumer, worker]) {
      await eventually(async () => (await probe(`${s.management}/healthz`)) === 200, { timeoutMs: 30_000, what: 'the management server' });
    }
    await sleep(3_000);
    for (const s of [consumer, worker]) {
      expect(s.child.exitCode).toBeNull(); // still running, not crash-looping
      const started = Date.now();
      expect(await probe(`${s.management}/readyz`)).toBe(503);
      expect(Date.now() - started).toBeLessThan(2_900);
      await eventually(async () => s.output.join('').includes('temporal unreachable; retrying'), {
        timeoutMs: 20_000,
        what: 'the "temporal unreachable; retrying" line',
      });
    }

    temporal = await startTemporalDevServer({ port: temporalPort });
    for (const s of [consumer, worker]) {
      await eventually(async () => (await probe(`${s.management}/readyz`)) === 200, {
        timeoutMs: 60_000,
        what: 'ready once Temporal is up',
      });
      expect(s.child.exitCode).toBeNull();
    }
  }, 150_000);
});
