import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startManagementServer, type ManagementServer } from '../../src/observability/management-server.js';

describe('/readyz', () => {
  let server: ManagementServer;
  let hung = 0;
  beforeAll(async () => {
    server = await startManagementServer({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      checks: {
        postgres: async () => true,
        // a gRPC health call to an unreachable Temporal: never settles
        temporal: () => {
          hung++;
          return new Promise<boolean>(() => {});
        },
      },
    });
    server.setStarted();
  });
  afterAll(async () => server?.close());

  it('answers 503 "starting" until the process says it started, whatever the checks say', async () => {
    const early = await startManagementServer({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      checks: { postgres: async () => true },
    });
    try {
      const before = await fetch(`http://127.0.0.1:${early.port}/readyz`);
      expect(before.status).toBe(503);
      expect(await before.json()).toEqual({ status: 'starting', checks: { postgres: 'ok' } });
      early.setStarted();
      const after = await fetch(`http://127.0.0.1:${early.port}/readyz`);
      expect(after.status).toBe(200);
      expect(await after.json()).toEqual({ status: 'ready', checks: { postgres: 'ok' } });
    } finally {
      await early.close();
    }
  });

  it('answers 503 within the check timeout when a check hangs, naming the failing check', async () => {
    const started = Date.now();
    const res = await fetch(`http://127.0.0.1:${server.port}/readyz`, { signal: AbortSignal.timeout(5_000) });
    const took = Date.now() - started;
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'not_ready', checks: { postgres: 'ok', temporal: 'failing' } });
    expect(took).toBeLessThan(3_000);
    expect(hung).toBe(1);
  });
});
