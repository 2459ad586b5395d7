import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdminHarness, type AdminHarness } from '../api/support/admin-harness.js';
import { buildTenantScene, type TenantScene } from '../api/support/tenant-scene.js';
import type { HttpResult } from '../support/http.js';

// A tenant's token (team-b, docs/tenancy.md) probing the other tenant's (team-a) event, delivery
// and attempt ids through every route of the admin API, in every place an id goes: the path, the
// filters, the bulk replay's body, a forged cursor, upper case. Each must answer exactly as an id
// that does not exist (same status, same body but the id, no slower pair by pair), change
// nothing, and leave nothing of team-a's in an answer or at error level in the log.

const cursorOf = (ts: string, id: string) => Buffer.from(`${ts}|${id}`).toString('base64url');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** Two-sided exact sign test (as test/hostile/timing.test.ts): how likely a split this uneven is when neither side is slower. */
function signTestP(diffs: number[]): number {
  const nonzero = diffs.filter((d) => d !== 0);
  const n = nonzero.length;
  const k = Math.min(nonzero.filter((d) => d > 0).length, nonzero.filter((d) => d < 0).length);
  let tail = 0;
  let c = 1;
  for (let i = 0; i <= k; i++) {
    tail += c;
    c = (c * (n - i)) / (i + 1);
  }
  return Math.min(1, (2 * tail) / 2 ** n);
}

