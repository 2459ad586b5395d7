import { STATS_BUCKETS, STATS_LIMITS, type StatsBucket } from './route-schemas.js';

/** The buckets a timeseries request covers: aligned to multiples of the width since the epoch. */
export interface StatsRange {
  bucket: StatsBucket;
  bucketSeconds: number;
  /** start of the first bucket, epoch ms */
  fromMs: number;
  /** end of the last bucket (exclusive), epoch ms */
  toMs: number;
  count: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

function aligned(fromMs: number, toMs: number, bucket: StatsBucket): StatsRange {
  const widthMs = STATS_BUCKETS[bucket] * 1000;
  const first = Math.floor(fromMs / widthMs);
  const end = Math.ceil(toMs / widthMs);
  return { bucket, bucketSeconds: STATS_BUCKETS[bucket], fromMs: first * widthMs, toMs: end * widthMs, count: end - first };
}

/**
 * The range of GET /api/stats/timeseries from its query: defaults (the last hour; the narrowest
 * bucket giving at most defaultBuckets), then the bounds. A string names what is wrong, for a 400.
 */
export function planStatsRange(
  q: { from?: string | undefined; to?: string | undefined; bucket?: StatsBucket | undefined },
  nowMs: number,
): StatsRange | string {
  const toMs = q.to === undefined ? nowMs : Date.parse(q.to);
  const fromMs = q.from === undefined ? toMs - HOUR_MS : Date.parse(q.from);
  if (!(fromMs < toMs)) return 'querystring/from must be before querystring/to';
  if (toMs - fromMs > STATS_LIMITS.maxRangeDays * DAY_MS) {
    return `querystring/from and querystring/to must be at most ${STATS_LIMITS.maxRangeDays} days apart`;
  }
  if (q.bucket !== undefined) {
    const range = aligned(fromMs, toMs, q.bucket);
    if (range.count > STATS_LIMITS.maxBuckets) {
      return `querystring/bucket ${q.bucket} makes ${range.count} buckets of this range, at most ${STATS_LIMITS.maxBuckets}: choose a wider bucket or a shorter range`;
    }
    return range;
  }
  const widths = Object.keys(STATS_BUCKETS) as StatsBucket[];
  for (const bucket of widths) {
    const range = aligned(fromMs, toMs, bucket);
    if (range.count <= STATS_LIMITS.defaultBuckets) return range;
  }
  // 31 days of 1d buckets: always within the bound
  return aligned(fromMs, toMs, widths[widths.length - 1] as StatsBucket);
}
