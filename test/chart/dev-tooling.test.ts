import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CHART_DIR, REPO_ROOT, helmTemplate, parseManifests, run, toolPath } from './support/chart.js';
import { availableKubernetesVersions, crdSchemaDir, kubeconform } from './support/kubeconform.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('chart-tools');

/**
 * What can be checked here of the tooling that needs a Docker engine (skaffold, the kind
 * end-to-end harness): skaffold.yaml against skaffold's own JSON schema, ShellCheck on the
 * scripts, the harness's manifests through kubeconform, and that every file they name exists.
 */

const E2E = path.join(REPO_ROOT, 'test/e2e/kind');
let crds: Awaited<ReturnType<typeof crdSchemaDir>>;
let newest: string;

beforeAll(async () => {
  crds = await crdSchemaDir();
  newest = (await availableKubernetesVersions()).at(-1)!;
});

afterAll(async () => {
  await crds?.cleanup();
});

interface SkaffoldConfig {
  apiVersion: string;
  metadata: { name: string };
  requires?: { configs: string[] }[];
  manifests?: { rawYaml?: string[] };
  build?: { artifacts: { image: string; custom?: { buildCommand: string; dependencies: { dockerfile: { path: string } } } }[] };
  deploy?: {
    helm?: { releases: { chartPath: string; namespace: string; valuesFiles?: string[]; setValueTemplates?: Record<string, string> }[] };
  };
  profiles?: { name: string }[];
}

describe('skaffold.yaml', () => {
  it('is valid against the JSON schema of its apiVersion (skaffold module), strictly', async () => {
    const text = await readFile(path.join(REPO_ROOT, 'skaffold.yaml'), 'utf8');
    const report = await kubeconform(text, newest, crds.dir);
    expect(report.resources.map((r) => `${r.kind}/${r.name}: ${r.status} ${r.msg}`).sort()).toEqual([
      'Config/infra: statusValid ',
      'Config/webhook-fanout: statusValid ',
    ]);
    const broken = text.replace('createNamespace: false', 'createNamespace: false\n        valueFiles: [typo.yaml]');
    const bad = await kubeconform(broken, newest, crds.dir);
    expect(bad.resources.find((r) => r.name === 'webhook-fanout')?.status).toBe('statusInvalid');
  });

  it('builds the Dockerfile and deploys the chart with its development values, infra first, with a kind profile', async () => {
    const configs = parseAllDocuments(await readFile(path.join(REPO_ROOT, 'skaffold.yaml'), 'utf8')).map((d) => d.toJS() as SkaffoldConfig);
    const infra = configs.find((c) => c.metadata.name === 'infra')!;
    const app = configs.find((c) => c.metadata.name === 'webhook-fanout')!;
    expect(app.requires).toEqual([{ configs: ['infra'] }]);
    for (const f of infra.manifests?.rawYaml ?? []) expect(existsSync(path.join(REPO_ROOT, f)), f).toBe(true);
    const artifact = app.build!.artifacts[0]!;
    expect(artifact.image).toBe('webhook-fanout');
    // built by the project's script (podman or docker), from the Dockerfile it watches
    expect(artifact.custom!.buildCommand).toBe('bash scripts/image/build.sh -t "$IMAGE"');
    expect(existsSync(path.join(REPO_ROOT, artifact.custom!.dependencies.dockerfile.path))).toBe(true);
    const release = app.deploy!.helm!.releases[0]!;
    expect(path.resolve(REPO_ROOT, release.chartPath)).toBe(path.resolve(CHART_DIR));
    for (const f of release.valuesFiles ?? []) expect(existsSync(path.join(REPO_ROOT, f)), f).toBe(true);
    // skaffold's template variables are named after the artifact, "-" becoming "_"
    const variable = artifact.image.replace(/[^A-Za-z0-9]/g, '_');
    expect(release.setValueTemplates).toEqual({
      'image.repository': `{{.IMAGE_REPO_${variable}}}`,
      'image.tag': `{{.IMAGE_TAG_${variable}}}`,
    });
    expect(app.profiles?.map((p) => p.name)).toContain('kind');
    // the development values render
    const objs = parseManifests(
      await helmTemplate({ values: release.valuesFiles!.map((f) => path.relative(CHART_DIR, path.join(REPO_ROOT, f))) }),
    );
    expect(objs.filter((o) => o.kind === 'Deployment')).toHaveLength(4);
  });
});

