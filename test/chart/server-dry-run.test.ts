import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  kubeconfigYaml,
  kubectlPath,
  OPERATOR_NAMESPACE,
  OPERATOR_SERVICE_ACCOUNT,
  OPERATOR_USER,
  startKubeControlPlane,
  type KubeControlPlane,
} from '../support/kube.js';
import { stringify } from 'yaml';
import {
  CHART_DIR,
  NAMESPACE,
  RELEASE,
  REPO_ROOT,
  VALUE_SETS,
  helmTemplate,
  parseManifests,
  run,
  runOk,
  toolPath,
} from './support/chart.js';
import { crdFiles } from './support/kubeconform.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('chart-tools', 'kube');

/**
 * The rendered chart against a real kube-apiserver (etcd + kube-apiserver from
 * scripts/kube/build.sh, started by test/support/kube.ts): the chart's CRDs applied server-side
 * first, then every value set through `kubectl apply --dry-run=server --validate=strict` into a
 * namespace that enforces the restricted Pod Security Standard (warnings fail the test too), the
 * sample custom resources likewise, `helm install --dry-run=server`, and the operator's RBAC
 * applied for real and exercised with the operator's own ServiceAccount token.
 */

let cp: KubeControlPlane;
let work: string;

interface Kubectl {
  code: number;
  stdout: string;
  stderr: string;
}

function kubectl(args: string[], input?: string, kubeconfig = cp.kubeconfigPath): Promise<Kubectl> {
  return run(kubectlPath(), args, { input, env: { ...process.env, KUBECONFIG: kubeconfig } });
}

