import { readFileSync, readdirSync } from 'node:fs';
import { parser } from '@prometheus-io/lezer-promql';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createMetrics } from '../../../src/metrics/metrics.js';
import { createOperatorMetrics } from '../../../src/metrics/operator-metrics.js';

// Every query of the shipped dashboards and alert rules names only metrics the processes export,
// with labels they carry: a renamed metric or a label typo fails here, not on an empty panel or an
// alert that can never fire.

const CHART = new URL('../../../charts/webhook-fanout/', import.meta.url);

/** Labels Prometheus adds to every scraped series (the ServiceMonitor's target labels). */
const TARGET_LABELS = new Set(['namespace', 'pod', 'job', 'instance', 'service', 'container', 'endpoint', 'app_kubernetes_io_component']);
/** Series Prometheus makes itself, with the target labels only. */
const PROMETHEUS_OWN = new Set(['up']);

/** metric name -> the labels its series carry, from the registries of every process. */
function exported(): Map<string, Set<string>> {
  const metrics = createMetrics();
  createOperatorMetrics(metrics.registry);
  const names = new Map<string, Set<string>>();
  for (const m of metrics.registry.getMetricsAsArray()) {
    const labels = new Set((m as unknown as { labelNames?: string[] }).labelNames ?? []);
    const type = (m as unknown as { type?: string }).type ?? (m.constructor.name === 'Histogram' ? 'histogram' : 'other');
    if (m.constructor.name === 'Histogram' || type === 'histogram') {
      names.set(`${m.name}_bucket`, new Set([...labels, 'le']));
      names.set(`${m.name}_sum`, labels);
      names.set(`${m.name}_count`, labels);
    } else names.set(m.name, labels);
  }
  return names;
}

interface Selector {
  metric: string;
  /** label names of its matchers */
  labels: string[];
}

/** The selectors and grouping labels a PromQL expression uses (Grafana's variables replaced first). */
function uses(expr: string): { selectors: Selector[]; groupingLabels: string[]; errors: string[] } {
  const q = expr.replace(/\$__(rate_interval|interval|range)/g, '5m').replace(/\$\{?\w+\}?/g, 'x');
  const out = { selectors: [] as Selector[], groupingLabels: [] as string[], errors: [] as string[] };
  const c = parser.parse(q).cursor();
  do {
    if (c.type.isError) out.errors.push(`syntax error at ${c.from} in ${q}`);
    else if (c.name === 'VectorSelector') {
      const node = c.node;
      const id = node.getChild('Identifier');
      const labels: string[] = [];
      const matchers = node.getChild('LabelMatchers');
      const inner = matchers?.cursor();
      if (inner)
        do if (inner.name === 'LabelName') labels.push(q.slice(inner.from, inner.to));
        while (inner.next() && inner.from < (matchers?.to ?? 0));
      out.selectors.push({ metric: id ? q.slice(id.from, id.to) : '', labels });
    } else if (c.name === 'LabelName' && c.node.parent?.name === 'GroupingLabels') out.groupingLabels.push(q.slice(c.from, c.to));
  } while (c.next());
  return out;
}

interface Query {
  where: string;
  expr: string;
  legend?: string;
}

function dashboardQueries(): Query[] {
  const dir = new URL('files/dashboards/', CHART);
  return readdirSync(dir).flatMap((file) => {
    const dash = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as {
      panels: Array<{ title: string; targets?: Array<{ expr: string; legendFormat?: string }> }>;
    };
    return dash.panels.flatMap((p) =>
      (p.targets ?? []).map((t) => ({ where: `${file}: ${p.title}`, expr: t.expr, ...(t.legendFormat ? { legend: t.legendFormat } : {}) })),
    );
  });
}

function ruleQueries(): Query[] {
  const file = parse(readFileSync(new URL('files/prometheus-rules.yaml', CHART), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
  };
  return file.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })));
}

/** What is wrong with a query: names and labels that the processes do not export. */
function problems(q: Query, known: Map<string, Set<string>>): string[] {
  const u = uses(q.expr);
  const found: string[] = [...u.errors];
  if (u.selectors.length === 0) found.push('names no metric');
  const carried = new Set(TARGET_LABELS);
  const names = u.selectors.map((s) => s.metric).join(', ');
  for (const s of u.selectors) {
    const labels = known.get(s.metric) ?? (PROMETHEUS_OWN.has(s.metric) ? new Set<string>() : undefined);
    if (!labels) {
      found.push(`metric ${s.metric} is not exported by any process`);
      continue;
    }
    labels.forEach((l) => carried.add(l));
    for (const l of s.labels) if (!labels.has(l) && !TARGET_LABELS.has(l)) found.push(`label ${l} is not carried by ${s.metric}`);
  }
  for (const l of u.groupingLabels) if (!carried.has(l)) found.push(`grouping label ${l} is carried by none of ${names}`);
  for (const [, l] of (q.legend ?? '').matchAll(/\{\{\s*(\w+)\s*\}\}/g))
    if (l && !carried.has(l)) found.push(`legend label ${l} is carried by none of ${names}`);
  return [...new Set(found)];
}

describe('dashboards and alert rules use only exported metrics and labels', () => {
  const known = exported();

  it('the registries the processes export hold the metrics the dashboards are about', () => {
    for (const m of [
      'webhook_fanout_inbound_requests_total',
      'webhook_fanout_process_cpu_seconds_total',
      'webhook_fanout_operator_leader',
      'webhook_fanout_retention_deleted_rows_total',
    ]) {
      expect(known.has(m), m).toBe(true);
    }
    expect([...(known.get('webhook_fanout_delivery_duration_seconds_bucket') ?? [])].sort()).toEqual(['le', 'outcome']);
  });

  const dashboards = dashboardQueries();
  const rules = ruleQueries();
  it('finds the queries (a dashboard of every section, every alert)', () => {
    expect(dashboards.length).toBeGreaterThan(40);
    expect(rules.length).toBe(18);
  });

  it.each([...dashboards, ...rules].map((q) => [q.where, q] as const))('%s', (_where, q) => {
    expect(problems(q, known)).toEqual([]);
  });

  it.each([
    { expr: 'rate(webhook_fanout_inbound_request_total[5m])', problem: /metric webhook_fanout_inbound_request_total is not exported/ },
    { expr: 'sum by (endpoint_name) (rate(webhook_fanout_endpoint_delivery_attempts_total[5m]))', problem: /grouping label endpoint_name/ },
    { expr: 'webhook_fanout_unpublished_events{source="x"}', problem: /label source is not carried by webhook_fanout_unpublished_events/ },
    {
      expr: 'sum(webhook_fanout_deliveries_held) / sum(webhook_fanout_delivery_attempts_total{table="x"})',
      problem: /label table is not carried by webhook_fanout_delivery_attempts_total/,
    },
    { expr: 'sum(rate(webhook_fanout_delivery_attempts_total[5m])', problem: /syntax error/ },
    { expr: 'sum(webhook_fanout_deliveries_held)', legend: '{{endpoint_id}}', problem: /legend label endpoint_id/ },
  ])('the check itself catches $expr', ({ expr, legend, problem }) => {
    expect(problems({ where: 'probe', expr, ...(legend ? { legend } : {}) }, known).join('\n')).toMatch(problem);
  });
});
