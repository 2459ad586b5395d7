import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/metrics.js';
import { createOperatorMetrics } from '../../../src/metrics/operator-metrics.js';

const doc = (name: string): string => readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');
const namesIn = (text: string): Set<string> => new Set(text.match(/webhook_fanout_[a-z0-9_]+/g) ?? []);

/** Every metric a process registers, Node's process metrics included (what /metrics serves). */
async function registered(): Promise<{ own: string[]; all: Set<string> }> {
  const withDefaults = createMetrics();
  createOperatorMetrics(withDefaults.registry);
  const bare = createMetrics({ defaultMetrics: false });
  createOperatorMetrics(bare.registry);
  const own = (await bare.registry.getMetricsAsJSON()).map((m) => m.name);
  const all = new Set((await withDefaults.registry.getMetricsAsJSON()).map((m) => m.name));
  return { own, all };
}

describe('docs/metrics.md, the metrics reference', () => {
  it("documents every metric of the service (the operator's in docs/operator.md) and no metric that does not exist", async () => {
    const { own, all } = await registered();
    const documented = new Set([...namesIn(doc('metrics.md')), ...namesIn(doc('operator.md'))]);
    // a histogram's series are named after it: `_bucket`, `_sum`, `_count` in a query are its own
    const exists = (n: string): boolean => all.has(n) || all.has(n.replace(/_(bucket|sum|count)$/, ''));

    expect(own.filter((n) => !documented.has(n))).toEqual([]);
    expect([...namesIn(doc('metrics.md'))].filter((n) => !exists(n))).toEqual([]);
  });
});
