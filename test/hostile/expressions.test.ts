import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';

// Filters and transforms written to exhaust time or memory, run by `webhook-fanout try` (the same
// compile and evaluate code prepare and deliver run) in a process whose heap is capped at 192 MB:
// each must end in seconds with the reason, the process exiting as it chose to (not killed by V8
// for a string it could not build, not out of memory).

const list = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(',')}]`;

const HOSTILE_FILTERS: Array<[string, string]> = [
  ['nested comprehensions (200^3 steps)', `${list(200)}.all(a, ${list(200)}.all(b, ${list(200)}.all(c, a + b + c >= 0)))`],
  ['nested comprehensions under an ||', `${list(300)}.exists(a, ${list(300)}.exists(b, a == b + 1000)) || true`],
  ['a quadratic in over the payload', 'event.data.items.all(x, x in event.data.items)'],
  ['catastrophic backtracking', "event.data.s.matches('(a+)+$') && event.data.s.matches('(a|aa)+$') && event.data.s.matches('(.*a){20}')"],
  ['a list that grows per step', `${list(100)}.map(a, ${list(100)}.map(b, event.data.items)).size() > 0`],
];

const HOSTILE_TRANSFORMS: Array<[string, string]> = [
  ['infinite tail recursion', '( $f := function($x){ $f($x) }; $f(1) )'],
  ['deep recursion', '( $f := function($x){ 1 + $f($x) }; $f(1) )'],
  ['a string that doubles each step', '$reduce([1..64], function($a, $i){ $a & $a }, "x")'],
  ['a pad to a billion', '$pad("x", 1000000000)'],
  ['a huge range', '$count([1..100000000])'],
  ['a cross product', '$count([1..100000].([1..100000]))'],
  ['a sort with a comparator', '$sort([1..100000], function($a, $b){ $a < $b })'],
  ['catastrophic backtracking', '$match(data.s, /(a+)+$/)'],
  ['a body of many copies', 'data.items.(data.items)'],
];

describe('hostile expressions end in seconds without taking the process down', () => {
  let dir: string;
  let event: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'wf-hostile-expr-'));
    event = path.join(dir, 'event.json');
    const items = Array.from({ length: 20_000 }, (_, i) => `item-${i}-${'x'.repeat(20)}`);
    await writeFile(event, JSON.stringify({ s: `${'a'.repeat(5000)}!`, items }));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  const endpoint = (extra: string) => `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: hostile
spec:
  source: s
  url: https://example.com/
${extra}`;

  const run = async (file: string) => {
    const started = Date.now();
    const res = await cli(['try', '-f', file, '--event', event, '--type', 't'], { NODE_OPTIONS: '--max-old-space-size=192' });
    return { ...res, ms: Date.now() - started };
  };

  it.each(HOSTILE_FILTERS)('filter: %s', async (name, expr) => {
    const file = path.join(dir, `filter-${name.replace(/\W+/g, '-')}.yaml`);
    await writeFile(file, endpoint(`  filter: ${JSON.stringify(expr)}\n`));
    const res = await run(file);
    // not routed: the filter stopped with an error, or gave its answer, within its bounds
    expect(res.stderr).toBe('');
    expect([0, 1]).toContain(res.code);
    expect(res.ms).toBeLessThan(20_000);
    if (res.code === 1) expect(res.stdout).toMatch(/^not routed: the filter (failed|is false)/);
  });

  it.each(HOSTILE_TRANSFORMS)('transform: %s', async (name, expr) => {
    const file = path.join(dir, `transform-${name.replace(/\W+/g, '-')}.yaml`);
    await writeFile(file, endpoint(`  transform:\n    jsonata: ${JSON.stringify(expr)}\n`));
    const res = await run(file);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(1);
    // stopped by a bound: a final failure, or (past the wall-clock time limit) attempts spent and retried, then FAILED
    expect(res.stdout).toMatch(
      /the delivery would end FAILED: transform failed: |each attempt would fail without a request and be retried, then end FAILED: transform ran past its time limit/,
    );
    expect(res.ms).toBeLessThan(20_000);
  });
});
