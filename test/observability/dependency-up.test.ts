import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.js';
import { startManagementServer } from '../../src/observability/management-server.js';

// webhook_fanout_dependency_up: the readiness checks' answers as a metric, what the alerts on an
// unreachable Temporal or Postgres read.

describe('webhook_fanout_dependency_up', () => {
  it('is set by each /readyz from its checks, 1 passing and 0 failing, and served on /metrics', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    let temporalUp = false;
    const server = await startManagementServer({
      port: 0,
      host: '127.0.0.1',
      registry: metrics.registry,
      checks: { postgres: async () => true, temporal: async () => temporalUp },
    });
    try {
      server.setStarted();
      const base = `http://127.0.0.1:${server.port}`;
      const scrape = async () => (await fetch(`${base}/metrics`)).text();
      // before any probe: no series (an alert does not fire on a process nobody asked yet)
      expect(await scrape()).not.toMatch(/^webhook_fanout_dependency_up\{/m);

      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      let text = await scrape();
      expect(text).toMatch(/^webhook_fanout_dependency_up\{dependency="postgres"\} 1$/m);
      expect(text).toMatch(/^webhook_fanout_dependency_up\{dependency="temporal"\} 0$/m);

      temporalUp = true;
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      text = await scrape();
      expect(text).toMatch(/^webhook_fanout_dependency_up\{dependency="temporal"\} 1$/m);
    } finally {
      await server.close();
    }
  });
});
