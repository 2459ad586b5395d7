import bcrypt from 'bcrypt';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEndpoint, uniqueSource } from '../fanout/support/harness.js';
import { planOf } from '../support/query-plan.js';
import { startAdminHarness, type AdminHarness } from './support/admin-harness.js';

interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
interface EventItem {
  id: string;
  source: string;
  status: string;
  type: string | null;
  receivedAt: string;
  payloadSize: number;
}
interface DeliveryItem {
  id: string;
  eventId: string;
  endpointId: string;
  source: string;
  status: string;
  createdAt: string;
}

const BASE = Date.parse('2030-01-01T12:00:00.000Z');

describe('admin API: reads, filters and cursor pagination', () => {
  let h: AdminHarness;
  let token: string;
  const db = () => h.fanout.database.db;

  /** n events of one source, one second apart, newest first as i grows smaller (one INSERT). */
  async function insertEvents(
    source: string,
    n: number,
    opts: { status?: (i: number) => string; type?: (i: number) => string | null } = {},
  ) {
    const rows = Array.from({ length: n }, (_, i) => ({
      source,
      external_event_id: `${source}-${i}`,
      event_type: opts.type ? opts.type(i) : 'order.created',
      payload: Buffer.from(`{"n":${i}}`),
      content_type: 'application/json',
      status: opts.status ? opts.status(i) : 'COMPLETED',
      received_at: new Date(BASE - i * 1000),
    }));
    const inserted = (await db()('webhook_event').insert(rows).returning(['id', 'received_at'])) as Array<{ id: string }>;
    return inserted.map((r) => r.id);
  }

  async function allPages<T>(path: string): Promise<Page<T>[]> {
    const pages: Page<T>[] = [];
    let cursor: string | null = null;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const res = await h.get(`${path}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ''}`, token);
      expect(res.status, res.text).toBe(200);
      const page = res.json() as Page<T>;
      pages.push(page);
      cursor = page.nextCursor;
    } while (cursor !== null && pages.length < 20);
    return pages;
  }

  beforeAll(async () => {
    h = await startAdminHarness();
    token = await h.token('reader');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('120 events: pages of 50, 50 and 20, newest first, nextCursor null at the end, no duplicates', async () => {
    const source = uniqueSource('page');
    const ids = await insertEvents(source, 120);
    const pages = await allPages<EventItem>(`/api/events?source=${source}`);
    expect(pages.map((p) => p.items.length)).toEqual([50, 50, 20]);
    expect(pages[2]?.nextCursor).toBeNull();
    const seen = pages.flatMap((p) => p.items.map((e) => e.id));
    // inserted with received_at BASE - i s: the list is the insertion order
    expect(seen).toEqual(ids);
    const times = pages.flatMap((p) => p.items.map((e) => Date.parse(e.receivedAt)));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('limit sets the page size; rows with the same timestamp are split across pages by id without loss', async () => {
    const source = uniqueSource('ties');
    // one INSERT without received_at: every row gets the same now()
    const rows = Array.from({ length: 7 }, (_, i) => ({ source, external_event_id: `t${i}`, payload: Buffer.from('x') }));
    const ids = ((await db()('webhook_event').insert(rows).returning('id')) as Array<{ id: string }>).map((r) => r.id);
    const pages = await allPages<EventItem>(`/api/events?source=${source}&limit=3`);
    expect(pages.map((p) => p.items.length)).toEqual([3, 3, 1]);
    const seen = pages.flatMap((p) => p.items.map((e) => e.id));
    expect(new Set(seen)).toEqual(new Set(ids));
    expect(seen).toEqual([...ids].sort().reverse());
  });

  it('filters events by source, status, type and time, combined with AND', async () => {
    const source = uniqueSource('filt');
    await insertEvents(source, 10, {
      status: (i) => (i % 2 === 0 ? 'FAILED' : 'COMPLETED'),
      type: (i) => (i < 5 ? 'invoice.paid' : 'order.created'),
    });
    const list = async (q: string) => {
      const res = await h.get(`/api/events?source=${source}&${q}`, token);
      expect(res.status, res.text).toBe(200);
      return (res.json() as Page<EventItem>).items;
    };
    expect(await list('status=FAILED')).toHaveLength(5);
    expect((await list('status=FAILED')).every((e) => e.status === 'FAILED')).toBe(true);
    expect(await list('type=invoice.paid')).toHaveLength(5);
    expect(await list('status=FAILED&type=invoice.paid')).toHaveLength(3); // i = 0, 2, 4
    // i = 2..5: received at BASE-5s (inclusive) .. BASE-1s (exclusive)
    const from = new Date(BASE - 5000).toISOString();
    const to = new Date(BASE - 1000).toISOString();
    const ranged = await list(`from=${from}&to=${to}`);
    expect(ranged.map((e) => e.receivedAt)).toEqual([2, 3, 4, 5].map((i) => new Date(BASE - i * 1000).toISOString()));
    expect(await list('status=RECEIVED')).toEqual([]);
    const other = await h.get(`/api/events?source=${uniqueSource('none')}`, token);
    expect(other.json()).toEqual({ items: [], nextCursor: null });
  });

  it('finds an event by the id its sender gave it (externalId, with its source; alone it is 400)', async () => {
    const source = uniqueSource('ext');
    const ids = await insertEvents(source, 3);
    const found = await h.get(`/api/events?source=${source}&externalId=${source}-1`, token);
    expect(found.status, found.text).toBe(200);
    expect((found.json() as Page<EventItem>).items.map((e) => e.id)).toEqual([ids[1]]);
    const none = await h.get(`/api/events?source=${source}&externalId=${source}-9`, token);
    expect(none.json()).toEqual({ items: [], nextCursor: null });
    // another source's event with the same external id is not found through this source
    const elsewhere = uniqueSource('ext');
    await insertEvents(elsewhere, 1);
    const cross = await h.get(`/api/events?source=${source}&externalId=${elsewhere}-0`, token);
    expect((cross.json() as Page<EventItem>).items).toEqual([]);
    const alone = await h.get(`/api/events?externalId=${source}-1`, token);
    expect(alone.status).toBe(400);
    expect((alone.json() as { detail: string }).detail).toMatch(/externalId needs querystring\/source/);
  });

  it('invalid filters, limits and cursors answer 400 problem+json', async () => {
    for (const q of [
      'status=BOGUS',
      'status=failed',
      'limit=0',
      'limit=201',
      'limit=ten',
      'from=yesterday',
      'from=2030-01-01T00:00:00', // no offset: ambiguous
      'stauts=FAILED', // a typo must not silently list everything
      'cursor=***',
      `cursor=${Buffer.from('2030-01-01|not-a-uuid').toString('base64url')}`,
      `cursor=${Buffer.from('hello').toString('base64url')}`,
    ]) {
      const res = await h.get(`/api/events?${q}`, token);
      expect(res.status, q).toBe(400);
      expect(res.headers['content-type'], q).toMatch(/^application\/problem\+json/);
      expect((res.json() as { status: number }).status).toBe(400);
    }
    for (const [q, named] of [
      ['eventType=', /eventType/],
      [`eventType=${'x'.repeat(201)}`, /eventType/],
      ['eventType=a%00b', /eventType/],
      ['event_type=order.created', /event_type/], // the column's name is not the filter's: 400, not everything
    ] as const) {
      const res = await h.get(`/api/deliveries?${q}`, token);
      expect(res.status, q).toBe(400);
      expect(res.headers['content-type'], q).toMatch(/^application\/problem\+json/);
      expect((res.json() as { detail: string }).detail, q).toMatch(named);
    }
    expect((await h.get('/api/deliveries?endpointId=nope', token)).status).toBe(400);
    expect((await h.get('/api/deliveries?status=RECEIVED', token)).status).toBe(400);
    expect((await h.get('/api/events/not-a-uuid', token)).status).toBe(400);
  });

  it('unknown ids answer 404 problem+json', async () => {
    for (const p of ['/api/events/00000000-0000-4000-8000-000000000000', '/api/deliveries/00000000-0000-4000-8000-000000000000']) {
      const res = await h.get(p, token);
      expect(res.status, p).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 404, code: 'not_found' });
    }
  });

  it('an event with its deliveries; the payload as text when UTF-8, else base64', async () => {
    const source = uniqueSource('detail');
    const endpointId = await addEndpoint(h.fanout.repos, { source, url: 'http://127.0.0.1:9/hook' });
    const [textId, binId] = await insertEvents(source, 2);
    await db()('webhook_event')
      .where({ id: binId })
      .update({ payload: Buffer.from([0xff, 0x00, 0xc3]), content_type: 'application/octet-stream' });
    await db()('webhook_event')
      .where({ id: textId })
      .update({ payload: Buffer.from('{"caf\u00e9":1}'), headers: JSON.stringify({ 'x-trace': 'abc' }) });
    const [delivery] = (await h.fanout.repos.deliveries.prepareRun(textId ?? '', textId ?? '')) ?? [];

    const text = await h.get(`/api/events/${textId}`, token);
    expect(text.status).toBe(200);
    expect(text.json()).toMatchObject({
      id: textId,
      source,
      status: 'COMPLETED',
      payload: '{"caf\u00e9":1}',
      payloadEncoding: 'utf8',
      headers: { 'x-trace': 'abc' },
      deliveries: [{ id: delivery?.delivery.id, eventId: textId, endpointId, status: 'PENDING', source }],
    });
    const bin = (await h.get(`/api/events/${binId}`, token)).json() as { payload: string; payloadEncoding: string; deliveries: unknown[] };
    expect(bin.payloadEncoding).toBe('base64');
    expect(Buffer.from(bin.payload, 'base64')).toEqual(Buffer.from([0xff, 0x00, 0xc3]));
    expect(bin.deliveries).toEqual([]);
  });

  it('lists deliveries newest first with filters status, source, endpoint, event, event type and time', async () => {
    const source = uniqueSource('dlv');
    const otherSource = uniqueSource('dlv-other');
    const a = await addEndpoint(h.fanout.repos, { source, url: 'http://127.0.0.1:9/a' });
    const b = await addEndpoint(h.fanout.repos, { source, url: 'http://127.0.0.1:9/b' });
    const c = await addEndpoint(h.fanout.repos, { source: otherSource, url: 'http://127.0.0.1:9/c' });
    const events = await insertEvents(source, 3, { type: (i) => (i === 1 ? 'invoice.paid' : 'order.created') });
    const [otherEvent] = await insertEvents(otherSource, 1);
    for (const e of events) await h.fanout.repos.deliveries.prepareRun(e, e);
    await h.fanout.repos.deliveries.prepareRun(otherEvent ?? '', otherEvent ?? '');
    // endpoint b failed for every event
    const bRows = await db()('webhook_delivery').where({ endpoint_id: b });
    for (const r of bRows as Array<{ id: string }>) {
      await h.fanout.repos.deliveries.recordAttempt(r.id, {
        status: 'FAILED',
        responseStatus: 500,
        responseBody: 'down',
        error: 'HTTP 500',
        startedAt: new Date(),
        durationMs: 12,
      });
    }

    const list = async (q: string) => {
      const res = await h.get(`/api/deliveries?${q}`, token);
      expect(res.status, res.text).toBe(200);
      return (res.json() as Page<DeliveryItem>).items;
    };
    const bySource = await list(`source=${source}`);
    expect(bySource).toHaveLength(6);
    expect(bySource.every((d) => d.source === source)).toBe(true);
    const times = bySource.map((d) => Date.parse(d.createdAt));
    expect([...times].sort((x, y) => y - x)).toEqual(times);

    const failed = await list(`source=${source}&status=FAILED`);
    expect(failed).toHaveLength(3);
    expect(failed.every((d) => d.endpointId === b && d.status === 'FAILED')).toBe(true);
    expect(await list(`endpointId=${a}`)).toHaveLength(3);
    expect(await list(`endpointId=${c}&source=${source}`)).toEqual([]);
    expect((await list(`eventId=${events[0]}`)).map((d) => d.endpointId).sort()).toEqual([a, b].sort());
    const invoices = await list(`source=${source}&eventType=invoice.paid`);
    expect(invoices.map((d) => d.eventId)).toEqual([events[1], events[1]]);
    expect(await list(`source=${source}&eventType=order.created&status=FAILED`)).toHaveLength(2);
    expect(await list(`source=${source}&eventType=invoice.pai`)).toEqual([]); // exact, not a prefix
    expect(await list(`source=${source}&from=2999-01-01T00:00:00Z`)).toEqual([]);
    expect(await list(`source=${source}&to=2000-01-01T00:00:00Z`)).toEqual([]);

    const pages = await allPages<DeliveryItem>(`/api/deliveries?source=${source}&limit=4`);
    expect(pages.map((p) => p.items.length)).toEqual([4, 2]);

    const one = await h.get(`/api/deliveries/${failed[0]?.id}`, token);
    expect(one.json()).toMatchObject({
      id: failed[0]?.id,
      status: 'FAILED',
      attempts: 1,
      lastResponseStatus: 500,
      lastResponseBody: 'down',
      lastError: 'HTTP 500',
    });
  });

  it('the event type filter reads the few deliveries of a rare type, not the table (50 000 deliveries, EXPLAIN ANALYZE)', async () => {
    const source = uniqueSource('types-bulk');
    const endpoint = await addEndpoint(h.fanout.repos, { source, url: 'http://127.0.0.1:9/types' });
    const rareType = `invoice.voided-${source}`;
    const start = Date.parse('2029-01-01T00:00:00.000Z');
    // a year of one common type; the rare type's 20 events are the oldest, so walking the
    // deliveries newest first until 20 match would read all of them
    await db().transaction(async (trx) => {
      await trx.raw('SET LOCAL statement_timeout = 0');
      await trx.raw(
        `INSERT INTO webhook_event (source, external_event_id, event_type, payload, status, received_at)
         SELECT ?, 'bulk-' || i, CASE WHEN i < 20 THEN ? ELSE 'order.created' END, convert_to('{}', 'UTF8'), 'COMPLETED',
                to_timestamp(? / 1000.0) + i * interval '10 minutes'
           FROM generate_series(0, 49999) AS i`,
        [source, rareType, start],
      );
      await trx.raw(
        `INSERT INTO webhook_delivery (event_id, endpoint_id, status, attempts, created_at)
         SELECT id, ?, 'SUCCESS', 1, received_at FROM webhook_event WHERE source = ?`,
        [endpoint, source],
      );
    });
    await db().raw('VACUUM ANALYZE webhook_event');
    await db().raw('VACUUM ANALYZE webhook_delivery');

    // the statement the API runs, as it runs it (pg's $n placeholders back to knex's ?, in order)
    const ran: Array<{ sql: string; bindings: readonly Knex.RawBinding[] }> = [];
    const capture = (q: { sql: string; bindings?: readonly Knex.RawBinding[] }) => {
      if (q.sql.includes('"webhook_delivery"') && q.sql.includes('event_type'))
        ran.push({ sql: q.sql.replace(/\$\d+/g, '?'), bindings: q.bindings ?? [] });
    };
    db().on('query', capture);
    let res;
    try {
      res = await h.get(`/api/deliveries?eventType=${encodeURIComponent(rareType)}`, token);
    } finally {
      db().off('query', capture);
    }
    expect(res.status, res.text).toBe(200);
    const items = (res.json() as Page<DeliveryItem>).items;
    expect(items).toHaveLength(20);
    expect(items.every((d) => d.source === source && d.endpointId === endpoint)).toBe(true);
    const [statement] = ran;
    if (!statement) throw new Error('the list statement was not seen');

    const nodes = await planOf(db(), statement.sql, statement.bindings, { analyze: true });
    const onTables = nodes.filter((n) => n['Relation Name'] === 'webhook_event' || n['Relation Name'] === 'webhook_delivery');
    const read = onTables.map((n) => ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1));
    const described = onTables.map((n, i) => `${n['Node Type']} ${n['Relation Name']} ${n['Index Name'] ?? ''}: ${read[i]} rows`);
    console.log(`GET /api/deliveries?eventType= (rare type): ${described.join('; ')}`);
    expect(
      onTables.map((n) => n['Node Type']),
      described.join('; '),
    ).not.toContain('Seq Scan');
    // 20 events and their 20 deliveries, with room for the planner's way to them; not 50 000
    expect(
      read.reduce((a, b) => a + b, 0),
      described.join('; '),
    ).toBeLessThan(1_000);
  }, 120_000);

  it('endpoints show the auth and signing types, the BASIC username and whether a secret is set, never a secret', async () => {
    const source = uniqueSource('ep');
    const keys = [
      `whsec_${Buffer.alloc(24, 1).toString('base64')}`,
      `whsec_${Buffer.alloc(24, 2).toString('base64')}`,
      `whsk_${Buffer.alloc(32, 3).toString('base64')}`,
    ];
    const publicKey = `whpk_${Buffer.alloc(32, 4).toString('base64')}`;
    const secrets = [
      'basic-pass-XYZ',
      'bearer-token-XYZ',
      'hmac-secret-XYZ',
      'api-key-in-header-XYZ',
      'url-pass-XYZ',
      'both-token-XYZ',
      'oauth2-client-secret-XYZ',
      ...keys,
    ];
    await addEndpoint(h.fanout.repos, {
      source,
      name: 'basic',
      url: 'https://u:url-pass-XYZ@example.com/a',
      authType: 'BASIC',
      authUsername: 'svc',
      authSecret: secrets[0],
    });
    await addEndpoint(h.fanout.repos, { source, name: 'bearer', url: 'https://example.com/b', authType: 'BEARER', authSecret: secrets[1] });
    await addEndpoint(h.fanout.repos, {
      source,
      name: 'hmac',
      url: 'https://example.com/c',
      signingType: 'HMAC',
      signingSecret: secrets[2],
      customHeaders: { 'x-api-key': secrets[3] ?? '' },
    });
    await addEndpoint(h.fanout.repos, {
      source,
      name: 'none',
      url: 'https://example.com/d',
      eventType: 'order.created',
      proxyDirect: true,
    });
    await addEndpoint(h.fanout.repos, {
      source,
      name: 'both',
      url: 'https://example.com/e',
      authType: 'BEARER',
      authSecret: secrets[5],
      signingType: 'STANDARD_WEBHOOKS',
      signingSecret: keys[0],
      previousSigningSecret: keys[1],
    });
    await addEndpoint(h.fanout.repos, {
      source,
      name: 'asymmetric',
      url: 'https://example.com/f',
      signingType: 'STANDARD_WEBHOOKS_ED25519',
      signingSecret: keys[2],
      signingPublicKeys: [publicKey],
    });

    const oauth2 = {
      tokenUrl: 'https://idp.partner.example/oauth/token',
      clientId: 'webhook-fanout',
      scopes: ['webhooks.write'],
      audience: 'https://api.partner.example',
      clientAuthentication: 'ClientSecretPost' as const,
      keyId: null,
    };
    const oauth2Id = await addEndpoint(h.fanout.repos, {
      source,
      name: 'oauth2',
      url: 'https://example.com/g',
      authType: 'OAUTH2_CLIENT_CREDENTIALS',
      authSecret: 'oauth2-client-secret-XYZ',
      authOAuth2: oauth2,
    });
    // the worker found the credentials refused (docs/endpoints.md): the server's words are shown
    const refusal = 'oauth2_token_refused: the token endpoint answered HTTP 401 invalid_client (client authentication failed)';
    await h.fanout.repos.endpoints.recordTokenRefusal(
      { id: oauth2Id, authSecret: 'oauth2-client-secret-XYZ', authOAuth2: oauth2 },
      refusal,
    );
    // then the token endpoint went down: what failed and since when are shown too (no secret either)
    const unavailable = 'oauth2_token_unavailable: the token endpoint answered HTTP 503';
    await h.fanout.repos.endpoints.recordTokenUnavailable(
      { id: oauth2Id, authSecret: 'oauth2-client-secret-XYZ', authOAuth2: oauth2 },
      unavailable,
    );

    const res = await h.get(`/api/endpoints?source=${source}`, token);
    expect(res.status).toBe(200);
    for (const s of secrets) expect(res.text).not.toContain(s);
    const items = (res.json() as Page<{ name: string; auth: unknown; url: string; customHeaderNames: string[]; eventType: string | null }>)
      .items;
    const byName = new Map(items.map((e) => [e.name, e]));
    expect(byName.get('basic')).toMatchObject({
      auth: { type: 'BASIC', username: 'svc', secretSet: true },
      url: 'https://***@example.com/a',
    });
    expect(byName.get('bearer')).toMatchObject({ auth: { type: 'BEARER', username: null, secretSet: true } });
    expect(byName.get('hmac')).toMatchObject({
      auth: { type: 'NONE', username: null, secretSet: false },
      signing: { type: 'HMAC', secretSet: true, previousSecretSet: false },
      customHeaderNames: ['x-api-key'],
    });
    // spec.proxy: Direct shown as such, every other endpoint Default
    expect(byName.get('none')).toMatchObject({
      auth: { type: 'NONE', username: null, secretSet: false },
      eventType: 'order.created',
      proxy: 'Direct',
    });
    expect(byName.get('bearer')).toMatchObject({ proxy: 'Default' });
    expect(byName.get('both')).toMatchObject({
      auth: { type: 'BEARER', username: null, secretSet: true },
      signing: { type: 'STANDARD_WEBHOOKS', secretSet: true, previousSecretSet: true, publicKeys: [] },
    });
    // the public key is for receivers to fetch: shown; the secret key never is
    expect(byName.get('asymmetric')).toMatchObject({
      auth: { type: 'NONE' },
      signing: { type: 'STANDARD_WEBHOOKS_ED25519', secretSet: true, previousSecretSet: false, publicKeys: [publicKey] },
    });
    // OAuth2: the token endpoint and the client, the secret only as set
    const { keyId: _keyId, ...shown } = oauth2;
    expect(byName.get('oauth2')).toMatchObject({
      auth: {
        type: 'OAUTH2_CLIENT_CREDENTIALS',
        username: null,
        secretSet: true,
        oauth2: {
          ...shown,
          tokenRefusal: { message: refusal, since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
          tokenUnavailable: { message: unavailable, since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
        },
      },
    });
    expect(byName.get('bearer')).toMatchObject({ auth: { oauth2: null } });
    expect(items.map((e) => e.name)).toEqual(['oauth2', 'asymmetric', 'both', 'none', 'hmac', 'bearer', 'basic']);
  });

  it('endpoints show their filter and transform (docs/content-routing.md), null when they have none', async () => {
    const source = uniqueSource('content');
    const filter = "event.type.startsWith('invoice.') && event.data.amount >= 100";
    await addEndpoint(h.fanout.repos, { source, name: 'shaped', url: 'https://example.com/s', filter, transform: '{"kind": type}' });
    await addEndpoint(h.fanout.repos, { source, name: 'plain', url: 'https://example.com/p' });
    const res = await h.get(`/api/endpoints?source=${source}`, token);
    expect(res.status).toBe(200);
    const byName = new Map((res.json() as Page<{ name: string }>).items.map((e) => [e.name, e]));
    expect(byName.get('shaped')).toMatchObject({ filter, transform: { jsonata: '{"kind": type}' } });
    expect(byName.get('plain')).toMatchObject({ filter: null, transform: null });
  });

  it('endpoints show their limits and a pause their Retry-After asked for, while it runs', async () => {
    const source = uniqueSource('lim');
    const limited = await addEndpoint(h.fanout.repos, {
      source,
      name: 'limited',
      url: 'https://example.com/l',
      rateLimitPerSecond: 2.5,
      maxConcurrency: 4,
    });
    await addEndpoint(h.fanout.repos, { source, name: 'free', url: 'https://example.com/f' });
    await h.fanout.repos.endpointLimits.pause(limited, 60_000);

    const res = await h.get(`/api/endpoints?source=${source}`, token);
    expect(res.status).toBe(200);
    const items = (res.json() as Page<{ name: string; rateLimit: unknown; maxConcurrency: unknown; pausedUntil: string | null }>).items;
    const byName = new Map(items.map((e) => [e.name, e]));
    expect(byName.get('limited')).toMatchObject({ rateLimit: { perSecond: 2.5 }, maxConcurrency: 4 });
    const until = Date.parse(byName.get('limited')?.pausedUntil ?? '');
    expect(until - Date.now()).toBeGreaterThan(50_000);
    expect(until - Date.now()).toBeLessThanOrEqual(60_000);
    expect(byName.get('free')).toMatchObject({ rateLimit: null, maxConcurrency: null, pausedUntil: null });
  });

  it('inbound credentials never show the password or its hash', async () => {
    const source = uniqueSource('cred');
    const hash = await bcrypt.hash('inbound-password', 4);
    await h.fanout.repos.credentials.upsertByResourceUid('manifest:default/cred', {
      source,
      username: 'sender',
      passwordHash: hash,
      eventIdRule: { jsonPath: 'data.id' },
      eventTypeRule: null,
      resourceName: 'default/cred',
    });
    const res = await h.get(`/api/inbound-credentials?source=${source}`, token);
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(hash);
    expect(res.text).not.toContain('$2');
    expect(res.text).not.toContain('inbound-password');
    expect(res.json()).toMatchObject({
      items: [
        {
          source,
          username: 'sender',
          verification: 'Basic',
          basic: true,
          eventIdRule: { jsonPath: 'data.id' },
          eventTypeRule: null,
          managedBy: 'default/cred',
        },
      ],
      nextCursor: null,
    });
  });

  it('a signed source shows its scheme, never its signing secrets', async () => {
    const source = uniqueSource('signed');
    await h.fanout.repos.credentials.upsertByResourceUid('manifest:default/signed', {
      source,
      username: null,
      passwordHash: null,
      verification: { type: 'GitHub', secrets: ['gh-signing-secret-1', 'gh-signing-secret-2'], toleranceSeconds: 300 },
      eventIdRule: null,
      eventTypeRule: null,
      resourceName: 'default/signed',
    });
    const res = await h.get(`/api/inbound-credentials?source=${source}`, token);
    expect(res.status, res.text).toBe(200);
    expect(res.text).not.toContain('gh-signing-secret');
    expect(res.json()).toMatchObject({ items: [{ source, username: null, verification: 'GitHub', basic: false }] });
  });
});
