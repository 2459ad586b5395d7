import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, VALUE_SETS, helmTemplate } from './support/chart.js';
import { availableKubernetesVersions, crdSchemaDir, kubeconform, type KubeconformReport } from './support/kubeconform.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('chart-tools');

/**
 * The rendered chart (CRDs included) and the sample custom resources through kubeconform in
 * strict mode, offline: Kubernetes schemas from PyPI kubernetes-validate, for the oldest
 * Kubernetes the chart supports (Chart.yaml kubeVersion >= 1.29) and the newest schemas there
 * are; the custom resources (WebhookEndpoint, InboundCredential, ServiceMonitor) against
 * schemas converted from their CRDs.
 */

const OLDEST = '1.29.0';
let versions: string[];
let crds: Awaited<ReturnType<typeof crdSchemaDir>>;

beforeAll(async () => {
  const available = await availableKubernetesVersions();
  expect(available, 'kubernetes-validate has no schemas for the oldest supported Kubernetes').toContain(OLDEST);
  versions = [OLDEST, available.at(-1)!];
  crds = await crdSchemaDir();
});

afterAll(async () => {
  await crds?.cleanup();
});

function expectAllValid(report: KubeconformReport, expectedKinds: string[]): void {
  const bad = report.resources.filter((r) => r.status !== 'statusValid');
  expect(
    bad.map((r) => `${r.kind}/${r.name}: ${r.status} ${r.msg}`),
    report.stderr,
  ).toEqual([]);
  expect(report.exitCode).toBe(0);
  expect(report.summary.invalid + report.summary.errors + report.summary.skipped).toBe(0);
  const kinds = new Set(report.resources.map((r) => r.kind));
  for (const k of expectedKinds) expect(kinds, `${k} was validated`).toContain(k);
}

describe.each(Object.keys(VALUE_SETS))('kubeconform -strict, %s values', (set) => {
  it.each([OLDEST, 'newest'])('validates every rendered object against Kubernetes %s', async (which) => {
    const version = which === 'newest' ? versions.at(-1)! : which;
    // the source-names policy needs 1.30 (the chart refuses it below, tested beside): 1.29 renders without it
    const overrides = which === OLDEST ? ['tenancy.sourceNames=Any'] : [];
    const manifests = await helmTemplate({ values: VALUE_SETS[set], set: overrides, includeCrds: true });
    const report = await kubeconform(manifests, version, crds.dir);
    const expected = ['CustomResourceDefinition', 'Deployment', 'ServiceAccount'];
    if (set !== 'minimal') expected.push('Job', 'Pod', 'ClusterRole', 'Role', 'RoleBinding');
    if (!['minimal', 'example-dev'].includes(set)) expected.push('PodDisruptionBudget');
    if (set.startsWith('full')) expected.push('ServiceMonitor', 'PrometheusRule', 'ConfigMap', 'HorizontalPodAutoscaler', 'Ingress');
    expectAllValid(report, expected);
  });
});

describe('kubeconform on the sample custom resources (examples/dev)', () => {
  it('accepts WebhookEndpoint, InboundCredential and Secret manifests', async () => {
    const sources = (await readdir(path.join(REPO_ROOT, 'examples/sources'))).map((f) => `examples/sources/${f}`);
    const files = ['examples/dev/credentials.yaml', 'examples/dev/endpoints.yaml', ...sources];
    const manifests = (await Promise.all(files.map((f) => readFile(path.join(REPO_ROOT, f), 'utf8')))).join('\n---\n');
    const report = await kubeconform(manifests, versions.at(-1)!, crds.dir);
    expectAllValid(report, ['WebhookEndpoint', 'InboundCredential', 'Secret']);
  });

  it('rejects unknown fields and bad values in a custom resource (the CRD schemas are in force)', async () => {
    const bad = [
      'apiVersion: webhookfanout.io/v1alpha1',
      'kind: WebhookEndpoint',
      'metadata: {name: typo, namespace: default}',
      'spec:',
      '  source: example',
      '  url: http://receiver/hook',
      '  maxAttempt: 5', // typo of maxAttempts
      '---',
      'apiVersion: webhookfanout.io/v1alpha1',
      'kind: InboundCredential',
      'metadata: {name: bad-source, namespace: default}',
      'spec:',
      '  source: "not a source!"',
      '  username: u',
      '  passwordSecretRef: {name: s, key: k}',
    ].join('\n');
    const report = await kubeconform(bad, versions.at(-1)!, crds.dir);
    const byName = Object.fromEntries(report.resources.map((r) => [r.name, r]));
    expect(byName.typo?.status).toBe('statusInvalid');
    expect(byName.typo?.msg).toMatch(/maxAttempt/);
    expect(byName['bad-source']?.status).toBe('statusInvalid');
    expect(report.exitCode).not.toBe(0);
  });

  it('reports an object without a schema as an error instead of skipping it', async () => {
    const report = await kubeconform('apiVersion: example.com/v1\nkind: Unknown\nmetadata: {name: x}\n', versions.at(-1)!, crds.dir);
    expect(report.resources.map((r) => r.status)).toEqual(['statusError']);
    expect(report.exitCode).not.toBe(0);
  });

  it('rejects an unknown field in a built-in kind (strict)', async () => {
    const report = await kubeconform(
      'apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports: [{port: 80}]\n  selectr: {a: b}\n',
      versions.at(-1)!,
      crds.dir,
    );
    expect(report.resources.map((r) => r.status)).toEqual(['statusInvalid']);
  });
});
