import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigYaml, kubectl, KubectlError, OPERATOR_NAMESPACE, OPERATOR_USER, type KubeConnection } from '../support/kube.js';
import { sharedKube } from '../support/kube-shared.js';
import { waitForBuilds } from '../support/builds.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('kube');

/**
 * The operator's identity holds exactly what deploy/rbac/*.yaml grants: the chart's RBAC, generated
 * by scripts/kube/gen-rbac.ts, applied by the shared control plane's bootstrap. The other operator
 * tests run the operator as this identity, which proves the rules suffice; this one shows they do
 * not grant more.
 */
let conn: KubeConnection;
let dir: string;
let operatorKubeconfig: string;

beforeAll(async () => {
  conn = await sharedKube();
  dir = await mkdtemp(path.join(os.tmpdir(), 'rbac-'));
  operatorKubeconfig = path.join(dir, 'kubeconfig');
  await writeFile(operatorKubeconfig, kubeconfigYaml(conn, OPERATOR_USER, conn.operatorToken, OPERATOR_NAMESPACE));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function canI(args: readonly string[]): Promise<boolean> {
  try {
    return (await kubectl(conn, ['auth', 'can-i', ...args], { kubeconfigPath: operatorKubeconfig })).trim() === 'yes';
  } catch (err) {
    if (err instanceof KubectlError || (err as { code?: number }).code === 1) return false;
    throw err;
  }
}

describe('operator RBAC (deploy/rbac)', () => {
  it('authenticates as the ServiceAccount the manifests bind', async () => {
    const who = await kubectl(conn, ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], {
      kubeconfigPath: operatorKubeconfig,
    });
    expect(who).toBe(OPERATOR_USER);
  });

  const allowed: string[][] = [
    ['list', 'webhookendpoints.webhookfanout.io', '--all-namespaces'],
    ['watch', 'inboundcredentials.webhookfanout.io', '--all-namespaces'],
    ['get', 'webhookendpoints.webhookfanout.io', '-n', 'any'],
    ['patch', 'inboundcredentials.webhookfanout.io', '-n', 'any'],
    ['patch', 'webhookendpoints.webhookfanout.io', '--subresource=status', '-n', 'any'],
    ['watch', 'webhookreplays.webhookfanout.io', '--all-namespaces'],
    ['patch', 'webhookreplays.webhookfanout.io', '--subresource=status', '-n', 'any'],
    // ttlSecondsAfterFinished
    ['delete', 'webhookreplays.webhookfanout.io', '-n', 'any'],
    ['list', 'secrets', '--all-namespaces'],
    ['watch', 'secrets', '--all-namespaces'],
    // CA bundles of spec.tls.caBundleRef kind ConfigMap
    ['list', 'configmaps', '--all-namespaces'],
    ['watch', 'configmaps', '--all-namespaces'],
    ['get', 'configmaps', '-n', 'any'],
    ['create', 'events', '-n', 'any'],
    ['patch', 'events', '-n', 'any'],
    ['create', 'leases.coordination.k8s.io', '-n', OPERATOR_NAMESPACE],
    ['update', 'leases.coordination.k8s.io', '-n', OPERATOR_NAMESPACE],
    // Namespace labels, for allowedEndpoints selectors (docs/tenancy.md)
    ['list', 'namespaces'],
    ['watch', 'namespaces'],
    ['get', 'namespaces'],
  ];
  it.each(allowed.map((a) => [a.join(' '), a] as const))('may %s', async (_name, args) => {
    expect(await canI(args)).toBe(true);
  });

  const denied: string[][] = [
    ['create', 'webhookendpoints.webhookfanout.io', '-n', 'any'],
    ['delete', 'inboundcredentials.webhookfanout.io', '-n', 'any'],
    ['update', 'webhookendpoints.webhookfanout.io', '-n', 'any'],
    // it runs what a WebhookReplay asks for, never writes one's spec
    ['create', 'webhookreplays.webhookfanout.io', '-n', 'any'],
    ['patch', 'webhookreplays.webhookfanout.io', '-n', 'any'],
    ['create', 'secrets', '-n', 'any'],
    ['patch', 'secrets', '-n', 'any'],
    ['delete', 'secrets', '-n', 'any'],
    ['create', 'configmaps', '-n', 'any'],
    ['patch', 'configmaps', '-n', 'any'],
    ['delete', 'configmaps', '-n', 'any'],
    ['create', 'leases.coordination.k8s.io', '-n', 'default'],
    ['list', 'leases.coordination.k8s.io', '-n', OPERATOR_NAMESPACE],
    ['delete', 'events', '-n', 'any'],
    ['list', 'pods', '--all-namespaces'],
    ['create', 'namespaces'],
    ['patch', 'namespaces'],
    ['delete', 'namespaces'],
    ['create', 'customresourcedefinitions.apiextensions.k8s.io'],
  ];
  it.each(denied.map((a) => [a.join(' '), a] as const))('may not %s', async (_name, args) => {
    expect(await canI(args)).toBe(false);
  });
});
