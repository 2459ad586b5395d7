import type { Db } from './knex.js';
import { scopeSql, UNSCOPED, whereNamespaceIn, type TenantScope } from './tenant-scope.js';

// Aggregates for the console's overview (GET /api/stats/*). Each statement reads one table
// through an index it can answer from (migrations 057 and 076): counts grouped by bucket number,
// where a bucket is floor(epoch seconds / width).

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

/** A statement and its bindings after the caller's own. */
interface Scoped {
  sql: string;
  bindings: string[];
}

/** Events per source and bucket; a tenant's (tenant-scope.ts) only over the events it sees. */
export function eventsPerSourceSql(scope: TenantScope): Scoped {
  const visible = scopeSql(scope).event('e');
  return {
    sql: `
  SELECT source, floor(extract(epoch FROM received_at) / ?)::bigint AS k, count(*)::int AS n
    FROM webhook_event e
   WHERE received_at >= ? AND received_at < ?${visible.sql}
   GROUP BY source, k`,
    bindings: visible.bindings,
  };
}

// latency: creation (the event's fan-out) to the end, of the deliveries that succeeded; one
// statement gives each (endpoint, bucket) and each endpoint's total over the range
export function deliveriesPerEndpointSql(scope: TenantScope): Scoped {
  const visible = scopeSql(scope).endpoint('endpoint_id');
  return {
    sql: `
  SELECT endpoint_id, floor(extract(epoch FROM completed_at) / ?)::bigint AS k,
         count(*)::int AS completed,
         (count(*) FILTER (WHERE status = 'FAILED'))::int AS failed,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - created_at) * 1000) FILTER (WHERE status = 'SUCCESS') AS p50_ms,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM completed_at - created_at) * 1000) FILTER (WHERE status = 'SUCCESS') AS p95_ms
    FROM webhook_delivery
   WHERE completed_at >= ? AND completed_at < ?${visible.sql}
   GROUP BY GROUPING SETS ((endpoint_id, k), (endpoint_id))`,
    bindings: visible.bindings,
  };
}

export function attentionSql(scope: TenantScope): Scoped {
  const s = scopeSql(scope);
  const d = s.endpoint('endpoint_id');
  const p = s.namespace('namespace');
  return {
    sql: `
  SELECT (SELECT count(*) FROM webhook_delivery WHERE status = 'FAILED' AND NOT redrive_on_enable${d.sql})::int AS failed,
         (SELECT count(*) FROM webhook_delivery WHERE redrive_on_enable${d.sql})::int AS held,
         (SELECT count(*) FROM webhook_delivery WHERE status = 'PENDING' AND created_at < now() - interval '1 minute'${d.sql})::int AS pending_stale,
         (SELECT count(*) FROM webhook_endpoint WHERE active AND disabled_at IS NOT NULL${p.sql})::int AS disabled,
         (SELECT count(*) FROM webhook_endpoint WHERE active AND paused_until > now()${p.sql})::int AS paused,
         now() AS at`,
    bindings: [...d.bindings, ...d.bindings, ...d.bindings, ...p.bindings, ...p.bindings],
  };
}

/** The statements of an unscoped caller (the plans test/api/stats.test.ts checks). */
export const EVENTS_PER_SOURCE_SQL = eventsPerSourceSql(UNSCOPED).sql;
export const DELIVERIES_PER_ENDPOINT_SQL = deliveriesPerEndpointSql(UNSCOPED).sql;
export const ATTENTION_SQL = attentionSql(UNSCOPED).sql;

export function createStatsQueries(db: Db) {
  return {
    async eventsPerSource(w: StatsWindow, scope: TenantScope): Promise<SourceBucketRow[]> {
      const q = eventsPerSourceSql(scope);
      const res = await db.raw<{ rows: Array<{ source: string; k: string; n: number }> }>(q.sql, [
        w.bucketSeconds,
        w.from,
        w.to,
        ...q.bindings,
      ]);
      return res.rows.map((r) => ({ source: r.source, k: Number(r.k), n: r.n }));
    },

    async deliveriesPerEndpoint(w: StatsWindow, scope: TenantScope): Promise<EndpointBucketRow[]> {
      const q = deliveriesPerEndpointSql(scope);
      const res = await db.raw<{ rows: Array<Omit<EndpointBucketRow, 'k'> & { k: string | null }> }>(q.sql, [
        w.bucketSeconds,
        w.from,
        w.to,
        ...q.bindings,
      ]);
      return res.rows.map((r) => ({ ...r, k: r.k === null ? null : Number(r.k) }));
    },

    async endpointNames(ids: string[], scope: TenantScope): Promise<EndpointNameRow[]> {
      if (ids.length === 0) return [];
      return (await whereNamespaceIn(
        db('webhook_endpoint').select('id', 'name', 'source').whereIn('id', ids),
        scope,
        'namespace',
      )) as EndpointNameRow[];
    },

    async attention(scope: TenantScope): Promise<AttentionRow> {
      const q = attentionSql(scope);
      const res = await db.raw<{ rows: AttentionRow[] }>(q.sql, q.bindings);
      return res.rows[0] as AttentionRow;
    },
  };
}

export type StatsQueries = ReturnType<typeof createStatsQueries>;
