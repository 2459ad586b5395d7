import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { CHART_DIR, helmTemplate, parseManifests, REPO_ROOT, run, toolPath } from '../chart/support/chart.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('chart-tools');

// The alert rules the chart ships, with promtool built from Prometheus's own Go module
// (scripts/tools/install.sh): the file is valid, every alert fires on series that show its
// trouble and stays silent otherwise (prometheus-rules.test.yaml), each has what a person needs
// to act, and the PrometheusRule the chart renders carries the same rules, renamed for the release.

const RULES = path.join(CHART_DIR, 'files/prometheus-rules.yaml');
const TESTS = path.join(REPO_ROOT, 'test/alerts/prometheus-rules.test.yaml');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
interface RuleTests {
  tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
}

const rules = (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);

describe('the alert rules under promtool', () => {
  let promtool: string;
  let work: string;
  beforeAll(async () => {
    promtool = toolPath('promtool');
    work = await mkdtemp(path.join(os.tmpdir(), 'alerts-'));
  });
  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('promtool check rules: the file is valid', async () => {
    const r = await run(promtool, ['check', 'rules', RULES]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  it('promtool test rules: every alert fires on its trouble and not on healthy series', async () => {
    const r = await run(promtool, ['test', 'rules', TESTS]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS/);
  });

  it('the unit tests cover every alert, firing and not firing', () => {
    const cases = (parse(readFileSync(TESTS, 'utf8')) as RuleTests).tests.flatMap((t) => t.alert_rule_test);
    for (const { alert } of rules) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} fires in a test`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} stays silent in a test`,
      ).toBe(true);
    }
  });

  it('the tests can fail: a threshold moved breaks them', async () => {
    const moved = readFileSync(RULES, 'utf8').replace('state="visible"}) > 0', 'state="visible"}) > 5');
    expect(moved).not.toBe(readFileSync(RULES, 'utf8'));
    await writeFile(path.join(work, 'rules.yaml'), moved);
    const tests = parse(readFileSync(TESTS, 'utf8')) as Record<string, unknown>;
    await writeFile(path.join(work, 'tests.yaml'), stringify({ ...tests, rule_files: ['rules.yaml'] }));
    const r = await run(promtool, ['test', 'rules', path.join(work, 'tests.yaml')]);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/WebhookFanoutDLQNotEmpty/);
  });

  it.each(rules.map((r) => [r.alert, r] as const))(
    '%s: severity, summary, a description naming what to look at, a runbook section',
    async (_name, rule) => {
      expect(['warning', 'critical']).toContain(rule.labels.severity);
      expect(rule.annotations.summary?.length).toBeGreaterThan(20);
      expect(rule.annotations.description?.length).toBeGreaterThan(80);
      const anchor = /docs\/runbook\.md#([a-z0-9-]+)$/.exec(rule.annotations.runbook_url ?? '')?.[1];
      expect(anchor).toBe(rule.alert.toLowerCase());
      const runbook = await readFile(path.join(REPO_ROOT, 'docs/runbook.md'), 'utf8');
      expect(runbook).toMatch(new RegExp(`^## ${rule.alert}$`, 'm'));
    },
  );

  it('the chart renders the same rules as a PrometheusRule, jobs renamed for the release, with ruleLabels and without the disabled', async () => {
    const text = await helmTemplate({
      release: 'payments',
      set: [
        'metrics.prometheusRule.enabled=true',
        'metrics.prometheusRule.labels.release=kube-prometheus-stack',
        'metrics.prometheusRule.ruleLabels.team=payments',
        'metrics.prometheusRule.disabled={WebhookFanoutOperatorNoLeader}',
      ],
    });
    const [rule] = parseManifests(text).filter((o) => o.kind === 'PrometheusRule');
    expect(rule?.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
    const spec = (rule as unknown as { spec: { groups: Array<{ name: string; rules: Rule[] }> } }).spec;
    const rendered = spec.groups.flatMap((g) => g.rules);
    expect(rendered.map((r) => r.alert)).toEqual(rules.map((r) => r.alert).filter((a) => a !== 'WebhookFanoutOperatorNoLeader'));
    for (const r of rendered) {
      const original = rules.find((o) => o.alert === r.alert)!;
      expect(r.labels).toEqual({ ...original.labels, team: 'payments' });
      expect(r.annotations).toEqual(original.annotations);
      expect(r.expr).toBe(original.expr.replace('job=~"webhook-fanout-(', 'job=~"payments-webhook-fanout-('));
    }
    expect(rendered.find((r) => r.alert === 'WebhookFanoutProcessDown')?.expr).toContain(
      'payments-webhook-fanout-(ingest|consumer|worker|operator)-metrics',
    );
    // what the cluster's Prometheus loads is valid too
    await writeFile(path.join(work, 'rendered.yaml'), stringify({ groups: spec.groups }));
    const r = await run(promtool, ['check', 'rules', path.join(work, 'rendered.yaml')]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
  });

  it("the dashboard ConfigMap carries the repository's JSON as it is, with the sidecar's label", async () => {
    const text = await helmTemplate({ set: ['metrics.dashboards.enabled=true', 'metrics.dashboards.annotations.grafana_folder=payments'] });
    const maps = parseManifests(text).filter((o) => o.kind === 'ConfigMap' && o.metadata.name.includes('dashboard'));
    expect(maps).toHaveLength(1);
    expect(maps[0]?.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(maps[0]?.metadata.annotations).toEqual({ grafana_folder: 'payments' });
    const data = (maps[0] as unknown as { data: Record<string, string> }).data;
    expect(JSON.parse(data['webhook-fanout.json'] ?? '')).toEqual(
      JSON.parse(readFileSync(path.join(CHART_DIR, 'files/dashboards/webhook-fanout.json'), 'utf8')),
    );
    // off by default, both
    const plain = parseManifests(await helmTemplate());
    expect(plain.filter((o) => o.kind === 'PrometheusRule' || (o.kind === 'ConfigMap' && o.metadata.name.includes('dashboard')))).toEqual(
      [],
    );
  });
});
