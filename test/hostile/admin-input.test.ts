import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdminHarness, type AdminHarness } from '../api/support/admin-harness.js';
import { rawRequest } from './support/raw-http.js';

// Hostile query strings and bodies on the admin API with a VALID token: each is the caller's
// mistake, so a 400 problem+json naming the parameter, never a 500 (and never a query that
// reaches Postgres with garbage in it).

const cursorOf = (raw: string): string => Buffer.from(raw).toString('base64url');
const ID = '00000000-0000-4000-8000-000000000000';

interface Case {
  name: string;
  path: string;
  /** the parameter the problem's detail must name */
  param: string;
}

const LISTS = ['/api/events', '/api/deliveries', '/api/endpoints', '/api/inbound-credentials'];

const cases: Case[] = [
  ...LISTS.map((p) => ({ name: `NUL in source on ${p}`, path: `${p}?source=%00`, param: 'source' })),
  ...LISTS.map((p) => ({ name: `NUL inside source on ${p}`, path: `${p}?source=ab%00cd`, param: 'source' })),
  { name: 'NUL in type', path: '/api/events?type=order%00created', param: 'type' },
  { name: 'leap second in from', path: '/api/events?from=2026-12-31T23:59:60Z', param: 'from' },
  { name: 'leap second in to', path: '/api/deliveries?to=2026-12-31T23:59:60Z', param: 'to' },
  { name: 'February 30th in from', path: '/api/events?from=2026-02-30T00:00:00Z', param: 'from' },
  { name: 'hour 24 in to', path: '/api/events?to=2026-01-01T24:00:00Z', param: 'to' },
  { name: 'year 0 in from', path: '/api/deliveries?from=0000-01-01T00:00:00Z', param: 'from' },
  ...LISTS.map((p) => ({
    name: `cursor on February 30th on ${p}`,
    path: `${p}?cursor=${cursorOf(`2026-02-30T00:00:00.000000Z|${ID}`)}`,
    param: 'cursor',
  })),
  { name: 'cursor in year 0', path: `/api/events?cursor=${cursorOf(`0000-01-01T00:00:00.000000Z|${ID}`)}`, param: 'cursor' },
  { name: 'cursor with a leap second', path: `/api/events?cursor=${cursorOf(`2026-12-31T23:59:60.000000Z|${ID}`)}`, param: 'cursor' },
  { name: 'limit 1.5', path: '/api/events?limit=1.5', param: 'limit' },
  { name: 'limit 0x10', path: '/api/events?limit=0x10', param: 'limit' },
  { name: 'limit " 5"', path: '/api/events?limit=%205', param: 'limit' },
  { name: 'limit "5 "', path: '/api/deliveries?limit=5%20', param: 'limit' },
  { name: 'limit 1e1', path: '/api/endpoints?limit=1e1', param: 'limit' },
  { name: 'limit +5', path: '/api/inbound-credentials?limit=%2B5', param: 'limit' },
  { name: 'limit empty', path: '/api/events?limit=', param: 'limit' },
  { name: 'active "yes"', path: '/api/endpoints?active=yes', param: 'active' },
  { name: 'active "1"', path: '/api/endpoints?active=1', param: 'active' },
];

interface BodyCase {
  name: string;
  body: Record<string, unknown>;
  param: string;
}

const bodyCases: BodyCase[] = [
  { name: 'NUL in source', body: { source: '\0', dryRun: true }, param: 'source' },
  { name: 'NUL in eventType', body: { eventType: 'a\0b', dryRun: true }, param: 'eventType' },
  { name: 'leap second in from', body: { from: '2026-12-31T23:59:60Z', dryRun: true }, param: 'from' },
  { name: 'February 30th in to', body: { to: '2026-02-30T00:00:00Z', dryRun: true }, param: 'to' },
  { name: 'year 0 in from', body: { from: '0000-01-01T00:00:00Z', dryRun: true }, param: 'from' },
  { name: 'limit 1.5', body: { limit: 1.5, dryRun: true }, param: 'limit' },
  { name: 'limit "10" as a string', body: { limit: '10', dryRun: true }, param: 'limit' },
  { name: 'dryRun "true" as a string', body: { dryRun: 'true' }, param: 'dryRun' },
];

describe('hostile input on the admin API (valid token)', () => {
  let h: AdminHarness;
  let reader: string;
  let admin: string;

  // the app's log stream: a refused parameter is the caller's mistake, never an error line with SQL
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });

  beforeAll(async () => {
    h = await startAdminHarness({ logger: pino({ level: 'info' }, sink) });
    reader = await h.token('reader');
    admin = await h.token('admin');
  });
  afterAll(async () => {
    await h?.close();
  });

  it.each(cases)('GET $name -> 400 problem+json naming $param', async ({ path, param }) => {
    const res = await h.get(path, reader);
    expect(res.status, res.text).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = res.json() as { status: number; code: string; detail?: string };
    expect(body.status).toBe(400);
    expect(body.detail ?? '').toContain(param);
  });

  it.each(bodyCases)('POST /api/deliveries/replay with $name -> 400 problem+json naming $param', async ({ body, param }) => {
    const res = await h.post('/api/deliveries/replay', admin, body);
    expect(res.status, res.text).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = res.json() as { status: number; detail?: string };
    expect(problem.detail ?? '').toContain(param);
  });

  it('two Authorization headers, even two valid tokens, are a 400 problem+json (not "the first wins")', async () => {
    const get = (auths: string[]) =>
      rawRequest(h.url, ['GET /api/events HTTP/1.1', 'Host: localhost', ...auths.map((a) => `Authorization: ${a}`), '', ''].join('\r\n'));
    const once = await get([`Bearer ${reader}`]);
    expect(once.status).toBe(200);
    for (const auths of [
      [`Bearer ${reader}`, `Bearer ${admin}`],
      [`Bearer ${admin}`, 'Bearer forged'],
    ]) {
      const res = await get(auths);
      expect(res.status, res.body).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect((JSON.parse(res.body) as { detail: string }).detail).toContain('authorization');
    }
  });

  it('none of the refusals above logged at error level (no SQL text in the log)', () => {
    const errors = logLines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 50);
    expect(errors.map((e) => e.msg)).toEqual([]);
    expect(logLines.join('\n')).not.toMatch(/select |from "webhook_/i);
  });

  it('well-formed values still work: a real leap-free instant, limit 5, active=true, a round-tripped cursor', async () => {
    for (const path of [
      '/api/events?from=2026-12-31T23:59:59Z&to=2027-01-01T00:00:00%2B01:00&limit=5',
      '/api/deliveries?from=2024-02-29T00:00:00Z&limit=200',
      '/api/endpoints?active=true&limit=1',
      '/api/inbound-credentials?source=abc',
      `/api/events?cursor=${cursorOf(`2024-02-29T12:00:00.000000Z|${ID}`)}`,
    ]) {
      const res = await h.get(path, reader);
      expect(res.status, `${path}: ${res.text}`).toBe(200);
    }
  });
});
