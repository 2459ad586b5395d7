import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import type { RefusalLimits } from '../../src/ingest/refusal-limiter.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { basic } from '../support/http.js';
import { addCredential, startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';

// What bounds the cost of wrong passwords (src/ingest/refusal-limiter.ts): an address or a source
// refused too often in a window is answered 429 with Retry-After before any bcrypt, alike for
// existing and unknown sources, unless the credential names an existing source's username (then it
// is compared, and a wrong one still answered 429); bcrypt runs in a bounded line; a credential
// proven valid skips all of it. Clients come from distinct loopback addresses (127.0.0.x), as distinct senders would.

const LIMITS: RefusalLimits = { perAddress: 3, perSource: 5, windowMs: 60_000, concurrency: 1, queue: 2 };

interface Answer {
  status: number;
  retryAfter: string | undefined;
  connection: string | undefined;
  code: string | undefined;
}

describe('wrong passwords are bounded, the right ones are not slowed', () => {
  let t: TestDatabase;
  let h: IngestHarness;
  let clock = Date.now();
  const agents = new Map<string, Agent>();
  const from = (address: string): Agent => {
    let a = agents.get(address);
    if (!a) agents.set(address, (a = new Agent({ localAddress: address })));
    return a;
  };
  const post = async (address: string, source: string, user: string, password: string): Promise<Answer> => {
    const res = await request(`${h.url}/api/webhooks/${source}`, {
      method: 'POST',
      dispatcher: from(address),
      headers: { authorization: basic(user, password), 'content-type': 'application/json' },
      body: JSON.stringify({ id: `e-${Math.random()}`, type: 't' }),
    });
    const text = await res.body.text();
    const header = (name: string) => {
      const v = res.headers[name];
      return Array.isArray(v) ? v.join(',') : v;
    };
    return {
      status: res.statusCode,
      retryAfter: header('retry-after'),
      connection: header('connection'),
      code: res.statusCode >= 400 ? (JSON.parse(text) as { code?: string }).code : undefined,
    };
  };
  const refusedBy = async (reason: string): Promise<number> =>
    (await h.metrics.inboundRefused.get()).values.filter((v) => v.labels.reason === reason).reduce((n, v) => n + v.value, 0);

  beforeAll(async () => {
    t = await createTestDatabase();
    h = await startIngestHarness({ db: t.db, refusalLimits: LIMITS, now: () => clock });
    for (const s of ['alpha', 'beta', 'gamma', 'delta']) await addCredential(h.repos, s, s, `${s}-password`);
  });
  afterAll(async () => {
    for (const a of agents.values()) await a.close();
    await h?.close();
    await t?.destroy();
  });

  it('an address refused 3 times in a window gets 429 with Retry-After before any check, for an existing and an unknown source alike', async () => {
    // proven valid before the refusals: it keeps passing
    expect((await post('127.0.0.2', 'alpha', 'alpha', 'alpha-password')).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await post('127.0.0.2', 'alpha', 'alpha', `wrong-${i}`)).status).toBe(401);
    const before = await refusedBy('bad_credentials');

    const limited = await post('127.0.0.2', 'alpha', 'alpha', 'wrong-again');
    expect(limited).toEqual({ status: 429, retryAfter: expect.stringMatching(/^\d+$/), connection: 'close', code: 'too_many_refusals' });
    expect(Number(limited.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(limited.retryAfter)).toBeLessThanOrEqual(60);
    // the same for a source that does not exist: a 429 says nothing of which sources exist
    expect((await post('127.0.0.2', 'no-such-source', 'x', 'y')).status).toBe(429);
    // no comparison was made for them (bad_credentials unchanged), they are counted as rate_limited
    expect(await refusedBy('bad_credentials')).toBe(before);
    expect(await refusedBy('rate_limited')).toBe(2);

    // the credential proven valid skips the limit
    expect((await post('127.0.0.2', 'alpha', 'alpha', 'alpha-password')).status).toBe(200);
    // one never proven, from the same address (another sender behind the same proxy): it names an
    // existing source's username, so it is compared although the address is over its limit, and let in
    expect((await post('127.0.0.2', 'beta', 'beta', 'beta-password')).status).toBe(200);
    // a wrong password with that username is compared too, and answered the 429 it would have had
    // (not a 401, which would tell the username is right)
    expect(await post('127.0.0.2', 'gamma', 'gamma', 'wrong')).toMatchObject({ status: 429, code: 'too_many_refusals' });
    expect(await refusedBy('bad_credentials')).toBe(before);
    expect(await refusedBy('rate_limited')).toBe(3);
    // another address is not held back
    expect((await post('127.0.0.3', 'delta', 'delta', 'delta-password')).status).toBe(200);

    // the window over, the address is checked again
    clock += 61_000;
    expect((await post('127.0.0.2', 'alpha', 'alpha', 'wrong-later')).status).toBe(401);
  });

  it('a source refused 5 times in a window, from any addresses, takes no unproven credential until it ends; a proven one passes', async () => {
    clock += 61_000;
    expect((await post('127.0.0.10', 'gamma', 'gamma', 'gamma-password')).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await post(`127.0.0.${11 + i}`, 'gamma', 'gamma', 'wrong')).status).toBe(401);
    // a fresh address with a wrong password: 429 by the source's count
    expect(await post('127.0.0.20', 'gamma', 'gamma', 'wrong')).toMatchObject({ status: 429, code: 'too_many_refusals' });
    // the proven sender is not held back
    expect((await post('127.0.0.21', 'gamma', 'gamma', 'gamma-password')).status).toBe(200);
    // another source is not either
    expect((await post('127.0.0.22', 'delta', 'delta', 'delta-password')).status).toBe(200);
  });

  it('one comparison at a time with 2 waiting: the rest of a burst is answered 429 with Retry-After: 1 at once', async () => {
    clock += 61_000;
    const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => post(`127.0.0.${40 + i}`, 'delta', 'delta', `wrong-${i}`)));
    // one in turn and two waiting are checked (401); those that come while the line is full are not
    // (a comparison that ends before the last of the burst arrives lets one more in)
    const checked = burst.filter((a) => a.status === 401).length;
    const limited = burst.filter((a) => a.status === 429);
    expect(checked + limited.length).toBe(8);
    expect(checked).toBeGreaterThanOrEqual(3);
    expect(limited.length).toBeGreaterThanOrEqual(3);
    for (const a of limited) expect(a).toMatchObject({ retryAfter: '1', code: 'too_many_refusals' });
  });

  it('the same credential sent again while its comparison runs waits for that one: a burst of it costs one comparison', async () => {
    clock += 61_000;
    const before = await refusedBy('bad_credentials');
    const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => post(`127.0.0.${60 + i}`, 'alpha', 'alpha', 'the-same-wrong')));
    // with one comparison at a time and two waiting, eight different ones would have had 429s
    expect(burst.map((a) => a.status)).toEqual(Array(8).fill(401));
    expect((await refusedBy('bad_credentials')) - before).toBe(8);
  });
});