async function kubectlOk(args: string[], input?: string): Promise<Kubectl> {
  const r = await kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}${r.stdout}`);
  return r;
}

/** Rendered objects carry their namespace; loose samples go to the given one. */
const dryRun = (input: string, namespace?: string) =>
  kubectl(['apply', '--dry-run=server', '--validate=strict', ...(namespace ? ['-n', namespace] : []), '-f', '-'], input);

/** `helm install --dry-run=server` of the chart with its minimal values and `args` on top: what it printed. */
async function helmInstallDryRun(args: string[]): Promise<string> {
  const r = await runOk(
    toolPath('helm'),
    [
      'install',
      RELEASE,
      CHART_DIR,
      '--namespace',
      NAMESPACE,
      '--dry-run=server',
      '-f',
      path.join(CHART_DIR, 'ci/minimal-values.yaml'),
      ...args,
    ],
    {
      env: {
        ...process.env,
        KUBECONFIG: cp.kubeconfigPath,
        HELM_CACHE_HOME: path.join(work, 'cache'),
        HELM_CONFIG_HOME: path.join(work, 'config'),
        HELM_DATA_HOME: path.join(work, 'data'),
      },
    },
  );
  return r.stdout;
}

beforeAll(async () => {
  toolPath('helm'); // fail early with the install hint
  work = await mkdtemp(path.join(os.tmpdir(), 'chart-dry-run-'));
  cp = await startKubeControlPlane();
  // CRDs first, server-side, as the chart README tells operators to do before an upgrade
  await kubectlOk(['apply', '--server-side', '--field-manager=webhook-fanout-crds', '-f', path.join(CHART_DIR, 'crds')]);
  for (const crd of crdFiles().filter((f) => f.includes('monitoring.coreos.com'))) await kubectlOk(['apply', '--server-side', '-f', crd]);
  await kubectlOk([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/webhookendpoints.webhookfanout.io',
    'crd/inboundcredentials.webhookfanout.io',
    'crd/servicemonitors.monitoring.coreos.com',
    'crd/prometheusrules.monitoring.coreos.com',
  ]);
  await kubectlOk(['create', 'namespace', NAMESPACE, '--save-config']);
  await kubectlOk([
    'label',
    'namespace',
    NAMESPACE,
    'pod-security.kubernetes.io/enforce=restricted',
    'pod-security.kubernetes.io/warn=restricted',
    'pod-security.kubernetes.io/audit=restricted',
  ]);
  for (const ns of ['team-a', 'team-b']) await kubectlOk(['create', 'namespace', ns]); // watchNamespaces of the full values
}, 180_000);

afterAll(async () => {
  await cp?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the chart CRDs on a real API server', () => {
  it('are established and serve WebhookEndpoint, InboundCredential and WebhookReplay', async () => {
    const r = await kubectlOk(['api-resources', '--api-group=webhookfanout.io', '-o', 'name']);
    expect(r.stdout.split('\n').filter(Boolean).sort()).toEqual([
      'inboundcredentials.webhookfanout.io',
      'webhookendpoints.webhookfanout.io',
      'webhookreplays.webhookfanout.io',
    ]);
  });

  it('re-apply server-side without conflict (the upgrade path of the chart README)', async () => {
    const r = await kubectlOk(['apply', '--server-side', '--field-manager=webhook-fanout-crds', '-f', path.join(CHART_DIR, 'crds')]);
    expect(r.stdout).toMatch(/webhookendpoints\.webhookfanout\.io serverside-applied/);
  });
});

describe.each(Object.keys(VALUE_SETS))('kubectl apply --dry-run=server, %s values', (set) => {
  it('accepts every rendered object, hooks and the test Pod included, without a warning', async () => {
    const manifests = await helmTemplate({ values: VALUE_SETS[set] });
    const objects = parseManifests(manifests);
    const r = await dryRun(manifests);
    expect(r.code, `${r.stderr}\n${r.stdout}`).toBe(0);
    // restricted Pod Security (warn on workloads, enforce on the Pod), deprecations, unknown fields
    expect(r.stderr, 'no warning from the API server').not.toMatch(/warning/i);
    const lines = r.stdout.split('\n').filter(Boolean);
    expect(lines.length).toBe(objects.length);
    for (const l of lines) expect(l).toMatch(/\((server dry run)\)$/);
    for (const o of objects) {
      const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
      const resource = `${o.kind.toLowerCase()}${group ? `.${group}` : ''}/${o.metadata.name}`;
      expect(
        lines.some((l) => l.startsWith(resource + ' ')),
        `${resource} in ${lines.join('\n')}`,
      ).toBe(true);
    }
  });
});

describe('the dry run is meaningful', () => {
  it('enforces the restricted Pod Security Standard in the namespace', async () => {
    const pod = 'apiVersion: v1\nkind: Pod\nmetadata: {name: unrestricted}\nspec:\n  containers: [{name: c, image: busybox:1.36}]\n';
    const r = await dryRun(pod, NAMESPACE);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/violates PodSecurity "restricted/);
  });

  it('rejects an unknown field (strict validation)', async () => {
    const r = await dryRun('apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nautomountServiceAccountTokn: false\n', NAMESPACE);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/unknown field "automountServiceAccountTokn"/);
  });
});

describe('the sample custom resources (examples/dev, examples/sources)', () => {
  it('are accepted by the API server with the chart CRDs', async () => {
    const sources = (await readdir(path.join(REPO_ROOT, 'examples/sources'))).map((f) => `examples/sources/${f}`);
    expect(sources.length).toBeGreaterThanOrEqual(6);
    for (const f of ['examples/dev/credentials.yaml', 'examples/dev/endpoints.yaml', ...sources]) {
      const text = await readFile(path.join(REPO_ROOT, f), 'utf8');
      const r = await dryRun(text, 'default');
      expect(r.code, `${f}: ${r.stderr}`).toBe(0);
      expect(r.stderr).not.toMatch(/warning/i);
      for (const o of parseManifests(text)) expect(r.stdout).toContain(`/${o.metadata.name} created (server dry run)`);
    }
  });

  it('are validated by the CRD schema, CEL rules included', async () => {
    const endpoint = [
      'apiVersion: webhookfanout.io/v1alpha1',
      'kind: WebhookEndpoint',
      'metadata: {name: too-many-attempts}',
      'spec: {source: example, url: "http://receiver/hook", maxAttempts: 500}',
    ].join('\n');
    const r1 = await dryRun(endpoint, 'default');
    expect(r1.code).not.toBe(0);
    expect(r1.stderr).toMatch(/maxAttempts/);
    const credential = [
      'apiVersion: webhookfanout.io/v1alpha1',
      'kind: InboundCredential',
      'metadata: {name: no-rule}',
      'spec: {source: example, username: u, passwordSecretRef: {name: s, key: k}, eventIdFrom: {}}',
    ].join('\n');
    const r2 = await dryRun(credential, 'default');
    expect(r2.code).not.toBe(0);
    expect(r2.stderr).toMatch(/set jsonPath, header or both/);
  });
});

describe('the manifests of the kind end-to-end harness (test/e2e/kind/manifests)', () => {
  it('are accepted by the API server', async () => {
    await kubectlOk(['create', 'namespace', 'infra', '--save-config']);
    const dir = path.join(REPO_ROOT, 'test/e2e/kind/manifests');
    for (const [file, namespace] of [['infra.yaml'], ['receiver.yaml'], ['app-namespace.yaml'], ['samples.yaml', NAMESPACE]] as const) {
      const r = await dryRun(await readFile(path.join(dir, file), 'utf8'), namespace);
      expect(r.code, `${file}: ${r.stderr}`).toBe(0);
      expect(r.stderr, file).not.toMatch(/warning/i);
    }
  });
});

describe('helm against the API server', () => {
  it('helm install --dry-run=server renders the release and its NOTES', async () => {
    const out = await helmInstallDryRun(['--set', 'tests.enabled=true']);
    expect(out).toMatch(/STATUS: pending-install/);
    expect(out).toMatch(/NOTES:\nwebhook-fanout 0\.1\.0 is installed as release "webhook-fanout" in namespace "webhook-fanout"/);
    expect(out).toContain('kubectl -n webhook-fanout create secret generic webhook-fanout-database');
    expect(out).toContain('helm test webhook-fanout -n webhook-fanout');
    expect(out).not.toContain('WARNING');
    expect(out).not.toContain('/console/');
  });

  it('the NOTES say the console URL and the callback to register, with the Ingress and without', async () => {
    const notes = (extra: string[]) =>
      helmInstallDryRun([
        '--set',
        'adminApi.enabled=true,adminApi.auth.url=https://tenant.eu.auth0.com,adminApi.auth.audience=https://api.example.com,console.clientId=spa-1',
        ...extra,
      ]);
    const forwarded = await notes([]);
    expect(forwarded).toContain('Console (signs in at https://tenant.eu.auth0.com, client spa-1, implicit flow):');
    expect(forwarded).toContain('kubectl -n webhook-fanout port-forward svc/webhook-fanout-ingest 8080:');
    expect(forwarded).toContain(
      'http://localhost:8080/console/  (the identity provider must allow the callback http://localhost:8080/console/callback)',
    );
    const ingress = await notes([
      '--set',
      'ingest.ingress.enabled=true,ingest.ingress.tls[0].secretName=t,ingest.ingress.tls[0].hosts[0]=webhooks.example.com',
    ]);
    expect(ingress).toContain('https://webhooks.example.com/console/');
    expect(ingress).toContain('callback https://webhooks.example.com/console/callback');
    expect(await notes(['--set', 'console.enabled=false'])).not.toContain('Console (');
  });

  it('the NOTES of an installation made before the console say it is off and how to turn it on', async () => {
    const out = await helmInstallDryRun(['-f', path.join(CHART_DIR, VALUE_SETS['admin-api-before-console']![0]!)]);
    expect(out).toMatch(/STATUS: pending-install/);
    expect(out).toContain('Admin API (Bearer token from https://tenant.eu.auth0.com, audience https://webhooks.example.com/api)');
    expect(out).toContain('The web console is off. To turn it on, register it at https://tenant.eu.auth0.com as a single-page');
    expect(out).toContain('set console.clientId to its client id');
    expect(out).not.toContain('Console (');
  });
});

describe('the operator RBAC, applied for real', () => {
  let operatorKubeconfig: string;

  beforeAll(async () => {
    const objs = parseManifests(await helmTemplate());
    const rbac = objs.filter(
      (o) =>
        ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind) &&
        !o.metadata.annotations?.['helm.sh/hook'],
    );
    await kubectlOk(['apply', '--server-side', '-f', '-'], rbac.map((o) => stringify(o)).join('---\n'));
    operatorKubeconfig = path.join(work, 'operator.kubeconfig');
    await writeFile(operatorKubeconfig, kubeconfigYaml(cp, OPERATOR_USER, cp.operatorToken, OPERATOR_NAMESPACE), { mode: 0o600 });
  });

  it('is bound to the identity the operator runs as (release webhook-fanout in namespace webhook-fanout)', () => {
    expect(OPERATOR_USER).toBe(`system:serviceaccount:${NAMESPACE}:${OPERATOR_SERVICE_ACCOUNT}`);
    expect(OPERATOR_SERVICE_ACCOUNT).toBe(`${RELEASE}-operator`);
  });

  it('lets the operator do its work with its own token', async () => {
    const as = (args: string[]) => kubectl(args, undefined, operatorKubeconfig);
    for (const args of [
      ['get', 'webhookendpoints', '--all-namespaces'],
      ['get', 'inboundcredentials', '--all-namespaces'],
      ['get', 'secrets', '--all-namespaces'],
      ['get', 'secrets', '-n', 'team-a', '--watch-only', '--request-timeout=1s'],
    ]) {
      const r = await as(args);
      expect(r.stderr, args.join(' ')).not.toMatch(/forbidden/i);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    const lease = [
      'apiVersion: coordination.k8s.io/v1',
      'kind: Lease',
      `metadata: {name: ${RELEASE}-operator, namespace: ${NAMESPACE}}`,
      'spec: {holderIdentity: pod-0, leaseDurationSeconds: 15}',
    ].join('\n');
    const r = await kubectl(['create', '-f', '-'], lease, operatorKubeconfig);
    expect(r.code, r.stderr).toBe(0);
  });

  it('grants nothing more (least privilege)', async () => {
    // asked with the operator's own token (a SelfSubjectAccessReview)
    const can = async (verb: string, resource: string, namespace?: string) => {
      const r = await kubectl(
        ['auth', 'can-i', verb, resource, ...(namespace ? ['-n', namespace] : ['--all-namespaces'])],
        undefined,
        operatorKubeconfig,
      );
      return r.stdout.trim();
    };
    expect(await can('list', 'webhookendpoints.webhookfanout.io')).toBe('yes');
    expect(await can('watch', 'inboundcredentials.webhookfanout.io')).toBe('yes');
    expect(await can('patch', 'webhookendpoints.webhookfanout.io/status')).toBe('yes');
    expect(await can('create', 'events', 'team-a')).toBe('yes');
    expect(await can('update', 'leases.coordination.k8s.io', NAMESPACE)).toBe('yes');
    expect(await can('create', 'webhookendpoints.webhookfanout.io')).toBe('no');
    expect(await can('delete', 'inboundcredentials.webhookfanout.io')).toBe('no');
    expect(await can('create', 'secrets')).toBe('no');
    expect(await can('update', 'secrets')).toBe('no');
    expect(await can('delete', 'secrets')).toBe('no');
    // ConfigMaps: read only, for CA bundles (spec.tls.caBundleRef kind ConfigMap)
    expect(await can('list', 'configmaps')).toBe('yes');
    expect(await can('create', 'configmaps')).toBe('no');
    expect(await can('update', 'configmaps')).toBe('no');
    expect(await can('delete', 'configmaps')).toBe('no');
    expect(await can('list', 'pods')).toBe('no');
    expect(await can('create', 'leases.coordination.k8s.io', 'default')).toBe('no');
  });

  it('gives the other processes no permission at all', async () => {
    for (const sa of ['ingest', 'consumer', 'worker']) {
      const user = `system:serviceaccount:${NAMESPACE}:${RELEASE}-${sa}`;
      const r = await kubectl(['auth', 'can-i', '--list', '--as', user, '-n', NAMESPACE]);
      expect(r.code, r.stderr).toBe(0);
      const rows = r.stdout
        .split('\n')
        .slice(1)
        .filter(Boolean)
        .map((l) => l.split(/\s+/)[0]);
      // only what every authenticated user may do (self reviews, discovery)
      for (const res of rows)
        expect(res, `${sa}: ${r.stdout}`).toMatch(
          /^(selfsubject\w+\.authorization\.k8s\.io|selfsubjectreviews\.authentication\.k8s\.io|)$/,
        );
    }
  });
});
