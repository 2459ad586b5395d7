import type { Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createHttpSender, type HttpSender } from './outbound.js';
import type { DeliveryOutcome } from '../../src/delivery/types.js';
import { outbound } from './outbound.js';
import { refusedUrl, startReceiver } from '../support/receiver.js';
import type { Receiver, Script } from '../support/receiver.js';

type Handler = Extract<Script, { handler: unknown }>['handler'];

let sender: HttpSender;
const receivers: Receiver[] = [];

/** a receiver that answers through `handler` (the default: 200 ok) */
async function receiver(handler?: Handler): Promise<Receiver> {
  const r = await startReceiver(handler ? { handler } : undefined);
  receivers.push(r);
  return r;
}

function answering(status: number, body = '', headers: Record<string, string> = {}) {
  return receiver((_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  });
}

beforeAll(() => {
  sender = createHttpSender({ addressPolicy: createAddressPolicy() });
});
afterAll(async () => {
  await sender.close();
});
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

describe('classification of answers', () => {
  it.each([200, 201, 204])('%i is a success', async (status) => {
    const r = await answering(status, status === 204 ? '' : 'accepted');
    const outcome = await sender.send(outbound(r.url));
    expect(outcome).toMatchObject({ kind: 'success', status, statusClass: '2xx' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
  });

  it.each([400, 404, 410])('%i is permanent and keeps the response body', async (status) => {
    const r = await answering(status, `{"error":"nope ${status}"}`, { 'Retry-After': '5' });
    const outcome = await sender.send(outbound(r.url));
    expect(outcome).toMatchObject({ kind: 'permanent', status, body: `{"error":"nope ${status}"}`, statusClass: '4xx' });
    expect(outcome).not.toHaveProperty('retryAfterMs');
    expect(outcome.kind !== 'success' && outcome.error).toMatch(new RegExp(`^HTTP ${status}\\b`));
  });

  it.each([408, 429])('%i is permanent by default, even with Retry-After', async (status) => {
    const r = await answering(status, 'slow down', { 'Retry-After': '7' });
    const outcome = await sender.send(outbound(r.url));
    expect(outcome).toMatchObject({ kind: 'permanent', status, statusClass: '4xx' });
    expect(outcome).not.toHaveProperty('retryAfterMs');
  });

  it('429 is retryable when the endpoint opted in, honouring Retry-After seconds', async () => {
    const r = await answering(429, 'slow down', { 'Retry-After': '7' });
    const outcome = await sender.send(outbound(r.url, { retryOnStatus: [408, 429] }));
    expect(outcome).toMatchObject({ kind: 'retryable', status: 429, statusClass: '4xx', retryAfterMs: 7_000, body: 'slow down' });
  });

  it('408 opted in honours a Retry-After HTTP-date', async () => {
    const r = await answering(408, '', { 'Retry-After': new Date(Date.now() + 30_000).toUTCString() });
    const outcome = await sender.send(outbound(r.url, { retryOnStatus: [408] }));
    expect(outcome).toMatchObject({ kind: 'retryable', status: 408 });
    // HTTP-dates have one-second precision
    const retryAfterMs = outcome.kind === 'success' ? undefined : outcome.retryAfterMs;
    expect(retryAfterMs).toBeGreaterThanOrEqual(28_000);
    expect(retryAfterMs).toBeLessThanOrEqual(30_000);
  });

  it('an opted-in code does not make other 4xx retryable', async () => {
    const r = await answering(404);
    const outcome = await sender.send(outbound(r.url, { retryOnStatus: [429] }));
    expect(outcome).toMatchObject({ kind: 'permanent', status: 404 });
  });

  it.each([500, 502, 503])('%i is retryable', async (status) => {
    const r = await answering(status, 'upstream down');
    const outcome = await sender.send(outbound(r.url));
    expect(outcome).toMatchObject({ kind: 'retryable', status, body: 'upstream down', statusClass: '5xx' });
    expect(outcome).not.toHaveProperty('retryAfterMs');
  });

  it('503 honours Retry-After, capped at one hour', async () => {
    const r1 = await answering(503, '', { 'Retry-After': '120' });
    expect(await sender.send(outbound(r1.url))).toMatchObject({ kind: 'retryable', retryAfterMs: 120_000 });
    const r2 = await answering(503, '', { 'Retry-After': '86400' });
    expect(await sender.send(outbound(r2.url))).toMatchObject({ kind: 'retryable', retryAfterMs: 3_600_000 });
  });

  it.each([301, 302, 307])('%i is permanent and the redirect target is not called', async (status) => {
    const target = await receiver();
    const r = await answering(status, '', { Location: `${target.url}/elsewhere` });
    const outcome = await sender.send(outbound(r.url));
    expect(outcome).toMatchObject({ kind: 'permanent', status, statusClass: '3xx' });
    expect(outcome.kind !== 'success' && outcome.error).toContain('redirect not followed');
    expect(r.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
    expect(target.connections()).toBe(0);
  });
});

describe('classification of failures', () => {
  it('a server that never answers is a retryable timeout after about timeoutMs', async () => {
    const r = await receiver(() => {
      /* never answers */
    });
    const started = Date.now();
    const outcome = await sender.send(outbound(r.url, { timeoutMs: 300 }));
    const wall = Date.now() - started;
    expect(outcome).toMatchObject({ kind: 'retryable', status: null, statusClass: 'timeout' });
    expect(outcome.kind !== 'success' && outcome.error).toMatch(/timed out/);
    expect(r.requests).toHaveLength(1);
    expect(wall).toBeGreaterThanOrEqual(280);
    expect(wall).toBeLessThan(1_500);
    expect(outcome.durationMs).toBeGreaterThanOrEqual(280);
    expect(outcome.durationMs).toBeLessThan(1_500);
  });

  it('a body that stalls after the headers is a retryable timeout that keeps the status and what arrived', async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('partial');
    });
    const outcome = await sender.send(outbound(r.url, { timeoutMs: 300 }));
    expect(outcome).toMatchObject({ kind: 'retryable', status: 200, body: 'partial', statusClass: 'timeout' });
    expect(outcome.durationMs).toBeLessThan(1_500);
  });

  it('a port with nothing listening is a retryable refused', async () => {
    const port = Number(new URL(await refusedUrl()).port);
    const outcome = await sender.send(outbound(`http://127.0.0.1:${port}/hook`));
    expect(outcome).toMatchObject({ kind: 'retryable', status: null, body: null, statusClass: 'refused' });
    expect(outcome.kind !== 'success' && outcome.error).toContain('ECONNREFUSED');
  });

  it('a connection closed without an answer is a retryable network error', async () => {
    const r = await receiver((_req, _res, raw) => {
      (raw.socket as Socket).destroy();
    });
    const outcome = await sender.send(outbound(r.url));
    expect(outcome).toMatchObject({ kind: 'retryable', status: null, statusClass: 'network' });
    expect(outcome.kind !== 'success' && outcome.error).not.toContain('\n');
  });

  it('an unknown host is a retryable network error', async () => {
    const outcome = await sender.send(outbound('http://no-such-host.invalid/hook', { timeoutMs: 3_000 }));
    expect(outcome.kind).toBe('retryable');
    expect(outcome.statusClass).toBe('network');
  });

  it('an invalid url is permanent and is not echoed', async () => {
    const outcome = await sender.send(outbound('http://user:pa ss@[bad/'));
    expect(outcome).toMatchObject({ kind: 'permanent', status: null });
    expect(JSON.stringify(outcome)).not.toContain('pa ss');
  });
});

