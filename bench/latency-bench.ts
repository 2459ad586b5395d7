import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchConfig } from './config.js';
import { cpuUsage, type CpuSnapshot } from './cpu.js';
import { seedEndpoints } from './e2e-fixtures.js';
import type { Infra } from './infra.js';
import { AUTHORIZATION } from './ingest-bench.js';
import { monotonicMs, TRACKED_PATH, type Receiver } from './receiver.js';
import { percentile } from './stats.js';

/** Events sent before the measured ones, at the same rate (connections, caches, JIT). */
const WARMUP_S = 3;
/** How long after the last 200 every delivery must have arrived. */
const SETTLE_MS = 30_000;

export interface LatencyFigures {
  rate: number;
  events: number;
  /** inbound 200 (as the sender sees it) to the delivery's arrival at the receiver */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** inbound request sent to its 200 */
  ingestP50Ms: number;
  ingestP99Ms: number;
  /** CPU seconds by component over the measured events (ingest included) */
  cpu: Record<string, number>;
  foreignCpuS: number;
}

export interface LatencyBenchDeps {
  cfg: BenchConfig;
  infra: Infra;
  receiver: Receiver;
  /** the compiled ingest, publishing to the topic the consumer reads */
  ingestUrl: string;
  /** a source ingest accepts AUTHORIZATION for */
  source: string;
  snapshot: () => CpuSnapshot;
  log: (line: string) => void;
}

interface Sent {
  id: string;
  sentAt: number;
  okAt: number;
}

async function sendOne(url: string, id: string): Promise<Sent> {
  // the receiver's clock (it may be another process)
  const sentAt = monotonicMs();
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: AUTHORIZATION, 'content-type': 'application/json' },
    body: JSON.stringify({ id, type: 'bench' }),
  });
  await res.arrayBuffer();
  const okAt = monotonicMs();
  if (res.status !== 200) throw new Error(`ingest answered ${res.status} for ${id}`);
  return { id, sentAt, okAt };
}

/** Offers `count` events at `rate` per second on a fixed schedule (not waiting for the answers). */
async function offer(d: LatencyBenchDeps, prefix: string, count: number): Promise<Sent[]> {
  const url = `${d.ingestUrl}/api/webhooks/${d.source}`;
  const start = performance.now();
  const pending: Array<Promise<Sent>> = [];
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / d.cfg.latencyRate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(sendOne(url, `${prefix}-${i}`));
  }
  return Promise.all(pending);
}

async function arrivals(d: LatencyBenchDeps, sent: Sent[]): Promise<number[]> {
  const deadline = performance.now() + SETTLE_MS;
  for (;;) {
    const at = await d.receiver.arrivedAt(sent.map((s) => s.id));
    const missing = at.filter((t) => t === undefined).length;
    // a delivery can in principle arrive before the sender has read its 200: that counts as 0
    if (missing === 0) return sent.map((s, i) => Math.max(0, (at[i] ?? 0) - s.okAt));
    if (performance.now() > deadline)
      throw new Error(`latency: ${missing} of ${sent.length} deliveries did not arrive within ${SETTLE_MS} ms`);
    await sleep(50);
  }
}

/**
 * A low steady rate through the whole path (ingest -> SNS -> SQS -> consumer -> Temporal ->
 * worker -> receiver), one endpoint per event: the latency a user sees when the system is not
 * saturated, from the inbound 200 to the delivery's arrival at the receiver.
 */
export async function runLatencyBench(d: LatencyBenchDeps): Promise<LatencyFigures> {
  const { cfg, log } = d;
  await seedEndpoints(d.infra, d.source, 1, `${d.receiver.url}${TRACKED_PATH.replace(/\/$/, '')}`);
  const tag = randomBytes(3).toString('hex');
  log(`latency: warming up (${WARMUP_S} s at ${cfg.latencyRate} events/s)`);
  await arrivals(d, await offer(d, `lat-warm-${tag}`, WARMUP_S * cfg.latencyRate));
  const n = cfg.latencyDurationS * cfg.latencyRate;
  log(`latency: ${n} events at ${cfg.latencyRate}/s, 1 endpoint`);
  const before = d.snapshot();
  const sent = await offer(d, `lat-${tag}`, n);
  const lat = await arrivals(d, sent);
  const u = cpuUsage(before, d.snapshot());
  const inbound = sent.map((s) => s.okAt - s.sentAt);
  return {
    rate: cfg.latencyRate,
    events: n,
    p50Ms: percentile(lat, 50),
    p99Ms: percentile(lat, 99),
    maxMs: Math.max(...lat),
    ingestP50Ms: percentile(inbound, 50),
    ingestP99Ms: percentile(inbound, 99),
    cpu: u.groups,
    foreignCpuS: u.foreignS,
  };
}
