import { describe, expect, it } from 'vitest';
import { planStatsRange } from '../../../src/api/stats-range.js';

const NOW = Date.parse('2030-06-01T12:34:56.789Z');
const iso = (ms: number) => new Date(ms).toISOString();

describe('the range of GET /api/stats/timeseries', () => {
  it.each([
    {
      name: 'defaults: the last hour in 1m buckets, rounded out',
      q: {},
      from: '2030-06-01T11:34:00.000Z',
      to: '2030-06-01T12:35:00.000Z',
      bucket: '1m',
      count: 61,
    },
    {
      name: 'a day: 15m buckets (the narrowest within 120)',
      q: { from: '2030-05-31T12:00:00Z', to: '2030-06-01T12:00:00Z' },
      from: '2030-05-31T12:00:00.000Z',
      to: '2030-06-01T12:00:00.000Z',
      bucket: '15m',
      count: 96,
    },
    {
      name: 'a week: 6h buckets',
      q: { from: '2030-05-25T00:00:00Z', to: '2030-06-01T00:00:00Z' },
      from: '2030-05-25T00:00:00.000Z',
      to: '2030-06-01T00:00:00.000Z',
      bucket: '6h',
      count: 28,
    },
    {
      name: 'an explicit bucket',
      q: { from: '2030-06-01T00:00:00Z', to: '2030-06-01T01:00:00Z', bucket: '5m' as const },
      from: '2030-06-01T00:00:00.000Z',
      to: '2030-06-01T01:00:00.000Z',
      bucket: '5m',
      count: 12,
    },
    {
      name: 'offsets are instants',
      q: { from: '2030-06-01T02:00:30+02:00', to: '2030-06-01T02:03:00+02:00', bucket: '1m' as const },
      from: '2030-06-01T00:00:00.000Z',
      to: '2030-06-01T00:03:00.000Z',
      bucket: '1m',
      count: 3,
    },
    {
      name: '31 days of 1d',
      q: { from: '2030-05-01T00:00:00Z', to: '2030-06-01T00:00:00Z', bucket: '1d' as const },
      from: '2030-05-01T00:00:00.000Z',
      to: '2030-06-01T00:00:00.000Z',
      bucket: '1d',
      count: 31,
    },
  ])('$name', ({ q, from, to, bucket, count }) => {
    const r = planStatsRange(q, NOW);
    expect(typeof r).toBe('object');
    if (typeof r === 'string') return;
    expect({ from: iso(r.fromMs), to: iso(r.toMs), bucket: r.bucket, count: r.count, width: r.bucketSeconds * 1000 * r.count }).toEqual({
      from,
      to,
      bucket,
      count,
      width: Date.parse(to) - Date.parse(from),
    });
  });

  it.each([
    {
      name: 'from after to',
      q: { from: '2030-06-01T01:00:00Z', to: '2030-06-01T00:00:00Z' },
      problem: /from must be before querystring\/to/,
    },
    { name: 'empty range', q: { from: '2030-06-01T00:00:00Z', to: '2030-06-01T00:00:00Z' }, problem: /from must be before/ },
    { name: 'over 31 days', q: { from: '2030-04-01T00:00:00Z', to: '2030-06-01T00:00:00Z' }, problem: /at most 31 days apart/ },
    {
      name: 'too many buckets',
      q: { from: '2030-05-30T00:00:00Z', to: '2030-06-01T00:00:00Z', bucket: '1m' as const },
      problem: /bucket 1m makes 2880 buckets of this range, at most 1000/,
    },
    {
      name: 'only to, in the distant past',
      q: { to: '2001-01-01T00:00:00Z', from: '2030-01-01T00:00:00Z' },
      problem: /from must be before/,
    },
  ])('400 for $name', ({ q, problem }) => {
    expect(planStatsRange(q, NOW)).toMatch(problem);
  });
});