describe('response body', () => {
  it('keeps only the first 4096 bytes of a huge body and stops reading it', async () => {
    let written = 0;
    let closedAfter = 0;
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      // up to 1 GiB, as fast as the client takes it
      const pump = (): void => {
        while (written < 1024 ** 3) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      res.on('close', () => {
        closedAfter = written;
      });
      pump();
    });
    const started = Date.now();
    const outcome = await sender.send(outbound(r.url));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(outcome).toMatchObject({ kind: 'success', status: 200 });
    const body = outcome.kind === 'success' ? outcome.body : '';
    expect(Buffer.byteLength(body, 'utf8')).toBe(4096);
    expect(body).toBe('a'.repeat(4096));
    // the client hung up long before the server could send it all
    await expect.poll(() => closedAfter, { timeout: 2_000 }).toBeGreaterThan(0);
    expect(closedAfter).toBeLessThan(64 * 1024 * 1024);
  });

  it('cuts at a character boundary when the 4096th byte splits a UTF-8 character', async () => {
    // "€" is 3 bytes: 4096 = 3 * 1365 + 1
    const r = await answering(500, '€'.repeat(2000));
    const outcome = await sender.send(outbound(r.url));
    const body = outcome.body ?? '';
    expect(body).toBe('€'.repeat(1365));
    expect(body).not.toContain('\uFFFD');
  });

  it('a body under the limit is kept whole', async () => {
    const text = `${'ü'.repeat(1000)}end`;
    const r = await answering(400, text);
    expect((await sender.send(outbound(r.url))).body).toBe(text);
  });
});

// the outcome type is what the deliver activity persists: keep it serialisable
it('outcomes are plain JSON', async () => {
  const r = await answering(503, 'x', { 'Retry-After': '1' });
  const outcome: DeliveryOutcome = await sender.send(outbound(r.url));
  expect(JSON.parse(JSON.stringify(outcome))).toEqual(outcome);
});
