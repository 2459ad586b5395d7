import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/knex.js';
import { runService } from '../../src/processes/lifecycle.js';
import { freePort } from '../../src/dev/ports.js';
import { createLogger } from '../../src/observability/logger.js';
import { sleep } from '../support/wait.js';

/**
 * What a kubelet sees on /readyz over the life of a process: the management port answers first
 * (so probes get an answer while it starts), but "ready" must wait until the parts run. A pod
 * marked Ready before the ingest listens on its public port gets traffic it refuses (seen as
 * refused webhooks during a rolling upgrade on the cluster test).
 */
async function readyz(port: number): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, body: await res.json() };
}

describe('runService /readyz', () => {
  it('answers 503 "starting" until the parts started, 200 once they run, 503 "shutting_down" while they stop', async () => {
    const port = await freePort();
    let started: () => void = () => {};
    const starting = new Promise<void>((resolve) => (started = resolve));
    let stopped: () => void = () => {};
    const stopping = new Promise<void>((resolve) => (stopped = resolve));
    let stopCalled = false;
    const run = runService({
      name: 'test',
      logger: createLogger({ level: 'silent' }),
      managementPort: port,
      managementHost: '127.0.0.1',
      registry: new Registry(),
      checks: { postgres: async () => true },
      exitOnStop: false,
      start: async () => {
        await starting;
        return [
          {
            stop: async () => {
              stopCalled = true;
              await stopping;
            },
          },
        ];
      },
    });

    // the management server listens before start() resolves (runService has not returned yet)
    let first: Awaited<ReturnType<typeof readyz>> | undefined;
    for (let i = 0; i < 100 && !first; i++) {
      first = await readyz(port).catch(() => undefined);
      if (!first) await sleep(50);
    }
    expect(first).toEqual({ status: 503, body: { status: 'starting', checks: { postgres: 'ok' } } });

    started();
    const service = await run;
    expect(await readyz(port)).toEqual({ status: 200, body: { status: 'ready', checks: { postgres: 'ok' } } });

    const shutdown = service.shutdown('test');
    await expect.poll(() => stopCalled).toBe(true);
    expect(await readyz(port)).toEqual({ status: 503, body: { status: 'shutting_down', checks: { postgres: 'ok' } } });
    stopped();
    await shutdown;
    await service.done;
  });
});

describe('runService start-up failure', () => {
  it("logs the cause under the classified error, without the DATABASE_URL's password", async () => {
    const lines: Array<{ level: number; msg: string; error?: { code?: string } }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as (typeof lines)[number]);
        done();
      },
    });
    // nothing listens there: the driver's ECONNREFUSED under "the database is unavailable"
    const url = `postgres://app:not-in-the-log@127.0.0.1:${await freePort()}/fanout`;
    const db = createDb({ url, poolMax: 1 });
    try {
      await runService({
        name: 'test',
        logger: pino({ level: 'info' }, sink),
        managementPort: await freePort(),
        managementHost: '127.0.0.1',
        registry: new Registry(),
        checks: {},
        exitOnStop: false,
        start: async () => {
          await db.raw('select 1');
          return [];
        },
      });
    } finally {
      await db.destroy();
    }
    const failed = lines.find((l) => l.msg.startsWith('test: failed to start'));
    expect(failed?.msg).toMatch(/^test: failed to start: the database is unavailable; retry later: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
    expect(failed?.error?.code).toBe('ECONNREFUSED');
    expect(JSON.stringify(lines)).not.toContain('not-in-the-log');
  });
});

describe('runService on a fatal error', () => {
  it('an unhandled rejection whose other listener throws (the Temporal SDK in a main-thread worker) still stops the parts, then exits 1', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('./support/throwing-listener-child.ts', import.meta.url)), String(await freePort())],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, out).toBe(1);
    expect(out).toContain('part stopped');
    expect(out).toMatch(/"msg":"uncaught exception"/);
    expect(out).toMatch(/"msg":"unhandled rejection"/);
  });
});
