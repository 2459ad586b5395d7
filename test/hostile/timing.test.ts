import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { basic, http } from '../support/http.js';
import { startIngestHarness, type IngestHarness } from '../support/ingest-harness.js';

// Whether a source exists must not show in how long a refusal takes, whatever bcrypt cost the
// configured hashes have (a Secret may hold a pre-hashed password of any cost). Before the fix an
// unknown source cost a cost-10 comparison: 4x faster than a wrong password on a cost-12 hash,
// 60x slower than one on a cost-4 hash.

const SAMPLES = 9;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

describe('inbound refusals take the same time for unknown sources and wrong passwords', () => {
  let t: TestDatabase;
  let h: IngestHarness;

  beforeAll(async () => {
    t = await createTestDatabase();
    // cacheSize 0: every request pays bcrypt, as a brute-forcer's wrong guesses do anyway
    h = await startIngestHarness({ db: t.db, cacheSize: 0 });
    for (const [source, cost] of [
      ['cheap', 4],
      ['costly', 12],
    ] as const) {
      await h.repos.credentials.upsertByResourceUid(`test:${source}`, {
        source,
        username: 'u',
        passwordHash: await bcrypt.hash('right-password', cost),
        eventIdRule: null,
        eventTypeRule: null,
        resourceName: `test/${source}`,
      });
    }
  });
  afterAll(async () => {
    await h?.close();
    await t?.destroy();
  });

  async function refusalMs(source: string, password: string): Promise<number> {
    const started = process.hrtime.bigint();
    const res = await http(`${h.url}/api/webhooks/${source}`, {
      headers: { authorization: basic('u', password), 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(401);
    return Number(process.hrtime.bigint() - started) / 1e6;
  }

  // Alone, the three medians come within 10% of each other (about 210 ms); under the full suite
  // on a shared 2-core machine, scheduling noise reaches 1.4x. The leak was 4x and 50x.
  it('unknown source vs wrong password on a cost-4 and on a cost-12 hash: medians within 2x of each other', async () => {
    // warm-up: the first refusals also create the dummy hash and load the rows
    for (const s of ['nosuchsource', 'cheap', 'costly']) await refusalMs(s, 'warm-up');
    const times: Record<string, number[]> = { unknown: [], cheap: [], costly: [] };
    for (let i = 0; i < SAMPLES; i++) {
      times.unknown?.push(await refusalMs(`unknown-${i}`, 'guess'));
      times.cheap?.push(await refusalMs('cheap', 'guess'));
      times.costly?.push(await refusalMs('costly', 'guess'));
    }
    const m = { unknown: median(times.unknown ?? []), cheap: median(times.cheap ?? []), costly: median(times.costly ?? []) };
    console.log(`refusal medians over ${SAMPLES} (ms): unknown source ${m.unknown.toFixed(1)}, wrong password cost 4 ${m.cheap.toFixed(1)}, cost 12 ${m.costly.toFixed(1)}`);
    expect(m.unknown / m.costly).toBeGreaterThan(0.5);
    expect(m.unknown / m.costly).toBeLessThan(2);
    expect(m.cheap / m.costly).toBeGreaterThan(0.5);
    expect(m.cheap / m.costly).toBeLessThan(2);
  }, 60_000);

  it('the right password is still accepted on both hashes', async () => {
    for (const source of ['cheap', 'costly']) {
      const res = await http(`${h.url}/api/webhooks/${source}`, {
        headers: { authorization: basic('u', 'right-password'), 'content-type': 'application/json' },
        body: '{"id":"1"}',
      });
      expect(res.status, res.text).toBe(200);
    }
  });
});
