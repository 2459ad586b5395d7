import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileDatabase } from '../support/db.js';
import { basic } from '../support/http.js';
import { addCredential, startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';
import { rawRequest, type RawResponse } from './support/raw-http.js';

// What the HTTP layer answers to requests a client library would never send: every refusal is
// RFC 9457 problem+json, and nothing of a refused request is stored.

const SOURCE = 'hostile';
const AUTH = basic('hostile-user', 'hostile-pass');
const BODY = '{"id":"evt_hostile","type":"x"}';
const TIMEOUTS = { headersMs: 1000, bodyMs: 4000, idleMs: 8000 };

const post = (extraHeaders: string[], opts: { host?: string[]; path?: string; body?: string } = {}): string => {
  const body = opts.body ?? BODY;
  return [
    `POST ${opts.path ?? `/api/webhooks/${SOURCE}`} HTTP/1.1`,
    ...(opts.host ?? ['Host: localhost']).map((h) => h),
    `Authorization: ${AUTH}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...extraHeaders,
    '',
    body,
  ].join('\r\n');
};

interface Case {
  name: string;
  request: () => string;
  status: number[];
}

const cases: Case[] = [
  { name: 'a 64 KiB header', request: () => post([`X-Big: ${'a'.repeat(64 * 1024)}`]), status: [431] },
  { name: '3000 headers', request: () => post(Array.from({ length: 3000 }, (_, i) => `X-H${i}: v`)), status: [431] },
  { name: 'a 20 000-character path', request: () => post([], { path: `/api/webhooks/${'a'.repeat(20_000)}` }), status: [414, 431] },
  {
    name: '10 000 query parameters',
    request: () => post([], { path: `/api/webhooks/${SOURCE}?${Array.from({ length: 10_000 }, (_, i) => `p${i}=1`).join('&')}` }),
    status: [414, 431],
  },
  {
    name: 'an invalid chunk size',
    request: () =>
      [
        `POST /api/webhooks/${SOURCE} HTTP/1.1`,
        'Host: localhost',
        `Authorization: ${AUTH}`,
        'Transfer-Encoding: chunked',
        '',
        'zz',
        BODY,
        '0',
        '',
        '',
      ].join('\r\n'),
    status: [400],
  },
  {
    name: 'Content-Length and Transfer-Encoding together',
    request: () => post(['Transfer-Encoding: chunked']),
    status: [400],
  },
  { name: 'a malformed request line', request: () => 'POST /api/webhooks/hostile HTTP/1.1 junk\r\nHost: localhost\r\n\r\n', status: [400] },
  { name: 'a space before the colon', request: () => post(['X-Bad : v']), status: [400] },
  { name: 'an unknown Expect', request: () => post(['Expect: 100-nonsense']), status: [417] },
  { name: 'no Host (HTTP/1.1)', request: () => post([], { host: [] }), status: [400] },
  { name: 'two Host headers', request: () => post([], { host: ['Host: localhost', 'Host: evil.example'] }), status: [400] },
  { name: 'two Authorization headers', request: () => post([`Authorization: ${basic('other', 'other-pass')}`]), status: [400] },
];

function expectProblem(res: RawResponse, status: number[]): void {
  expect(status, `${res.status} ${JSON.stringify(res.headers)} ${res.body.slice(0, 300)}`).toContain(res.status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(res.body) as { status: number; type: string; title: string };
  expect(body.status).toBe(res.status);
  expect(body.type).toMatch(/^https:\/\//);
  expect(body.title.length).toBeGreaterThan(0);
}

describe('hostile HTTP on the public port', () => {
  const t = fileDatabase();
  let h: IngestHarness;
  const stored = async () => Number((await t.database.db('webhook_event').count<{ count: string }[]>('* as count'))[0]?.count ?? 0);

  beforeAll(async () => {
    h = await startIngestHarness({ db: t.database.db, bodyLimitBytes: 64 * 1024, timeouts: TIMEOUTS });
    await addCredential(h.repos, SOURCE, 'hostile-user', 'hostile-pass');
  });
  afterAll(async () => {
    await h?.close();
  });

  it('the well-formed request these cases are derived from is accepted (and then removed)', async () => {
    const res = await rawRequest(h.url, post([]));
    expect(res.status, res.body).toBe(200);
    await t.database.db('webhook_event').delete();
  });

  it.each(cases)('$name -> problem+json $status, nothing stored', async ({ request, status }) => {
    const res = await rawRequest(h.url, request());
    expectProblem(res, status);
    expect(await stored()).toBe(0);
  });

  it('a body that never ends is cut at the body timeout with 408 problem+json, nothing stored', async () => {
    const head = [
      `POST /api/webhooks/${SOURCE} HTTP/1.1`,
      'Host: localhost',
      `Authorization: ${AUTH}`,
      'Transfer-Encoding: chunked',
      '',
      '',
    ].join('\r\n');
    const res = await rawRequest(h.url, `${head}1\r\n{\r\n`, { keepSending: { chunk: '1\r\n \r\n', everyMs: 200 }, timeoutMs: 15_000 });
    expectProblem(res, [408]);
    expect(res.elapsedMs).toBeGreaterThanOrEqual(TIMEOUTS.bodyMs - 100);
    expect(res.elapsedMs).toBeLessThan(TIMEOUTS.bodyMs + 2500);
    expect(await stored()).toBe(0);
  });

  it('headers that never end are cut at the headers timeout with 408 problem+json', async () => {
    const res = await rawRequest(h.url, `POST /api/webhooks/${SOURCE} HTTP/1.1\r\nHost: localhost\r\n`, {
      keepSending: { chunk: 'X-Slow: 1\r\n', everyMs: 200 },
      timeoutMs: 15_000,
    });
    expectProblem(res, [408]);
    expect(res.elapsedMs).toBeLessThan(TIMEOUTS.headersMs + 2500);
  });

  it.each([
    ['no credentials, a known source', `/api/webhooks/${SOURCE}`],
    ['no credentials, an unknown source', '/api/webhooks/nosuchsource'],
  ] as const)(
    '%s with a body that never ends: the body is waited for, as a signed source must (nothing tells them apart), and cut at its timeout',
    async (_name, path) => {
      const head = [`POST ${path} HTTP/1.1`, 'Host: localhost', 'Transfer-Encoding: chunked', '', ''].join('\r\n');
      const res = await rawRequest(h.url, `${head}1\r\n{\r\n`, { keepSending: { chunk: '1\r\n \r\n', everyMs: 200 }, timeoutMs: 15_000 });
      expectProblem(res, [408]);
      expect(res.elapsedMs).toBeGreaterThanOrEqual(TIMEOUTS.bodyMs - 100);
      expect(res.elapsedMs).toBeLessThan(TIMEOUTS.bodyMs + 2500);
      expect(await stored()).toBe(0);
    },
  );

  it.each([
    ['a wrong password', basic('hostile-user', 'wrong')],
    ['an unknown source', basic('hostile-user', 'hostile-pass'), '/api/webhooks/nosuchsource'],
  ] as const)('%s with a body that never ends: 401 before the body is read, connection closed', async (_name, auth, path?: string) => {
    const head = [
      `POST ${path ?? `/api/webhooks/${SOURCE}`} HTTP/1.1`,
      'Host: localhost',
      `Authorization: ${auth}`,
      'Transfer-Encoding: chunked',
      '',
      '',
    ].join('\r\n');
    const res = await rawRequest(h.url, `${head}1\r\n{\r\n`, { keepSending: { chunk: '1\r\n \r\n', everyMs: 100 }, timeoutMs: 15_000 });
    expectProblem(res, [401]);
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    expect(res.headers.connection).toBe('close');
    // the body never ends: a 401 at all (not the body timeout's 408) means it was not waited for
    expect(res.elapsedMs).toBeLessThan(TIMEOUTS.bodyMs);
    expect(await stored()).toBe(0);
  });

  it('the server still serves after all of the above', async () => {
    const res = await rawRequest(h.url, post([]));
    expect(res.status, res.body).toBe(200);
  });
});
