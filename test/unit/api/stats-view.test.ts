import { describe, expect, it } from 'vitest';
import { timeseriesView } from '../../../src/api/stats-view.js';
import type { StatsRange } from '../../../src/api/stats-range.js';

const T0 = Date.parse('2030-06-01T00:00:00.000Z');
const range: StatsRange = { bucket: '1m', bucketSeconds: 60, fromMs: T0, toMs: T0 + 180_000, count: 3 };
const k = (i: number) => T0 / 60_000 + i;

describe('the timeseries view: one value per bucket, busiest first, bounded', () => {
  it('fills buckets without rows with 0 or null and sums outcomes across endpoints', () => {
    const view = timeseriesView(range, {
      events: [
        { source: 'b', k: k(2), n: 5 },
        { source: 'a', k: k(0), n: 1 },
      ],
      deliveries: [
        { endpoint_id: 'e1', k: k(1), completed: 4, failed: 1, p50_ms: 10.4, p95_ms: 99.6 },
        { endpoint_id: 'e2', k: k(1), completed: 2, failed: 2, p50_ms: null, p95_ms: null },
        { endpoint_id: 'e2', k: null, completed: 2, failed: 2, p50_ms: null, p95_ms: null },
        { endpoint_id: 'e1', k: null, completed: 4, failed: 1, p50_ms: 10.4, p95_ms: 99.6 },
      ],
      endpoints: [{ id: 'e1', name: 'ns/one', source: 'a' }],
    });
    expect(view.buckets).toEqual(['2030-06-01T00:00:00.000Z', '2030-06-01T00:01:00.000Z', '2030-06-01T00:02:00.000Z']);
    expect(view.eventsBySource).toEqual([
      { source: 'b', counts: [0, 0, 5], total: 5 },
      { source: 'a', counts: [1, 0, 0], total: 1 },
    ]);
    expect(view.deliveriesByOutcome).toEqual({ SUCCESS: [0, 3, 0], FAILED: [0, 3, 0] });
    // the most failures first; an endpoint gone from the table keeps its id, without a name
    expect(view.endpoints.map((e) => [e.endpointId, e.name, e.total.failed])).toEqual([
      ['e2', '', 2],
      ['e1', 'ns/one', 1],
    ]);
    expect(view.endpoints[1]).toMatchObject({
      failureRate: [null, 0.25, null],
      latencyP50Ms: [null, 10, null],
      latencyP95Ms: [null, 100, null],
    });
  });

  it('lists at most 100 sources and endpoints and counts the rest', () => {
    const view = timeseriesView(range, {
      events: Array.from({ length: 103 }, (_, i) => ({ source: `s${i}`, k: k(0), n: i + 1 })),
      deliveries: Array.from({ length: 101 }, (_, i) => ({
        endpoint_id: `e${i}`,
        k: null,
        completed: i,
        failed: 0,
        p50_ms: null,
        p95_ms: null,
      })),
      endpoints: [],
    });
    expect([view.eventsBySource.length, view.sourcesOmitted, view.endpoints.length, view.endpointsOmitted]).toEqual([100, 3, 100, 1]);
    expect(view.eventsBySource[0]?.source).toBe('s102');
    expect(view.endpoints[0]?.endpointId).toBe('e100');
  });
});
