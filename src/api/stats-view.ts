import type { Static } from '@fastify/type-provider-typebox';
import type { AttentionRow, EndpointBucketRow, EndpointNameRow, SourceBucketRow } from '../db/stats-queries.js';
import { STATS_LIMITS, type AttentionSchema, type TimeseriesSchema } from './route-schemas.js';
import type { StatsRange } from './stats-range.js';

export type Timeseries = Static<typeof TimeseriesSchema>;

const round = (v: number | null): number | null => (v === null ? null : Math.round(v));
const rate = (failed: number, completed: number): number | null => (completed === 0 ? null : failed / completed);

/** The grouped rows as one series per source and per endpoint, a value for every bucket (0 or null where none). */
export function timeseriesView(
  range: StatsRange,
  rows: { events: SourceBucketRow[]; deliveries: EndpointBucketRow[]; endpoints: EndpointNameRow[] },
): Timeseries {
  const first = range.fromMs / 1000 / range.bucketSeconds;
  const zeros = () => Array.from({ length: range.count }, () => 0);
  const nulls = () => Array.from({ length: range.count }, (): number | null => null);
  const index = (k: number) => k - first;

  const sources = new Map<string, number[]>();
  for (const r of rows.events) {
    const counts = sources.get(r.source) ?? zeros();
    counts[index(r.k)] = r.n;
    sources.set(r.source, counts);
  }
  const bySource = [...sources]
    .map(([source, counts]) => ({ source, counts, total: counts.reduce((a, b) => a + b, 0) }))
    .sort((a, b) => b.total - a.total || a.source.localeCompare(b.source));

  const names = new Map(rows.endpoints.map((e) => [e.id, e]));
  const outcome = { SUCCESS: zeros(), FAILED: zeros() };
  const endpoints = new Map<string, Timeseries['endpoints'][number]>();
  const series = (id: string) => {
    let s = endpoints.get(id);
    if (!s) {
      s = {
        endpointId: id,
        name: names.get(id)?.name ?? '',
        source: names.get(id)?.source ?? '',
        completed: zeros(),
        failed: zeros(),
        failureRate: nulls(),
        latencyP50Ms: nulls(),
        latencyP95Ms: nulls(),
        total: { completed: 0, failed: 0, failureRate: null, latencyP50Ms: null, latencyP95Ms: null },
      };
      endpoints.set(id, s);
    }
    return s;
  };
  for (const r of rows.deliveries) {
    const s = series(r.endpoint_id);
    if (r.k === null) {
      s.total = {
        completed: r.completed,
        failed: r.failed,
        failureRate: rate(r.failed, r.completed),
        latencyP50Ms: round(r.p50_ms),
        latencyP95Ms: round(r.p95_ms),
      };
      continue;
    }
    const i = index(r.k);
    s.completed[i] = r.completed;
    s.failed[i] = r.failed;
    s.failureRate[i] = rate(r.failed, r.completed);
    s.latencyP50Ms[i] = round(r.p50_ms);
    s.latencyP95Ms[i] = round(r.p95_ms);
    outcome.SUCCESS[i] = (outcome.SUCCESS[i] ?? 0) + r.completed - r.failed;
    outcome.FAILED[i] = (outcome.FAILED[i] ?? 0) + r.failed;
  }
  const byEndpoint = [...endpoints.values()].sort(
    (a, b) => b.total.failed - a.total.failed || b.total.completed - a.total.completed || a.endpointId.localeCompare(b.endpointId),
  );

  const max = STATS_LIMITS.maxSeries;
  return {
    from: new Date(range.fromMs).toISOString(),
    to: new Date(range.toMs).toISOString(),
    bucket: range.bucket,
    bucketSeconds: range.bucketSeconds,
    buckets: Array.from({ length: range.count }, (_, i) => new Date(range.fromMs + i * range.bucketSeconds * 1000).toISOString()),
    eventsBySource: bySource.slice(0, max),
    sourcesOmitted: Math.max(0, bySource.length - max),
    deliveriesByOutcome: outcome,
    endpoints: byEndpoint.slice(0, max),
    endpointsOmitted: Math.max(0, byEndpoint.length - max),
  };
}

export function attentionView(r: AttentionRow): Static<typeof AttentionSchema> {
  return {
    failedDeliveries: r.failed,
    heldDeliveries: r.held,
    pendingOverOneMinute: r.pending_stale,
    disabledEndpoints: r.disabled,
    pausedEndpoints: r.paused,
    at: r.at.toISOString(),
  };
}
