import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Gauge, type Registry } from 'prom-client';

export type ReadinessCheck = () => Promise<boolean>;

/** The gauge (metrics/metrics.ts) that /readyz sets per check: 1 reachable, 0 failing. */
export const DEPENDENCY_UP = 'webhook_fanout_dependency_up';

/**
 * A check that has not answered by then counts as failing: a probe must get an answer (a gRPC
 * health call to an unreachable Temporal would otherwise hang /readyz until the probe gives up).
 */
const CHECK_TIMEOUT_MS = 2_000;

function withTimeout(check: ReadinessCheck, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([check().catch(() => false), timedOut]).finally(() => clearTimeout(timer));
}

export interface ManagementServer {
  port: number;
  close(): Promise<void>;
  /** /readyz can say 200 from now on: the process's parts run (its public port listens) */
  setStarted(): void;
  /** flips /readyz to 503 at the start of shutdown, so load balancers drain first */
  setShuttingDown(): void;
}

/**
 * /metrics, /healthz and /readyz on MANAGEMENT_PORT, apart from the public port so that
 * an Ingress never exposes them. healthz = the process runs; readyz = it started (setStarted),
 * is not shutting down, and every named check passes. It listens before the process's parts
 * start, so a probe gets an answer meanwhile: 503 "starting", never a 200 for a pod whose
 * public port does not listen yet.
 */
export async function startManagementServer(opts: {
  port: number;
  host?: string;
  registry: Registry;
  checks: Record<string, ReadinessCheck>;
  checkTimeoutMs?: number;
}): Promise<ManagementServer> {
  let started = false;
  let shuttingDown = false;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      opts.registry
        .metrics()
        .then((body) => res.writeHead(200, { 'content-type': opts.registry.contentType }).end(body))
        .catch(() => res.writeHead(500).end());
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (path === '/readyz') {
      const names = Object.keys(opts.checks);
      Promise.all(names.map((n) => withTimeout(opts.checks[n]!, opts.checkTimeoutMs ?? CHECK_TIMEOUT_MS)))
        .then((results) => {
          const checks = Object.fromEntries(names.map((n, i) => [n, results[i] ? 'ok' : 'failing']));
          // the probes' answers as a metric too (kubelet asks every few seconds): what an alert
          // on "Temporal unreachable" reads, without a second round of checks per scrape
          const up = opts.registry.getSingleMetric(DEPENDENCY_UP);
          if (up instanceof Gauge) names.forEach((n, i) => up.set({ dependency: n }, results[i] ? 1 : 0));
          const status = shuttingDown ? 'shutting_down' : !started ? 'starting' : results.every(Boolean) ? 'ready' : 'not_ready';
          res.writeHead(status === 'ready' ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status, checks }));
        })
        .catch(() => res.writeHead(500).end());
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"status":"not_found"}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    setStarted() {
      started = true;
    },
    setShuttingDown() {
      shuttingDown = true;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
