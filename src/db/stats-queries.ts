import type { Db } from './knex.js';

// Aggregates for the console's overview (GET /api/stats/*). Each statement reads one table
// through an index made for it (migration 057): counts grouped by bucket number, where a bucket
// is floor(epoch seconds / width).

export interface StatsWindow {
  /** inclusive, aligned to the bucket */
  from: Date;
  /** exclusive, aligned to the bucket */
  to: Date;
  bucketSeconds: number;
}

export interface SourceBucketRow {
  source: string;
  /** bucket number: floor(epoch seconds / width) */
  k: number;
  n: number;
}

export interface EndpointBucketRow {
  endpoint_id: string;
  /** null: the endpoint's total over the range */
  k: number | null;
  completed: number;
  failed: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface EndpointNameRow {
  id: string;
  name: string;
  source: string;
}

export interface AttentionRow {
  failed: number;
  held: number;
  pending_stale: number;
  disabled: number;
  paused: number;
  at: Date;
}

export const EVENTS_PER_SOURCE_SQL = `
  SELECT source, floor(extract(epoch FROM received_at) / ?)::bigint AS k, count(*)::int AS n
    FROM webhook_event
   WHERE received_at >= ? AND received_at < ?
   GROUP BY source, k`;

// latency: creation (the event's fan-out) to the end, of the deliveries that succeeded; one
// statement gives each (endpoint, bucket) and each endpoint's total over the range
export const DELIVERIES_PER_ENDPOINT_SQL = `
  SELECT endpoint_id, floor(extract(epoch FROM completed_at) / ?)::bigint AS k,
         count(*)::int AS completed,
         (count(*) FILTER (WHERE status = 'FAILED'))::int AS failed,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - created_at) * 1000) FILTER (WHERE status = 'SUCCESS') AS p50_ms,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - created_at) * 1000) FILTER (WHERE status = 'SUCCESS') AS p95_ms
    FROM webhook_delivery
   WHERE completed_at >= ? AND completed_at < ?
   GROUP BY GROUPING SETS ((endpoint_id, k), (endpoint_id))`;

export const ATTENTION_SQL = `
  SELECT (SELECT count(*) FROM webhook_delivery WHERE status = 'FAILED' AND NOT redrive_on_enable)::int AS failed,
         (SELECT count(*) FROM webhook_delivery WHERE redrive_on_enable)::int AS held,
         (SELECT count(*) FROM webhook_delivery WHERE status = 'PENDING' AND created_at < now() - interval '1 minute')::int AS pending_stale,
         (SELECT count(*) FROM webhook_endpoint WHERE active AND disabled_at IS NOT NULL)::int AS disabled,
         (SELECT count(*) FROM webhook_endpoint WHERE active AND paused_until > now())::int AS paused,
         now() AS at`;

export function createStatsQueries(db: Db) {
  return {
    async eventsPerSource(w: StatsWindow): Promise<SourceBucketRow[]> {
      const res = await db.raw<{ rows: Array<{ source: string; k: string; n: number }> }>(EVENTS_PER_SOURCE_SQL, [
        w.bucketSeconds,
        w.from,
        w.to,
      ]);
      return res.rows.map((r) => ({ source: r.source, k: Number(r.k), n: r.n }));
    },

    async deliveriesPerEndpoint(w: StatsWindow): Promise<EndpointBucketRow[]> {
      const res = await db.raw<{ rows: Array<Omit<EndpointBucketRow, 'k'> & { k: string | null }> }>(DELIVERIES_PER_ENDPOINT_SQL, [
        w.bucketSeconds,
        w.from,
        w.to,
      ]);
      return res.rows.map((r) => ({ ...r, k: r.k === null ? null : Number(r.k) }));
    },

    async endpointNames(ids: string[]): Promise<EndpointNameRow[]> {
      if (ids.length === 0) return [];
      return (await db('webhook_endpoint').select('id', 'name', 'source').whereIn('id', ids)) as EndpointNameRow[];
    },

    async attention(): Promise<AttentionRow> {
      const res = await db.raw<{ rows: AttentionRow[] }>(ATTENTION_SQL);
      return res.rows[0] as AttentionRow;
    },
  };
}

export type StatsQueries = ReturnType<typeof createStatsQueries>;
