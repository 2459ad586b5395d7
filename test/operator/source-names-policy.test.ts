import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helmTemplate } from '../chart/support/chart.js';
import { kubectl, KubectlError, type KubeConnection } from '../support/kube.js';
import { createNamespace, sharedKube } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';

/**
 * The chart's optional ValidatingAdmissionPolicy on source names (tenancy.sourceNames:
 * NamespacePrefixed, docs/tenancy.md), rendered with helm template and applied to the real
 * kube-apiserver: an InboundCredential is admitted only if spec.source is its namespace or starts
 * with "<namespace>-". Its binding is confined to this file's namespaces (the chart's
 * tenancy.sourceNamesNamespaceSelector), so the other files sharing the API server never meet it.
 */
let conn: KubeConnection;
let dir: string;
let ns: string;
let elsewhere: string;
let policy: string;

const credential = (name: string, source: string) => `apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: ${name}}
spec:
  source: ${source}
  verification: {type: Stripe, secretRefs: [{name: s, key: k}]}
`;

/** What kube-apiserver said when it refused, or undefined when it admitted. */
async function refusal(namespace: string, yaml: string): Promise<string | undefined> {
  try {
    await kubectl(conn, ['apply', '-n', namespace, '-f', '-'], { input: yaml });
    return undefined;
  } catch (err) {
    if (err instanceof KubectlError) return err.stderr;
    throw err;
  }
}

beforeAll(async () => {
  conn = await sharedKube();
  [ns, elsewhere] = await Promise.all([createNamespace(conn, 'srcnames'), createNamespace(conn, 'srcfree')]);
  // a credential admitted before the policy, with a name the policy would refuse
  await kubectl(conn, ['apply', '-n', ns, '-f', '-'], { input: credential('legacy', 'someone-elses') });

  const versions = await kubectl(conn, ['api-resources', '--api-group=admissionregistration.k8s.io', '-o', 'name']);
  expect(versions, 'kube-apiserver serves ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes >= 1.30)').toMatch(
    /validatingadmissionpolicies\.admissionregistration\.k8s\.io/,
  );
  dir = await mkdtemp(path.join(os.tmpdir(), 'srcnames-'));
  const values = path.join(dir, 'values.yaml');
  await writeFile(
    values,
    `tenancy:\n  sourceNames: NamespacePrefixed\n  sourceNamesNamespaceSelector:\n    matchLabels: {kubernetes.io/metadata.name: ${ns}}\n`,
  );
  const rendered = (await helmTemplate({ namespace: ns, values: [values] }))
    .split(/^---$/m)
    .filter((doc) => /^# Source: webhook-fanout\/templates\/tenancy\//m.test(doc))
    .join('---');
  expect(rendered).toMatch(/kind: ValidatingAdmissionPolicy\n/);
  expect(rendered).toMatch(/kind: ValidatingAdmissionPolicyBinding\n/);
  policy = /^kind: ValidatingAdmissionPolicy\nmetadata:\n {2}name: (\S+)/m.exec(rendered)?.[1] ?? '';
  await kubectl(conn, ['apply', '-f', '-'], { input: rendered });
  // the API server compiles a new policy and binding asynchronously: wait until it refuses (a new
  // name each time: a probe admitted before is an update that keeps its source, which passes)
  let probe = 0;
  await eventually(async () => (await refusal(ns, credential(`probe-${++probe}`, 'not-mine'))) !== undefined, {
    what: 'the policy in force',
    timeoutMs: 30_000,
  });
});

afterAll(async () => {
  if (policy) {
    await kubectl(conn, ['delete', 'validatingadmissionpolicybinding', policy, '--ignore-not-found']);
    await kubectl(conn, ['delete', 'validatingadmissionpolicy', policy, '--ignore-not-found']);
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('tenancy.sourceNames: NamespacePrefixed', () => {
  it('admits a source named for its namespace, or prefixed with it and a dash', async () => {
    expect(await refusal(ns, credential('own', ns))).toBeUndefined();
    expect(await refusal(ns, credential('stripe', `${ns}-stripe`))).toBeUndefined();
  });

  it('refuses any other source, saying what it must be, and stores nothing', async () => {
    const said = await refusal(ns, credential('taken', 'payments'));
    expect(said).toContain(`spec.source must be the namespace name or start with "${ns}-" (tenancy.sourceNames: NamespacePrefixed)`);
    expect(said).toContain(`got payments`);
    // the namespace without the dash is another team's prefix
    expect(await refusal(ns, credential('glued', `${ns}x`))).toBeDefined();
    expect(await kubectl(conn, ['get', 'ic', '-n', ns, '-o', 'name'])).not.toMatch(/taken|glued/);
  });

  it('refuses a change of source to another name; other updates of the credential pass', async () => {
    expect(await refusal(ns, credential('stripe', 'payments-stripe'))).toMatch(/spec\.source must be the namespace name/);
    await kubectl(conn, ['annotate', 'ic', 'stripe', '-n', ns, 'example.com/note=kept']);
    expect(await kubectl(conn, ['get', 'ic', 'stripe', '-n', ns, '-o', 'jsonpath={.spec.source}'])).toBe(`${ns}-stripe`);
  });

  it('leaves a credential admitted before the policy alone: it can be updated (as the operator does) and deleted', async () => {
    await kubectl(conn, ['annotate', 'ic', 'legacy', '-n', ns, 'example.com/note=kept']);
    await kubectl(conn, [
      'patch',
      'ic',
      'legacy',
      '-n',
      ns,
      '--type=merge',
      '-p',
      '{"metadata":{"finalizers":["webhookfanout.io/finalizer"]}}',
    ]);
    await kubectl(conn, ['patch', 'ic', 'legacy', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await kubectl(conn, ['delete', 'ic', 'legacy', '-n', ns, '--wait=true']);
  });

  it('holds only in the namespaces its selector picks', async () => {
    expect(await refusal(elsewhere, credential('free', 'any-name'))).toBeUndefined();
  });
});
