import { eventually } from './wait.js';
import { randomBytes } from 'node:crypto';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { request } from 'undici';
import { inject } from 'vitest';
import type { Db } from '../../src/db/knex.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createOperatorMetrics, type OperatorMetrics } from '../../src/metrics/operator-metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { startOperator, type OperatorOptions, type RunningOperator } from '../../src/operator/operator.js';
import { API_GROUP, API_VERSION } from '../../src/custom-resources/specs.js';
import { kubeconfigYaml, kubectl, KubectlError, OPERATOR_NAMESPACE, OPERATOR_USER, type KubeConnection } from './kube.js';

/** The shared control plane of this test run (started by the first file that asks; see kube-broker.ts). */
export async function sharedKube(): Promise<KubeConnection> {
  const res = await request(`${inject('kubeBrokerUrl')}/control-plane`, { headersTimeout: 180_000, bodyTimeout: 180_000 });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`the shared Kubernetes control plane did not start: ${text}`);
  return JSON.parse(text) as KubeConnection;
}

export function adminKubeConfig(conn: KubeConnection, namespace = 'default'): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfigYaml(conn, 'admin', conn.adminToken, namespace));
  return kc;
}

/** The operator's least-privilege identity: only what deploy/rbac/*.yaml grants. */
export function operatorKubeConfig(conn: KubeConnection): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfigYaml(conn, OPERATOR_USER, conn.operatorToken, OPERATOR_NAMESPACE));
  return kc;
}

/** A fresh namespace per test file (or test), so files sharing the API server never meet. */
export async function createNamespace(conn: KubeConnection, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await kubectl(conn, ['create', 'namespace', name]);
  return name;
}

export const apply = (conn: KubeConnection, namespace: string, yaml: string): Promise<string> =>
  kubectl(conn, ['apply', '-n', namespace, '-f', '-'], { input: yaml });

/** A Secret manifest with stringData, for apply(). */
/** What kubectl said when the API server refused the manifest; fails when it was accepted. */
export async function applyRefused(conn: KubeConnection, namespace: string, yaml: string): Promise<string> {
  const err = await apply(conn, namespace, yaml).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof KubectlError)) throw new Error(`expected the API server to refuse the manifest; got ${String(err)}`, { cause: err });
  return err.stderr;
}

export const secretYaml = (name: string, data: Record<string, string>): string =>
  `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${name}\nstringData:\n${Object.entries(data)
    .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
    .join('\n')}\n`;

/** A kubernetes.io/tls Secret manifest (tls.crt, tls.key: PEM), for apply(). */
export const tlsSecretYaml = (name: string, cert: string, key: string): string =>
  secretYaml(name, { 'tls.crt': cert, 'tls.key': key }).replace('kind: Secret\n', 'kind: Secret\ntype: kubernetes.io/tls\n');

/** A ConfigMap manifest, for apply(). */
export const configMapYaml = (name: string, data: Record<string, string>): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n${Object.entries(data)
    .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
    .join('\n')}\n`;

export interface CrObject {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation: number;
    resourceVersion: string;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  spec: Record<string, unknown>;
  status?: {
    observedGeneration?: number;
    endpointId?: string;
    credentialId?: string;
    state?: string;
    signingPublicKeys?: string[];
    orderingBlockedKeys?: number;
    conditions?: {
      type: string;
      status: string;
      reason: string;
      message: string;
      observedGeneration?: number;
      lastTransitionTime: string;
    }[];
  };
}

export function customObjects(conn: KubeConnection) {
  const api = adminKubeConfig(conn).makeApiClient(CustomObjectsApi);
  const plural = (kind: 'WebhookEndpoint' | 'InboundCredential') =>
    kind === 'WebhookEndpoint' ? 'webhookendpoints' : 'inboundcredentials';
  return {
    api,
    async get(kind: 'WebhookEndpoint' | 'InboundCredential', namespace: string, name: string): Promise<CrObject | undefined> {
      try {
        return (await api.getNamespacedCustomObject({
          group: API_GROUP,
          version: API_VERSION,
          namespace,
          plural: plural(kind),
          name,
        })) as CrObject;
      } catch (err) {
        if ((err as { code?: number }).code === 404) return undefined;
        throw err;
      }
    },
    async create(
      kind: 'WebhookEndpoint' | 'InboundCredential',
      namespace: string,
      name: string,
      spec: Record<string, unknown>,
    ): Promise<CrObject> {
      return (await api.createNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: plural(kind),
        body: { apiVersion: `${API_GROUP}/${API_VERSION}`, kind, metadata: { name, namespace }, spec },
      })) as CrObject;
    },
    async delete(kind: 'WebhookEndpoint' | 'InboundCredential', namespace: string, name: string): Promise<void> {
      await api.deleteNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace, plural: plural(kind), name });
    },
  };
}

export const ready = (o: CrObject | undefined) => o?.status?.conditions?.find((c) => c.type === 'Ready');

/** The resource once the operator reconciled it: its Ready condition True. */
export const whenReady = (
  conn: KubeConnection,
  kind: 'WebhookEndpoint' | 'InboundCredential',
  namespace: string,
  name: string,
  opts: { timeoutMs?: number; what?: string } = {},
): Promise<CrObject> =>
  eventually(
    async () => {
      const o = await customObjects(conn).get(kind, namespace, name);
      return ready(o)?.status === 'True' ? o : undefined;
    },
    { what: `${name} Ready`, ...opts },
  );

export interface TestOperator extends RunningOperator {
  metrics: OperatorMetrics;
  registry: ReturnType<typeof createMetrics>['registry'];
}

/** The operator in-process, as the least-privilege ServiceAccount user, confined to the given namespaces. */
export async function startTestOperator(
  conn: KubeConnection,
  db: Db,
  opts: Partial<OperatorOptions> & { namespaces: string[] },
): Promise<TestOperator> {
  const m = createMetrics({ defaultMetrics: false });
  const metrics = createOperatorMetrics(m.registry);
  const op = await startOperator({
    kc: operatorKubeConfig(conn),
    db,
    logger: createLogger({ level: process.env.TEST_OPERATOR_LOG ?? 'silent', name: 'operator' }),
    metrics,
    workers: 2,
    resyncPeriodMs: 60_000,
    backoff: { baseDelayMs: 200, maxDelayMs: 5_000 },
    ...opts,
    leaderElection: { enabled: false, namespace: OPERATOR_NAMESPACE, ...opts.leaderElection },
  });
  return Object.assign(op, { metrics, registry: m.registry });
}

/** Resolves once the leader's controller synced and its queue is empty. */
export async function settled(op: RunningOperator, timeoutMs = 20_000): Promise<void> {
  await eventually(
    async () => {
      const c = op.controller();
      return c !== undefined && c.synced() && c.pending() === 0;
    },
    { timeoutMs, what: 'the operator to settle' },
  );
}

/** Sum of a counter's values for the given label subset. */
export async function counter(
  registry: ReturnType<typeof createMetrics>['registry'],
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want))
    .reduce((sum, v) => sum + v.value, 0);
}
