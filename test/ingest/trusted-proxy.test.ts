import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import type { RefusalLimits } from '../../src/ingest/refusal-limiter.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { basic } from '../support/http.js';
import { addCredential, startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';
import { startNginx, type Nginx } from '../support/nginx.js';

// The client's address behind a real reverse proxy (src/ingest/client-address.ts): Debian's nginx
// in front of ingest, appending its client to X-Forwarded-For as the chart's Ingress controller
// does (or writing Forwarded), ingest trusting 127.0.0.1 (where nginx connects from) and nothing
// else. Clients come from distinct loopback addresses (127.0.0.x), as distinct senders would.

const LIMITS: RefusalLimits = { perAddress: 3, perSource: 1000, windowMs: 60_000, concurrency: 1, queue: 32 };

describe('behind a trusted proxy, the client is the sender, not the proxy', () => {
  let t: TestDatabase;
  let h: IngestHarness;
  let xff: Nginx;
  let fwd: Nginx;
  const logLines: Array<Record<string, unknown>> = [];
  const agents = new Map<string, Agent>();
  const from = (address: string): Agent => {
    let a = agents.get(address);
    if (!a) agents.set(address, (a = new Agent({ localAddress: address })));
    return a;
  };
  const post = async (base: string, address: string, source: string, password: string, headers: Record<string, string> = {}) => {
    const res = await request(`${base}/api/webhooks/${source}`, {
      method: 'POST',
      dispatcher: from(address),
      headers: { authorization: basic(source, password), 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ id: `e-${Math.random()}`, type: 't' }),
    });
    await res.body.text();
    return res.statusCode;
  };
  /** the addresses the refusal log lines name for a source */
  const refusedAddresses = (source: string): unknown[] =>
    logLines.filter((l) => l.msg === 'inbound request refused' && l.source === source).map((l) => l.address);
  const resolvedFrom = async (how: string): Promise<number> =>
    (await h.metrics.clientAddresses.get()).values.filter((v) => v.labels.from === how).reduce((n, v) => n + v.value, 0);

  beforeAll(async () => {
    t = await createTestDatabase();
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n')) if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    h = await startIngestHarness({
      db: t.db,
      refusalLimits: LIMITS,
      trustedProxies: ['127.0.0.1'],
      logger: pino({ level: 'debug' }, sink),
    });
    for (const s of ['alpha', 'beta', 'gamma', 'delta', 'epsilon']) await addCredential(h.repos, s, s, `${s}-password`);
    xff = await startNginx({ upstream: h.url });
    fwd = await startNginx({ upstream: h.url, header: 'forwarded' });
  });
  afterAll(async () => {
    for (const a of agents.values()) await a.close();
    await xff?.close();
    await fwd?.close();
    await h?.close();
    await t?.destroy();
  });

  it("counts a flooding client's refusals against its own address: another sender behind the same proxy still gets in", async () => {
    for (let i = 0; i < 3; i++) expect(await post(xff.url, '127.0.0.2', 'alpha', `wrong-${i}`)).toBe(401);
    expect(await post(xff.url, '127.0.0.2', 'alpha', 'wrong-again')).toBe(429);
    // the log line of each refusal names the client, not nginx
    expect(refusedAddresses('alpha')).toEqual(['127.0.0.2', '127.0.0.2', '127.0.0.2', '127.0.0.2']);
    // a sender never proven, through the same proxy, from its own address: not held back
    expect(await post(xff.url, '127.0.0.3', 'beta', 'beta-password')).toBe(200);
    expect(await resolvedFrom('x-forwarded-for')).toBeGreaterThanOrEqual(5);
  });

  it('takes the hop nginx appended, not one the client wrote before it', async () => {
    // 127.0.0.4 pretends to be 127.0.0.3 (which it would have locked out); nginx appends 127.0.0.4
    const forged = { 'x-forwarded-for': '127.0.0.3' };
    for (let i = 0; i < 3; i++) expect(await post(xff.url, '127.0.0.4', 'gamma', `wrong-${i}`, forged)).toBe(401);
    expect(await post(xff.url, '127.0.0.4', 'gamma', 'wrong', forged)).toBe(429);
    expect(new Set(refusedAddresses('gamma'))).toEqual(new Set(['127.0.0.4']));
    expect(await post(xff.url, '127.0.0.3', 'gamma', 'gamma-password')).toBe(200);
  });

  it('reads RFC 7239 Forwarded from a proxy that writes it', async () => {
    expect(await post(fwd.url, '127.0.0.5', 'delta', 'wrong')).toBe(401);
    expect(refusedAddresses('delta')).toEqual(['127.0.0.5']);
    expect(await resolvedFrom('forwarded')).toBeGreaterThanOrEqual(1);
  });

  it('ignores forwarding headers from a peer that is not a trusted proxy', async () => {
    // straight to ingest from 127.0.0.6, naming someone else in both headers
    const forged = { 'x-forwarded-for': '127.0.0.7', forwarded: 'for=127.0.0.7' };
    for (let i = 0; i < 3; i++) expect(await post(h.url, '127.0.0.6', 'epsilon', `wrong-${i}`, forged)).toBe(401);
    expect(await post(h.url, '127.0.0.6', 'epsilon', 'wrong', forged)).toBe(429);
    expect(new Set(refusedAddresses('epsilon'))).toEqual(new Set(['127.0.0.6']));
    // the address it named is untouched
    expect(await post(h.url, '127.0.0.7', 'epsilon', 'epsilon-password')).toBe(200);
  });

  it('falls back to the peer when a trusted proxy sends a header it can not read, and counts it', async () => {
    // the Forwarded nginx passes through from the client disagrees with the X-Forwarded-For it writes
    expect(await post(xff.url, '127.0.0.8', 'alpha', 'wrong', { forwarded: 'for=127.0.0.9' })).toBe(401);
    expect(refusedAddresses('alpha').at(-1)).toBe('127.0.0.1');
    expect(await resolvedFrom('conflicting')).toBe(1);
  });
});
