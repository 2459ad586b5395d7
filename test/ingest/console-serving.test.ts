import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../hostile/support/raw-http.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { http, type HttpResult } from '../support/http.js';
import { startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';

const AUTH_URL = 'https://tenant.eu.auth0.com';
const INDEX =
  '<!doctype html><html><head><script type="module" src="/console/assets/index-BxY3k2aZ.js"></script></head><body>console fixture</body></html>';
const get = (url: string, headers: Record<string, string> = {}): Promise<HttpResult> => http(url, { method: 'GET', headers });

/** what a browser checks on every console answer */
function expectSecurityHeaders(res: { headers: Record<string, string | string[] | undefined> }): void {
  const csp = String(res.headers['content-security-policy']);
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain(`connect-src 'self' ${AUTH_URL}`);
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain('report-uri /console/csp-report');
  expect(csp).not.toContain('unsafe');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['x-frame-options']).toBe('DENY');
}

describe('the console on the public port (/console/)', () => {
  let t: TestDatabase;
  let h: IngestHarness;
  let off: IngestHarness;
  let unbuilt: IngestHarness;
  let dir: string;
  const logLines: string[] = [];

  beforeAll(async () => {
    // a stand-in for Vite's output: index.html, hashed assets, an unhashed file, a dotfile, and a
    // file beside the folder that no path may reach
    dir = await mkdtemp(path.join(tmpdir(), 'console-'));
    const root = path.join(dir, 'console');
    await mkdir(path.join(root, 'assets'), { recursive: true });
    await writeFile(path.join(root, 'index.html'), INDEX);
    await writeFile(path.join(root, 'assets', 'index-BxY3k2aZ.js'), 'console.log("app")');
    await writeFile(path.join(root, 'assets', 'index-Q1w2E3r4.css'), 'body{margin:0}');
    await writeFile(path.join(root, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    await writeFile(path.join(root, '.env'), 'SECRET=dotfile');
    await writeFile(path.join(dir, 'outside.txt'), 'outside the console folder');

    t = await createTestDatabase();
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    const logger = pino({ level: 'trace' }, sink);
    const console = {
      config: { clientId: 'spa-client', authFlow: 'code' as const },
      auth: { authUrl: AUTH_URL, audience: 'https://api.example.com' },
    };
    h = await startIngestHarness({ db: t.db, console: { ...console, dir: root }, logger });
    off = await startIngestHarness({ db: t.db });
    unbuilt = await startIngestHarness({ db: t.db, console: { ...console, dir: path.join(dir, 'missing') } });
  });
  afterAll(async () => {
    await h?.close();
    await off?.close();
    await unbuilt?.close();
    await t?.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves index.html revalidated on every use, with the security headers; /console goes to /console/', async () => {
    const res = await get(`${h.url}/console/`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(INDEX);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-cache');
    expectSecurityHeaders(res);

    const bare = await get(`${h.url}/console`);
    expect(bare.status).toBe(302);
    expect(bare.headers.location).toBe('/console/');
  });

  it('caches hashed assets for a year, immutable; other files are revalidated', async () => {
    const js = await get(`${h.url}/console/assets/index-BxY3k2aZ.js`);
    expect(js.status).toBe(200);
    expect(js.text).toBe('console.log("app")');
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expectSecurityHeaders(js);
    const css = await get(`${h.url}/console/assets/index-Q1w2E3r4.css`);
    expect(css.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const icon = await get(`${h.url}/console/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it('answers every page of the app with index.html (shareable URLs); a missing file is a 404', async () => {
    for (const page of ['events', 'events/3f0c2b6e-1c1d-4a59-9a8e-0d5f2f4f2b11', 'deliveries/abc/attempts', 'callback?code=x&state=y']) {
      const res = await get(`${h.url}/console/${page}`);
      expect(res.status, page).toBe(200);
      expect(res.text).toBe(INDEX);
      expect(res.headers['cache-control']).toBe('no-cache');
      expectSecurityHeaders(res);
    }
    const missing = await get(`${h.url}/console/assets/index-gone1234.js`);
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toMatch(/^application\/problem\+json/);
    expectSecurityHeaders(missing);
  });

  it('serves its runtime configuration as a file, never cached', async () => {
    const res = await get(`${h.url}/console/config.json`);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expectSecurityHeaders(res);
    expect(res.json()).toEqual({
      authUrl: AUTH_URL,
      audience: 'https://api.example.com',
      clientId: 'spa-client',
      flow: 'code',
      apiBase: '',
      scope: 'openid profile email',
      callbackPath: '/console/callback',
    });
  });

  it('refuses paths out of its folder and dotfiles, however spelled', async () => {
    const host = new URL(h.url).host;
    for (const target of [
      '/console/../outside.txt',
      '/console/%2e%2e/outside.txt',
      '/console/..%2foutside.txt',
      '/console/..%5coutside.txt',
      '/console/assets/..%2f..%2foutside.txt',
      '/console/%2e%2e%2f%2e%2e%2fpackage.json',
      '/console/.env',
      '/console/%2eenv',
    ]) {
      const res = await rawRequest(h.url, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect(res.body, target).not.toContain('outside the console folder');
      expect(res.body, target).not.toContain('SECRET=dotfile');
      expect(res.body, target).not.toContain('"name": "webhook-fanout"');
      expect([400, 403, 404], target).toContain(res.status);
      expect(res.headers['content-type'], target).toMatch(/^application\/problem\+json/);
    }
  });

  it('counts CSP violation reports by directive and logs them cut short; refuses oversized ones', async () => {
    const before =
      (await h.metrics.registry.getSingleMetricAsString('webhook_fanout_console_csp_violations_total')).match(
        /directive="script-src-elem"} (\d+)/,
      )?.[1] ?? '0';
    const report = {
      'csp-report': {
        'document-uri': `${h.url}/console/`,
        'effective-directive': 'script-src-elem',
        'blocked-uri': 'inline',
        'script-sample': `alert(1)${'x'.repeat(5000)}`,
      },
    };
    const res = await http(`${h.url}/console/csp-report`, {
      headers: { 'content-type': 'application/csp-report' },
      body: JSON.stringify(report),
    });
    expect(res.status).toBe(204);
    expectSecurityHeaders(res);
    const reportingApi = await http(`${h.url}/console/csp-report`, {
      headers: { 'content-type': 'application/reports+json' },
      body: JSON.stringify([
        { type: 'csp-violation', body: { effectiveDirective: 'script-src-elem', blockedURL: 'https://evil.example/x.js' } },
      ]),
    });
    expect(reportingApi.status).toBe(204);
    const after = (await h.metrics.registry.getSingleMetricAsString('webhook_fanout_console_csp_violations_total')).match(
      /directive="script-src-elem"} (\d+)/,
    )?.[1];
    expect(Number(after) - Number(before)).toBe(2);
    const logged = logLines.filter((l) => l.includes('Content-Security-Policy violation'));
    expect(logged.length).toBeGreaterThanOrEqual(2);
    expect(logged.every((l) => l.length < 1500)).toBe(true);

    const huge = await http(`${h.url}/console/csp-report`, {
      headers: { 'content-type': 'application/csp-report' },
      body: JSON.stringify({ 'csp-report': { x: 'y'.repeat(64 * 1024) } }),
    });
    expect(huge.status).toBe(413);
    const notJson = await http(`${h.url}/console/csp-report`, { headers: { 'content-type': 'application/csp-report' }, body: '<xml/>' });
    expect(notJson.status).toBe(400);
  });

  it('never logs a bearer token, even at trace level', async () => {
    const token = `eyJhbGciOiJSUzI1NiJ9.${'c'.repeat(40)}.signature-${Date.now()}`;
    await get(`${h.url}/console/events`, { authorization: `Bearer ${token}` });
    await get(`${h.url}/console/config.json`, { authorization: `Bearer ${token}` });
    await get(`${h.url}/console/nope.js`, { authorization: `Bearer ${token}` });
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('')).not.toContain(token);
  });

  it('is not served when switched off, and says so when enabled but not built', async () => {
    const res = await get(`${off.url}/console/`);
    expect(res.status).toBe(404);
    expect((await get(`${off.url}/console/config.json`)).status).toBe(404);

    const page = await get(`${unbuilt.url}/console/events`);
    expect(page.status).toBe(503);
    expect((page.json() as { code: string }).code).toBe('console_not_built');
    expectSecurityHeaders(page);
    expect((await get(`${unbuilt.url}/console/config.json`)).status).toBe(200);
  });
});