describe('shell scripts', () => {
  it.each([
    'test/e2e/kind/run.sh',
    'scripts/tools/install.sh',
    'scripts/tools/builds.sh',
    'scripts/tools/brokers.sh',
    'scripts/provision.sh',
    'scripts/image/build.sh',
    'scripts/image/base.sh',
    'scripts/image/lib.sh',
    'scripts/image/prune-node-modules.sh',
    '.ci/run',
    'scripts/cluster/run.sh',
    'scripts/kube/build-node.sh',
    'scripts/kube/build.sh',
    'scripts/kube/lib.sh',
    'test/cluster/run.sh',
    'test/e2e/images/build.sh',
    'test/e2e/images/postgres/entrypoint.sh',
  ])('%s passes ShellCheck', async (file) => {
    const r = await run(toolPath('shellcheck'), ['--format=gcc', '--severity=style', '--external-sources', file]);
    expect(r.stdout + r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('ShellCheck is really checking', async () => {
    const r = await run(toolPath('shellcheck'), ['--format=gcc', '-'], { input: '#!/bin/bash\nrm -rf $1/*\n' });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toMatch(/SC2086/);
  });
});

describe('the kind end-to-end harness', () => {
  it('uses manifests that are valid Kubernetes objects (kubeconform -strict)', async () => {
    const files = ['infra.yaml', 'receiver.yaml', 'app-namespace.yaml', 'samples.yaml'];
    const text = (await Promise.all(files.map((f) => readFile(path.join(E2E, 'manifests', f), 'utf8')))).join('\n---\n');
    const report = await kubeconform(text, newest, crds.dir);
    expect(report.resources.filter((r) => r.status !== 'statusValid').map((r) => `${r.kind}/${r.name}: ${r.msg}`)).toEqual([]);
    expect(new Set(report.resources.map((r) => r.kind))).toEqual(
      new Set(['Namespace', 'Secret', 'Deployment', 'Service', 'ConfigMap', 'InboundCredential', 'WebhookEndpoint']),
    );
  });

  it('names only files that exist, and values the chart accepts', async () => {
    const script = await readFile(path.join(E2E, 'run.sh'), 'utf8');
    for (const m of script.matchAll(/"\$(HERE|ROOT)\/([^"$]+)"/g)) {
      const base = m[1] === 'HERE' ? E2E : REPO_ROOT;
      expect(existsSync(path.join(base, m[2]!)), `${m[1]}/${m[2]}`).toBe(true);
    }
    const objs = parseManifests(await helmTemplate({ values: ['examples/values-in-cluster.yaml', path.join(E2E, 'values.yaml')] }));
    const images = new Set(objs.flatMap((o) => JSON.stringify(o).match(/"image":"[^"]+"/g) ?? []));
    expect([...images]).toEqual(['"image":"webhook-fanout:e2e"']);
  });

  it('configures endpoints the receiver can verify', async () => {
    const [samples, receiver] = await Promise.all(
      ['samples.yaml', 'receiver.yaml'].map((f) => readFile(path.join(E2E, 'manifests', f), 'utf8')),
    );
    const objs = parseManifests(samples!);
    const endpoint = objs.find((o) => o.kind === 'WebhookEndpoint')! as unknown as {
      spec: { url: string; auth: { secretRef: { name: string; key: string } } };
    };
    expect(endpoint.spec.url).toMatch(/^http:\/\/receiver\.infra\.svc\.cluster\.local:8080\//);
    const signing = objs.find((o) => o.kind === 'Secret' && o.metadata.name === endpoint.spec.auth.secretRef.name)! as unknown as {
      stringData: Record<string, string>;
    };
    const receiverSecret = parseManifests(receiver!).find((o) => o.kind === 'Secret')! as unknown as {
      stringData: { SIGNING_SECRET: string };
    };
    expect(receiverSecret.stringData.SIGNING_SECRET).toBe(signing.stringData[endpoint.spec.auth.secretRef.key]);
  });
});
