import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileDatabase, type TestDatabase } from '../support/db.js';
import { basic, http } from '../support/http.js';
import { addCredential, startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';

const AUTH = basic('stripe-user', 's3cret-pass');
const eventsOf = async (t: TestDatabase, source: string) => t.db('webhook_event').where({ source }).orderBy('received_at');

describe('POST /api/webhooks/{source}', () => {
  const t = fileDatabase();
  let h: IngestHarness;

  beforeAll(async () => {
    h = await startIngestHarness({ db: t.database.db, bodyLimitBytes: 64 * 1024 });
    await addCredential(h.repos, 'stripe', 'stripe-user', 's3cret-pass');
    await addCredential(h.repos, 'github', 'gh', 'gh-pass');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('persists the raw body and headers, publishes the event id, answers 200 with the event id', async () => {
    const body = '{"id":"evt_1","type":"invoice.paid","amount":42,  "note":"caf\u00e9"}';
    const res = await http(`${h.url}/api/webhooks/stripe`, {
      headers: { authorization: AUTH, 'content-type': 'application/json', 'x-trace': 'abc' },
      body,
    });
    expect(res.status).toBe(200);
    const answer = res.json() as { eventId: string; duplicate: boolean };
    expect(answer.duplicate).toBe(false);
    expect(answer.eventId).toMatch(/^[0-9a-f-]{36}$/);

    const [row] = await eventsOf(t.database, 'stripe');
    expect(row.id).toBe(answer.eventId);
    expect(row.status).toBe('RECEIVED');
    expect(row.external_event_id).toBe('evt_1');
    expect(row.event_type).toBe('invoice.paid');
    expect(Buffer.compare(row.payload, Buffer.from(body))).toBe(0);
    expect(row.content_type).toBe('application/json');
    expect(row.headers['x-trace']).toBe('abc');
    expect(row.headers.authorization).toBeUndefined();
    expect(row.published_at).not.toBeNull();
    expect(await h.queuedEventIds()).toContain(answer.eventId);
  });

  it('reads id and type from headers when the body is not JSON, and stores the bytes untouched', async () => {
    const bytes = Buffer.from([0x00, 0xff, 0x10, 0x80, 0x41]);
    const res = await http(`${h.url}/api/webhooks/github`, {
      headers: {
        authorization: basic('gh', 'gh-pass'),
        'content-type': 'application/octet-stream',
        'x-event-id': 'delivery-77',
        'x-event-type': 'push',
      },
      body: bytes,
    });
    expect(res.status).toBe(200);
    const [row] = await eventsOf(t.database, 'github');
    expect(row.external_event_id).toBe('delivery-77');
    expect(row.event_type).toBe('push');
    expect(Buffer.compare(row.payload, bytes)).toBe(0);
  });

  it('answers a duplicate (source, external id) with the original id and publishes nothing new', async () => {
    const send = () =>
      http(`${h.url}/api/webhooks/stripe`, {
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: '{"id":"evt_dup","type":"t"}',
      });
    const first = (await send()).json() as { eventId: string; duplicate: boolean };
    const queuedBefore = (await h.queuedEventIds()).length;
    const second = await send();
    expect(second.status).toBe(200);
    expect(second.json()).toEqual({ eventId: first.eventId, duplicate: true });
    expect(await t.database.db('webhook_event').where({ external_event_id: 'evt_dup' })).toHaveLength(1);
    expect((await h.queuedEventIds()).length).toBe(queuedBefore);
  });

  it('turns 20 concurrent identical requests into one event and one published message', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        http(`${h.url}/api/webhooks/stripe`, {
          headers: { authorization: AUTH, 'content-type': 'application/json' },
          body: '{"id":"evt_race","type":"t"}',
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    const answers = results.map((r) => r.json() as { eventId: string; duplicate: boolean });
    expect(new Set(answers.map((a) => a.eventId)).size).toBe(1);
    expect(answers.filter((a) => !a.duplicate)).toHaveLength(1);
    expect(await t.database.db('webhook_event').where({ external_event_id: 'evt_race' })).toHaveLength(1);
    const queued = await h.queuedEventIds();
    expect(queued.filter((id) => id === answers[0]!.eventId)).toHaveLength(1);
  });

  it('stores 60 concurrent distinct events (several insert batches) with their own ids and bodies', async () => {
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        http(`${h.url}/api/webhooks/stripe`, {
          headers: { authorization: AUTH, 'content-type': 'application/json' },
          body: JSON.stringify({ id: `batch-${i}`, type: 'bulk', n: i }),
        }),
      ),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const rows = await t.database.db('webhook_event').where({ event_type: 'bulk' });
    expect(rows).toHaveLength(60);
    for (const [i, r] of results.entries()) {
      const { eventId } = r.json() as { eventId: string };
      const row = rows.find((x: { id: string }) => x.id === eventId);
      expect(JSON.parse(row.payload.toString()).n).toBe(i);
      expect(row.external_event_id).toBe(`batch-${i}`);
    }
  });

  it('keeps same-id events of different sources apart and never deduplicates events without an id', async () => {
    const a = await http(`${h.url}/api/webhooks/github`, {
      headers: { authorization: basic('gh', 'gh-pass'), 'content-type': 'application/json' },
      body: '{"id":"evt_1","type":"x"}',
    });
    expect((a.json() as { duplicate: boolean }).duplicate).toBe(false);
    for (let i = 0; i < 2; i++) {
      const r = await http(`${h.url}/api/webhooks/github`, {
        headers: { authorization: basic('gh', 'gh-pass'), 'content-type': 'application/json' },
        body: '{"hello":"no id"}',
      });
      expect((r.json() as { duplicate: boolean }).duplicate).toBe(false);
    }
    expect(await t.database.db('webhook_event').where({ source: 'github' }).whereNull('external_event_id')).toHaveLength(2);
  });

  describe('rejects bad input with a clear 4xx, stores nothing', () => {
    const count = async () => Number((await t.database.db('webhook_event').count({ n: '*' }))[0]?.n);

    it.each([
      ['no Authorization header', {}],
      ['a Bearer token instead of Basic', { authorization: 'Bearer abc' }],
      ['malformed Basic value', { authorization: 'Basic !!!not-base64' }],
      ['Basic without a colon', { authorization: `Basic ${Buffer.from('nocolon').toString('base64')}` }],
      ['a wrong password', { authorization: basic('stripe-user', 'wrong') }],
      ['a wrong username', { authorization: basic('someone', 's3cret-pass') }],
      ["another source's credentials", { authorization: basic('gh', 'gh-pass') }],
    ])('401 for %s', async (_name, headers: Record<string, string>) => {
      const before = await count();
      const res = await http(`${h.url}/api/webhooks/stripe`, {
        headers: { 'content-type': 'application/json', ...headers },
        body: '{"id":"x1"}',
      });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Basic realm="webhooks"/);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect((res.json() as { code: string }).code).toBe('unauthorized');
      expect(res.text).not.toContain('s3cret');
      expect(await count()).toBe(before);
    });

    it('answers an unknown source exactly like a wrong password, and not faster', async () => {
      const timed = async (source: string) => {
        const start = performance.now();
        const res = await http(`${h.url}/api/webhooks/${source}`, {
          headers: { authorization: basic('stripe-user', 'wrong'), 'content-type': 'application/json' },
          body: '{}',
        });
        return { ms: performance.now() - start, res };
      };
      const known = [];
      const unknown = [];
      for (let i = 0; i < 5; i++) {
        known.push(await timed('stripe'));
        unknown.push(await timed('no-such-source'));
      }
      const a = known[0]!.res;
      const b = unknown[0]!.res;
      expect(b.status).toBe(a.status);
      expect(b.text).toBe(a.text);
      expect(b.headers['www-authenticate']).toBe(a.headers['www-authenticate']);
      const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
      const knownMs = median(known.map((k) => k.ms));
      const unknownMs = median(unknown.map((u) => u.ms));
      // both pay one bcrypt comparison (tens of ms); an early return would be ~1 ms
      expect(unknownMs).toBeGreaterThan(knownMs * 0.5);
      expect(unknownMs).toBeLessThan(knownMs * 2);
    });

    it.each([
      ['dots', '..'],
      ['an encoded NUL', 'a%00b'],
      ['unicode', '%C3%A9v%C3%A9nement'],
      ['a 150-character name', 'a'.repeat(150)],
      ['a 300-character name', 'a'.repeat(300)],
      ['spaces', 'with%20space'],
    ])('4xx for an odd source name: %s', async (_name, source) => {
      const before = await count();
      const res = await http(`${h.url}/api/webhooks/${source}`, {
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: '{"id":"odd"}',
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(await count()).toBe(before);
    });

    it('400 for a body that claims JSON and is not', async () => {
      const before = await count();
      const res = await http(`${h.url}/api/webhooks/stripe`, {
        headers: { authorization: AUTH, 'content-type': 'application/json; charset=utf-8' },
        body: '{"id": "x", broken',
      });
      expect(res.status).toBe(400);
      expect(res.json()).toMatchObject({ status: 400, code: 'invalid_json' });
      expect(await count()).toBe(before);
    });

    it('400 for an empty body', async () => {
      const before = await count();
      const res = await http(`${h.url}/api/webhooks/stripe`, { headers: { authorization: AUTH } });
      expect(res.status).toBe(400);
      expect(await count()).toBe(before);
    });

    it('413 for a body over the limit', async () => {
      const before = await count();
      const res = await http(`${h.url}/api/webhooks/stripe`, {
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'big', pad: 'x'.repeat(70 * 1024) }),
      });
      expect(res.status).toBe(413);
      expect(res.json()).toMatchObject({ status: 413, code: 'payload_too_large' });
      expect(await count()).toBe(before);
    });

    it('431 for huge headers, and the server keeps serving', async () => {
      const before = await count();
      const res = await http(`${h.url}/api/webhooks/stripe`, {
        headers: { authorization: AUTH, 'content-type': 'application/json', 'x-huge': 'h'.repeat(64 * 1024) },
        body: '{"id":"huge-headers"}',
      }).catch((err: unknown) => ({ status: 431, error: err }));
      expect(res.status).toBe(431);
      expect(await count()).toBe(before);
      const after = await http(`${h.url}/api/webhooks/stripe`, {
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: '{"id":"after-huge"}',
      });
      expect(after.status).toBe(200);
    });

    it('400 for an event id with a NUL character (Postgres text can not hold it)', async () => {
      const before = await count();
      const res = await http(`${h.url}/api/webhooks/stripe`, {
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: '{"id":"a\\u0000b"}',
      });
      expect(res.status).toBe(400);
      expect(await count()).toBe(before);
    });

    it('400 for an event id longer than 255 characters', async () => {
      const before = await count();
      const res = await http(`${h.url}/api/webhooks/stripe`, {
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'i'.repeat(300) }),
      });
      expect(res.status).toBe(400);
      expect(await count()).toBe(before);
    });
  });

  it('counts inbound requests by source and outcome', async () => {
    const text = await h.metrics.registry.metrics();
    expect(text).toMatch(/webhook_fanout_inbound_requests_total\{source="stripe",outcome="accepted"\} [1-9]/);
    expect(text).toMatch(/webhook_fanout_inbound_requests_total\{source="stripe",outcome="duplicate"\} [1-9]/);
    expect(text).toMatch(/webhook_fanout_inbound_requests_total\{source="unauthorized",outcome="unauthorized"\} [1-9]/);
  });
});