describe("hostile: a tenant probing another tenant's ids", () => {
  let h: AdminHarness;
  let scene: TenantScene;
  let tokenB: string;
  /** everything of team-a's an answer to team-b must never carry */
  let secretsOfA: string[];
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });

  beforeAll(async () => {
    h = await startAdminHarness({ logger: pino({ level: 'info' }, sink) });
    const receiver = await h.receiver([{ status: 500 }]);
    scene = await buildTenantScene(h.fanout.database.db, h.fanout.repos, receiver.url);
    tokenB = await h.token('tenantB');
    secretsOfA = [
      scene.endpoints.a,
      scene.endpoints.aDenied,
      scene.deliveries.aShared,
      scene.deliveries.aPrivate,
      scene.deliveries.aDeniedShop,
      scene.events.payPrivate,
      'refund',
      'a-payments',
      'a-on-shop',
      'team-a',
    ];
  });
  afterAll(async () => {
    await h?.close();
  });

  const idsOfA = () => ({
    event: scene.events.payPrivate,
    deliveries: [scene.deliveries.aShared, scene.deliveries.aPrivate, scene.deliveries.aDeniedShop],
    endpoints: [scene.endpoints.a, scene.endpoints.aDenied],
  });

  const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    method === 'GET' ? h.get(path, tokenB) : h.post(path, tokenB, body);

  /** The answer with the probed id taken out: what must equal the answer for an id that does not exist. */
  const shape = (res: HttpResult, id: string) => ({
    status: res.status,
    contentType: res.headers['content-type'],
    body: res.text.replaceAll(id, '<id>').replaceAll(id.toUpperCase(), '<id>'),
  });

  const ROUTES: Array<[string, 'GET' | 'POST', (id: string) => string, () => string[]]> = [
    ['GET /api/events/{id}', 'GET', (id) => `/api/events/${id}`, () => [idsOfA().event]],
    ['POST /api/events/{id}/replay', 'POST', (id) => `/api/events/${id}/replay`, () => [idsOfA().event]],
    ['GET /api/deliveries/{id}', 'GET', (id) => `/api/deliveries/${id}`, () => idsOfA().deliveries],
    ['GET /api/deliveries/{id}/attempts', 'GET', (id) => `/api/deliveries/${id}/attempts`, () => idsOfA().deliveries],
    ['POST /api/deliveries/{id}/replay', 'POST', (id) => `/api/deliveries/${id}/replay`, () => idsOfA().deliveries],
    ['POST /api/endpoints/{id}/enable', 'POST', (id) => `/api/endpoints/${id}/enable`, () => idsOfA().endpoints],
  ];

  it.each(ROUTES)('%s: every id of team-a, lower and upper case, answers as an absent id does', async (_name, method, path, ids) => {
    const absent = randomUUID();
    const want = shape(await call(method, path(absent)), absent);
    expect(want.status).toBe(404);
    for (const id of ids()) {
      for (const variant of [id, id.toUpperCase()]) expect(shape(await call(method, path(variant)), variant)).toEqual(want);
    }
  });

  it.each<[string, (id: string) => string]>([
    ['deliveries by eventId', (id) => `/api/deliveries?eventId=${id}`],
    ['deliveries by endpointId', (id) => `/api/deliveries?endpointId=${id}`],
  ])('%s of team-a: an empty page, as for an absent id', async (_name, path) => {
    const { event, endpoints } = idsOfA();
    const absent = await h.get(path(randomUUID()), tokenB);
    expect(absent.json()).toEqual({ items: [], nextCursor: null });
    for (const id of [event, ...endpoints]) {
      const res = await h.get(path(id), tokenB);
      expect(res.status, res.text).toBe(200);
      expect(res.json()).toEqual({ items: [], nextCursor: null });
    }
  });

  it("a bulk replay naming team-a's endpoints, its dry run and the real one: nothing matched, nothing reopened", async () => {
    for (const endpointId of idsOfA().endpoints) {
      const dry = await h.post('/api/deliveries/replay', tokenB, { endpointId, dryRun: true });
      expect(dry.status, dry.text).toBe(200);
      expect(dry.json()).toMatchObject({ matched: 0, replayed: 0 });
      const real = await h.post('/api/deliveries/replay', tokenB, { endpointId });
      expect(real.status, real.text).toBe(202);
      expect(real.json()).toMatchObject({ matched: 0, replayed: 0, replays: [] });
    }
  });

  it("a cursor forged from team-a's delivery positions the page, and the page holds team-b's rows only", async () => {
    const row = (await h.fanout.database.db('webhook_delivery').where({ id: scene.deliveries.aShared }).first()) as { created_at: Date };
    // just after the row's own time: every row of the scene comes before it, newest first
    const ts = new Date(row.created_at.getTime() + 1000).toISOString().replace('Z', '000Z');
    const res = await h.get(`/api/deliveries?cursor=${cursorOf(ts, scene.deliveries.aShared)}`, tokenB);
    expect(res.status, res.text).toBe(200);
    const got = (res.json() as { items: Array<{ id: string }> }).items.map((d) => d.id).sort();
    expect(got).toEqual([scene.deliveries.bOnPayShared, scene.deliveries.bShop, scene.deliveries.bShopOnly].sort());
  });

  it("no answer team-b got carries anything of team-a's: lists, the shared event, statistics", async () => {
    const answers = await Promise.all(
      [
        '/api/events',
        '/api/deliveries',
        '/api/endpoints',
        '/api/inbound-credentials',
        `/api/events/${scene.events.payShared}`,
        `/api/events/${scene.events.shop}`,
        '/api/stats/timeseries',
        '/api/stats/attention',
      ].map((p) => h.get(p, tokenB)),
    );
    for (const res of answers) {
      expect(res.status, res.text).toBe(200);
      for (const s of secretsOfA) expect(res.text).not.toContain(s);
    }
  });

  it("team-a's deliveries are as they were: FAILED, one attempt, not touched by team-b's probes", async () => {
    const rows = (await h.fanout.database.db('webhook_delivery').whereIn('id', idsOfA().deliveries)) as Array<{
      status: string;
      attempts: number;
      updated_at: Date;
      created_at: Date;
    }>;
    expect(rows).toHaveLength(3);
    for (const r of rows) expect({ status: r.status, attempts: r.attempts }).toEqual({ status: 'FAILED', attempts: 1 });
    const attempts = await h.fanout.database.db('webhook_delivery_attempt').whereIn('delivery_id', idsOfA().deliveries);
    expect(attempts).toHaveLength(3);
  });

  it('a foreign id takes the time an absent one does, pair by pair: its existence does not show in the timing', async () => {
    const ROUNDS = 30;
    for (const [path, foreign] of [
      [(id: string) => `/api/deliveries/${id}/attempts`, scene.deliveries.aPrivate],
      [(id: string) => `/api/events/${id}`, scene.events.payPrivate],
    ] as const) {
      const timed = async (id: string) => {
        const t0 = process.hrtime.bigint();
        const res = await h.get(path(id), tokenB);
        expect(res.status).toBe(404);
        return Number(process.hrtime.bigint() - t0) / 1e6;
      };
      for (let i = 0; i < 3; i++) {
        await timed(foreign);
        await timed(randomUUID());
      }
      const diffs: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // the order alternates, so drift in the machine's load falls on both sides
        if (round % 2 === 0) {
          const f = await timed(foreign);
          diffs.push(f - (await timed(randomUUID())));
        } else {
          const a = await timed(randomUUID());
          diffs.push((await timed(foreign)) - a);
        }
      }
      const p = signTestP(diffs);
      console.log(
        `${path('{id}')}: foreign minus absent, median ${median(diffs).toFixed(2)} ms, foreign slower in ${diffs.filter((d) => d > 0).length}/${ROUNDS} pairs, sign test p = ${p.toPrecision(2)}`,
      );
      // one statement answers both; a check made after the read (a second round trip for a
      // foreign id) would make it the slower one in nearly every pair
      expect(p, path('{id}')).toBeGreaterThan(0.001);
      expect(Math.abs(median(diffs)), path('{id}')).toBeLessThan(5);
    }
  }, 120_000);

  it('none of the probes logged at error level', () => {
    const errors = logLines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 50);
    expect(errors.map((e) => e.msg)).toEqual([]);
  });
});
