import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTENTION_SQL, DELIVERIES_PER_ENDPOINT_SQL, EVENTS_PER_SOURCE_SQL } from '../../src/db/stats-queries.js';
import { addEndpoint } from '../fanout/support/harness.js';
import { startAdminHarness, type AdminHarness } from './support/admin-harness.js';
import { planOf } from '../support/query-plan.js';

interface Timeseries {
  from: string;
  to: string;
  bucket: string;
  bucketSeconds: number;
  buckets: string[];
  eventsBySource: Array<{ source: string; counts: number[]; total: number }>;
  sourcesOmitted: number;
  deliveriesByOutcome: { SUCCESS: number[]; FAILED: number[] };
  endpoints: Array<{
    endpointId: string;
    name: string;
    source: string;
    completed: number[];
    failed: number[];
    failureRate: Array<number | null>;
    latencyP50Ms: Array<number | null>;
    latencyP95Ms: Array<number | null>;
    total: { completed: number; failed: number; failureRate: number | null; latencyP50Ms: number | null; latencyP95Ms: number | null };
  }>;
  endpointsOmitted: number;
}

interface Attention {
  failedDeliveries: number;
  heldDeliveries: number;
  pendingOverOneMinute: number;
  disabledEndpoints: number;
  pausedEndpoints: number;
  at: string;
}

