import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import type { StartedIngest } from '../../src/processes/ingest-process.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { addCredential, startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';
import { eventually } from '../support/wait.js';

// Issue 45, the proven set surviving restarts: the client addresses a source's credential was
// proven from are written to Postgres (source, address, time; no secret) and loaded by an ingest
// when it starts, whose wrong-password limiter then places a candidate from such an address before
// the first tries of a flood from fresh addresses, which rank as well as a never-seen sender's
// first request. Shown by who goes first, not by how long anything takes (the machine is loaded):
// the order in which the flood's requests and the sender's are answered. The refusal floor is off,
// so that a refusal is answered when its comparison ends.

const PROVEN = { source: 'proven-src', username: 'sender-p', password: 'right-p-password', address: '127.0.0.11' };
const UNSEEN = { source: 'unseen-src', username: 'sender-u', password: 'right-u-password', address: '127.0.0.12' };
const FLOOD = 24;

const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

/** One POST from a client address of its own; its status. */
async function post(url: string, source: string, authorization: string, localAddress: string): Promise<number> {
  const dispatcher = new Agent({ localAddress });
  try {
    const res = await request(`${url}/api/webhooks/${source}`, {
      method: 'POST',
      dispatcher,
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ id: `proven-${randomBytes(6).toString('hex')}`, type: 'test.proven' }),
      headersTimeout: 120_000,
      bodyTimeout: 120_000,
    });
    await res.body.text();
    return res.statusCode;
  } finally {
    await dispatcher.close();
  }
}

/**
 * FLOOD first tries at the source's password (its username known), each from a fresh address
 * (127.0.<net>.n), then, once two of them have been answered (the rest are waiting in the line),
 * the sender's first request: its status, and how many of the flood were answered while it waited.
 */
async function trial(url: string, sender: typeof PROVEN, net: number) {
  const answered: string[] = [];
  const flood = Array.from({ length: FLOOD }, (_, n) =>
    post(url, sender.source, basic(sender.username, randomBytes(9).toString('base64url')), `127.0.${net}.${n + 1}`).then((status) => {
      answered.push('flood');
      return status;
    }),
  );
  await eventually(async () => answered.length >= 2, { timeoutMs: 60_000, what: 'two of the flood answered' });
  answered.push('sent');
  const status = await post(url, sender.source, basic(sender.username, sender.password), sender.address);
  answered.push('sender');
  const floodStatuses = await Promise.all(flood);
  const waitedFor = answered.slice(answered.indexOf('sent'), answered.indexOf('sender')).filter((a) => a === 'flood').length;
  return { status, waitedFor, floodStatuses, answered: answered.join(' ') };
}

describe('the client addresses proven before a restart', () => {
  let t: TestDatabase;
  let h: IngestHarness;
  let restarted: StartedIngest;

  beforeAll(async () => {
    t = await createTestDatabase();
    h = await startIngestHarness({ db: t.db, refusalFloorMs: 0 });
    for (const c of [PROVEN, UNSEEN]) await addCredential(h.repos, c.source, c.username, c.password);
  });
  afterAll(async () => {
    await h?.close();
    await t?.destroy();
  });

  it('are written when a credential is proven: the source, the address and when, nothing else', async () => {
    expect(await post(h.url, PROVEN.source, basic(PROVEN.username, PROVEN.password), PROVEN.address)).toBe(200);
    // a wrong password proves nothing
    expect(await post(h.url, UNSEEN.source, basic(UNSEEN.username, 'wrong'), UNSEEN.address)).toBe(401);
    const rows = await eventually(
      async () => {
        const r = (await t.db('webhook_proven_address').select('*')) as Array<Record<string, unknown>>;
        return r.length > 0 && r;
      },
      { what: 'the proven pair written' },
    );
    expect(rows).toEqual([{ source: PROVEN.source, address: PROVEN.address, proven_at: expect.any(Date) }]);
    expect(Date.now() - (rows[0]!.proven_at as Date).getTime()).toBeLessThan(60_000);
  });

  it("a freshly started ingest places them first: a proven sender's first request goes before a flood's first tries", async () => {
    // a fresh process on the same database: nothing cached, every first request compared
    restarted = await h.startAnother({ logger: createLogger({ level: 'silent' }), sweep: { sweepMinAgeMs: 60_000 } });
    const proven = await trial(restarted.url, PROVEN, 4);
    const unseen = await trial(restarted.url, UNSEEN, 5);
    const line = `proven: ${JSON.stringify(proven)}; never seen: ${JSON.stringify(unseen)}`;
    console.log(line);
    // both let in (the line holds them), and every flood request refused
    expect([proven.status, unseen.status], line).toEqual([200, 200]);
    expect(new Set([...proven.floodStatuses, ...unseen.floodStatuses]), line).toEqual(new Set([401]));
    // the proven sender waited for the comparison under way (and one more, if it ended as it came)
    expect(proven.waitedFor, line).toBeLessThanOrEqual(2);
    // the never-seen one for the first tries placed before it: all but a few of the 22 left
    expect(unseen.waitedFor, line).toBeGreaterThanOrEqual(10);
  }, 180_000);
});
