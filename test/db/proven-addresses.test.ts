import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createDb } from '../../src/db/knex.js';
import { createProvenAddressRepository } from '../../src/db/proven-addresses.js';
import { createProvenAddresses, type ProvenAddressesOptions } from '../../src/ingest/proven-addresses.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { fileDatabase } from '../support/db.js';
import { eventually } from '../support/wait.js';
import { metricValue } from '../retention/support.js';

// The proven client addresses (ingest/proven-addresses.ts) on a real Postgres: what each replica
// writes, what it loads and when, and that a write that fails is counted and fails nothing.

const DAY_MS = 86_400_000;

describe('the proven client addresses in Postgres', () => {
  const t = fileDatabase();
  const silent = createLogger({ level: 'silent' });
  const make = (over: Partial<ProvenAddressesOptions> = {}) => {
    const metrics = createMetrics({ defaultMetrics: false });
    const proven = createProvenAddresses({
      repo: createProvenAddressRepository(t.database.db),
      metrics,
      logger: silent,
      maxAgeMs: 30 * DAY_MS,
      ...over,
    });
    return { proven, metrics };
  };
  const backdate = (source: string, address: string, days: number) =>
    t.database.db.raw(`INSERT INTO webhook_proven_address (source, address, proven_at) VALUES (?, ?, now() - make_interval(days => ?))`, [
      source,
      address,
      days,
    ]);

  it('a pair proven on one replica counts on another once it reads them again', async () => {
    const a = make();
    const b = make({ refreshMs: 100 });
    await a.proven.start();
    await b.proven.start();
    try {
      a.proven.record('10.0.0.1', 'shop');
      // known at once where it was proven
      expect(a.proven.has('10.0.0.1', 'shop')).toBe(true);
      await eventually(async () => b.proven.has('10.0.0.1', 'shop'), { what: 'the other replica to know the pair' });
      expect(b.proven.has('10.0.0.1', 'other')).toBe(false);
      expect(await metricValue(a.metrics, 'webhook_fanout_proven_address_writes_total', { result: 'written' })).toBe(1);
      // proven again within the hour: not written again
      a.proven.record('10.0.0.1', 'shop');
      await a.proven.stop();
      expect(await metricValue(a.metrics, 'webhook_fanout_proven_address_writes_total', { result: 'written' })).toBe(1);
    } finally {
      await a.proven.stop();
      await b.proven.stop();
    }
  });

  it('loads at start the pairs proven within the window, the most recent up to its bound', async () => {
    await t.database.db('webhook_proven_address').delete();
    await backdate('window', '10.0.1.1', 2);
    await backdate('window', '10.0.1.2', 5);
    await backdate('window', '10.0.1.3', 9);
    await backdate('window', '10.0.1.4', 40);
    const { proven, metrics } = make({ maxAgeMs: 10 * DAY_MS, maxPairs: 2 });
    await proven.start();
    await proven.stop();
    const known = ['10.0.1.1', '10.0.1.2', '10.0.1.3', '10.0.1.4'].map((a) => proven.has(a, 'window'));
    // 40 days: past the window; 9 days: within it, but past the bound of two
    expect(known).toEqual([true, true, false, false]);
    expect(await metricValue(metrics, 'webhook_fanout_proven_addresses')).toBe(2);
  });

  it('0 days keeps nothing: no pair written, none loaded', async () => {
    await backdate('off', '10.0.2.1', 0);
    const { proven } = make({ maxAgeMs: 0 });
    await proven.start();
    proven.record('10.0.2.2', 'off');
    await proven.stop();
    expect(proven.has('10.0.2.1', 'off')).toBe(false);
    expect(await t.database.db('webhook_proven_address').where({ source: 'off' }).pluck('address')).toEqual(['10.0.2.1']);
  });

  it('a write that fails (Postgres unreachable) is logged and counted, and written again with the next proof', async () => {
    const down = createDb({ url: 'postgres://nobody@127.0.0.1:1/none', logger: silent });
    const metrics = createMetrics({ defaultMetrics: false });
    const lines: string[] = [];
    // the log lines as pino writes them
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push((JSON.parse(line) as { msg: string }).msg) });
    const proven = createProvenAddresses({ repo: createProvenAddressRepository(down), metrics, logger, maxAgeMs: DAY_MS });
    try {
      // the load fails: the process starts all the same
      await proven.start();
      proven.record('10.0.3.1', 'down');
      expect(proven.has('10.0.3.1', 'down')).toBe(true);
      await eventually(async () => (await metricValue(metrics, 'webhook_fanout_proven_address_writes_total', { result: 'failed' })) === 1, {
        what: 'the failed write counted',
      });
      expect(lines).toContain('proven client addresses not written; they are with their next proof');
      // the next proof queues it again; stop() tries what is pending once more
      proven.record('10.0.3.1', 'down');
      await proven.stop();
      expect(await metricValue(metrics, 'webhook_fanout_proven_address_writes_total', { result: 'failed' })).toBe(2);
    } finally {
      await proven.stop();
      await down.destroy();
    }
  });
});