const T0 = Date.parse('2031-03-01T10:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000);

describe('admin API: the overview aggregates (GET /api/stats/*)', () => {
  let h: AdminHarness;
  let token: string;
  const db = () => h.fanout.database.db;

  async function insertEvent(source: string, receivedAt: Date): Promise<string> {
    const [row] = (await db()('webhook_event')
      .insert({ source, payload: Buffer.from('{}'), status: 'RECEIVED', received_at: receivedAt })
      .returning('id')) as Array<{ id: string }>;
    return row!.id;
  }

  async function insertDelivery(
    eventId: string,
    endpointId: string,
    status: string,
    createdAt: Date,
    completedAt: Date | null,
    extra: Record<string, unknown> = {},
  ) {
    await db()('webhook_delivery').insert({
      event_id: eventId,
      endpoint_id: endpointId,
      status,
      created_at: createdAt,
      completed_at: completedAt,
      ...extra,
    });
  }

  beforeAll(async () => {
    h = await startAdminHarness();
    token = await h.token('reader');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('counts events per source, outcomes, failure rate and latency percentiles per endpoint, bucket by bucket', async () => {
    const a = await addEndpoint(h.fanout.repos, { source: 'shop', url: 'http://127.0.0.1:9/a', name: 'ns/orders-a' });
    const b = await addEndpoint(h.fanout.repos, { source: 'shop', url: 'http://127.0.0.1:9/b', name: 'ns/orders-b' });
    const e1 = await insertEvent('shop', at(10));
    const e2 = await insertEvent('shop', at(20));
    const e3 = await insertEvent('shop', at(70));
    await insertEvent('billing', at(130));
    // outside the range on both sides
    await insertEvent('shop', at(-1));
    await insertEvent('shop', at(180));

    // endpoint a, bucket 0: two successes (1 s and 3 s) and a failure; endpoint b, bucket 1: one success (0.5 s)
    await insertDelivery(e1, a, 'SUCCESS', at(10), at(11));
    await insertDelivery(e2, a, 'SUCCESS', at(20), at(23));
    await insertDelivery(e3, a, 'FAILED', at(20), at(50));
    await insertDelivery(e1, b, 'SUCCESS', new Date(T0 + 74_500), at(75));
    // not ended: in no series
    await insertDelivery(e2, b, 'PENDING', at(20), null);

    const res = await h.get(`/api/stats/timeseries?from=${at(0).toISOString()}&to=${at(180).toISOString()}&bucket=1m`, token);
    expect(res.status).toBe(200);
    const ts = res.json() as Timeseries;
    expect(ts.buckets).toEqual([at(0), at(60), at(120)].map((d) => d.toISOString()));
    expect(ts.bucketSeconds).toBe(60);
    expect(ts.eventsBySource).toEqual([
      { source: 'shop', counts: [2, 1, 0], total: 3 },
      { source: 'billing', counts: [0, 0, 1], total: 1 },
    ]);
    expect(ts.deliveriesByOutcome).toEqual({ SUCCESS: [2, 1, 0], FAILED: [1, 0, 0] });
    expect(ts.endpoints.map((e) => e.name)).toEqual(['ns/orders-a', 'ns/orders-b']);
    const [ea, eb] = ts.endpoints;
    expect(ea).toMatchObject({
      endpointId: a,
      source: 'shop',
      completed: [3, 0, 0],
      failed: [1, 0, 0],
      failureRate: [1 / 3, null, null],
      // percentile_cont of [1000, 3000]: 2000 and 1000 + 0.95 * 2000
      latencyP50Ms: [2000, null, null],
      latencyP95Ms: [2900, null, null],
      total: { completed: 3, failed: 1, failureRate: 1 / 3, latencyP50Ms: 2000, latencyP95Ms: 2900 },
    });
    expect(eb).toMatchObject({
      completed: [0, 1, 0],
      failed: [0, 0, 0],
      failureRate: [null, 0, null],
      latencyP50Ms: [null, 500, null],
      total: { completed: 1, latencyP95Ms: 500 },
    });

    // a range that is not aligned is rounded out to whole buckets
    const rounded = (
      await h.get(`/api/stats/timeseries?from=${at(30).toISOString()}&to=${at(90).toISOString()}&bucket=1m`, token)
    ).json() as Timeseries;
    expect([rounded.from, rounded.to]).toEqual([at(0).toISOString(), at(120).toISOString()]);
    expect(rounded.eventsBySource).toEqual([{ source: 'shop', counts: [2, 1], total: 3 }]);
  });

  it('counts what needs a person: FAILED (not held), held, PENDING over a minute, disabled and paused endpoints', async () => {
    const before = (await h.get('/api/stats/attention', token)).json() as Attention;
    const ep = await addEndpoint(h.fanout.repos, { source: 'attn', url: 'http://127.0.0.1:9/x', name: 'ns/attn' });
    const paused = await addEndpoint(h.fanout.repos, { source: 'attn', url: 'http://127.0.0.1:9/y', name: 'ns/paused' });
    await db()('webhook_endpoint').where({ id: ep }).update({ disabled_at: new Date() });
    await db()('webhook_endpoint')
      .where({ id: paused })
      .update({ paused_until: new Date(Date.now() + 600_000) });
    const now = Date.now();
    for (let i = 0; i < 3; i++) await insertDelivery(await insertEvent('attn', new Date(now)), ep, 'FAILED', new Date(now), new Date(now));
    for (let i = 0; i < 2; i++)
      await insertDelivery(await insertEvent('attn', new Date(now)), ep, 'FAILED', new Date(now), new Date(now), {
        redrive_on_enable: true,
      });
    await insertDelivery(await insertEvent('attn', new Date(now)), paused, 'PENDING', new Date(now - 120_000), null);
    // PENDING for less than a minute: not yet a concern
    await insertDelivery(await insertEvent('attn', new Date(now)), paused, 'PENDING', new Date(now - 5_000), null);

    const after = (await h.get('/api/stats/attention', token)).json() as Attention;
    expect({
      failed: after.failedDeliveries - before.failedDeliveries,
      held: after.heldDeliveries - before.heldDeliveries,
      pending: after.pendingOverOneMinute - before.pendingOverOneMinute,
      disabled: after.disabledEndpoints - before.disabledEndpoints,
      paused: after.pausedEndpoints - before.pausedEndpoints,
    }).toEqual({ failed: 3, held: 2, pending: 1, disabled: 1, paused: 1 });
    expect(Math.abs(Date.parse(after.at) - Date.now())).toBeLessThan(60_000);
  });

  it('is bounded: clear 400 problems beyond 31 days or 1000 buckets, for wrong parameters; read:webhooks needed', async () => {
    const problem = async (query: string) => {
      const res = await h.get(`/api/stats/timeseries?${query}`, token);
      expect(res.status, query).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      return (res.json() as { detail: string }).detail;
    };
    expect(await problem('from=2031-01-01T00:00:00Z&to=2031-03-01T00:00:00Z')).toMatch(/at most 31 days apart/);
    expect(await problem('from=2031-01-01T00:00:00Z&to=2031-01-03T00:00:00Z&bucket=1m')).toMatch(
      /bucket 1m makes 2880 buckets of this range, at most 1000/,
    );
    expect(await problem('from=2031-01-02T00:00:00Z&to=2031-01-01T00:00:00Z')).toMatch(/from must be before/);
    expect(await problem('bucket=2m')).toMatch(/bucket/);
    expect(await problem('from=yesterday')).toMatch(/from/);
    expect(await problem('window=1h')).toMatch(/window|additional/);

    // a day without a bucket: 15 minutes, 96 of them
    const day = (await h.get('/api/stats/timeseries?from=2031-01-01T00:00:00Z&to=2031-01-02T00:00:00Z', token)).json() as Timeseries;
    expect([day.bucket, day.buckets.length]).toEqual(['15m', 96]);
    // the defaults: the last hour
    const hour = (await h.get('/api/stats/timeseries', token)).json() as Timeseries;
    expect(hour.bucket).toBe('1m');
    expect(hour.buckets.length).toBeGreaterThanOrEqual(60);

    expect((await h.get('/api/stats/timeseries')).status).toBe(401);
    expect((await h.get('/api/stats/attention', await h.token('nobody'))).status).toBe(403);
    const openapi = (await h.get('/api/openapi.json')).json() as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).toEqual(expect.arrayContaining(['/api/stats/timeseries', '/api/stats/attention']));
  });

  it('reads 100 000 events through indexes: no sequential scan of the events (or deliveries) table', async () => {
    const endpoint = await addEndpoint(h.fanout.repos, { source: 'bulk', url: 'http://127.0.0.1:9/bulk', name: 'ns/bulk' });
    const start = Date.parse('2032-01-01T00:00:00.000Z');
    const week = 7 * 86_400_000;
    // a week of events (what a table holds with a short retention), one every 6.048 s, with payloads and headers of a realistic size; a
    // delivery for each (one transaction, past the pool's statement timeout: a loaded machine)
    await db().transaction(async (trx) => {
      await trx.raw('SET LOCAL statement_timeout = 0');
      await trx.raw(
        `INSERT INTO webhook_event (source, external_event_id, event_type, payload, headers, status, received_at, completed_at)
       SELECT 'bulk-' || (i % 7), 'evt-' || i, 'order.created', convert_to(repeat('{"k":"value"}', 30), 'UTF8'),
              jsonb_build_object('content-type', 'application/json', 'user-agent', 'sender/1.0', 'x-request-id', md5(i::text)),
              'COMPLETED', to_timestamp(? / 1000.0) + i * interval '6048 milliseconds', to_timestamp(? / 1000.0) + i * interval '6048 milliseconds' + interval '2 seconds'
         FROM generate_series(0, 99999) AS i`,
        [start, start],
      );
      await trx.raw(
        `INSERT INTO webhook_delivery (event_id, endpoint_id, status, attempts, created_at, completed_at, last_response_status, last_response_body)
       SELECT id, ?, CASE WHEN random() < 0.1 THEN 'FAILED' ELSE 'SUCCESS' END, 1, received_at, completed_at, 200, repeat('ok', 50)
         FROM webhook_event WHERE source LIKE 'bulk-%'`,
        [endpoint],
      );
    });
    // what autovacuum does to a table that grew: statistics and the visibility map
    await db().raw('VACUUM ANALYZE webhook_event');
    await db().raw('VACUUM ANALYZE webhook_delivery');

    const plan = (sql: string, bindings: Array<Date | number>) => planOf(db(), sql, bindings);
    // the console's two charts: the last hour and the last day of the week
    const end = start + week;
    const ranges = [
      { name: 'the last hour, 1m', from: end - 3_600_000, to: end, bucket: 60 },
      { name: 'the last day, 15m', from: end - 86_400_000, to: end, bucket: 900 },
    ];
    const seen: string[] = [];
    for (const r of ranges) {
      const bindings = [r.bucket, new Date(r.from), new Date(r.to)];
      for (const [what, sql, table, index] of [
        ['events per source', EVENTS_PER_SOURCE_SQL, 'webhook_event', 'webhook_event_received_id_source_idx'],
        ['deliveries per endpoint', DELIVERIES_PER_ENDPOINT_SQL, 'webhook_delivery', 'webhook_delivery_completed_idx'],
      ] as const) {
        const nodes = await plan(sql, bindings);
        const scans = nodes
          .filter((n) => n['Relation Name'] === table || n['Index Name'])
          .map((n) => `${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`);
        seen.push(`${what}, ${r.name}: ${scans.join(', ')}`);
        expect(scans, `${what}, ${r.name}`).not.toContain('Seq Scan');
        // index-only where VACUUM could set the visibility map, else through the index to the rows
        expect(
          nodes.map((n) => n['Index Name']),
          `${what}, ${r.name}`,
        ).toContain(index);
      }
    }
    const attention = await plan(ATTENTION_SQL, []);
    const onEvents = attention.filter(
      (n) => n['Relation Name'] === 'webhook_event' || (n['Relation Name'] === 'webhook_delivery' && n['Node Type'] === 'Seq Scan'),
    );
    seen.push(
      `attention: ${attention
        .filter((n) => n['Relation Name'])
        .map((n) => `${n['Node Type']} ${n['Relation Name']}${n['Index Name'] ? ` (${n['Index Name']})` : ''}`)
        .join(', ')}`,
    );
    expect(onEvents).toEqual([]);
    console.log(seen.join('\n'));

    // and the answers are right: the week's 100 000 events in 6h buckets, the last day's share
    const all = (
      await h.get(`/api/stats/timeseries?from=${new Date(start).toISOString()}&to=${new Date(end).toISOString()}&bucket=6h`, token)
    ).json() as Timeseries;
    expect(all.buckets).toHaveLength(28);
    expect(all.eventsBySource.reduce((sum, s) => sum + s.total, 0)).toBe(100_000);
    expect(all.eventsBySource).toHaveLength(7);
    const bulk = all.endpoints.find((e) => e.endpointId === endpoint);
    // the last event comes 604 794 s after the start, its delivery 2 s later: all within the week
    expect(bulk?.total.completed).toBe(100_000);
    expect(bulk?.total.latencyP50Ms).toBe(2000);
    const asked = performance.now();
    const day = (
      await h.get(
        `/api/stats/timeseries?from=${new Date(end - 86_400_000).toISOString()}&to=${new Date(end).toISOString()}&bucket=15m`,
        token,
      )
    ).json() as Timeseries;
    console.log(`the last day of 100 000 events (96 buckets) answered in ${Math.round(performance.now() - asked)} ms`);
    // events i with i * 6.048 s in the last day: from ceil(518400 / 6.048) = 85715 to 99999
    expect(day.eventsBySource.reduce((sum, s) => sum + s.total, 0)).toBe(100_000 - 85_715);
  });
});
