import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, OPERATOR_NAMESPACE, type KubeConnection } from '../support/kube.js';
import {
  apply,
  counter,
  createNamespace,
  customObjects,
  ready,
  settled,
  sharedKube,
  startTestOperator,
  type TestOperator,
  whenReady,
} from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { waitForBuilds } from '../support/builds.js';
import { startOperatorCli, type OperatorCli } from '../support/operator-cli.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('kube');

/** Restarts, leader election through the Lease, and the `webhook-fanout operator` process itself. */
let conn: KubeConnection;
let tdb: TestDatabase;

const resources = (prefix: string) => `apiVersion: v1
kind: Secret
metadata: {name: ${prefix}-secret}
stringData: {token: t0k3n, password: pa55}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ${prefix}-a}
spec: {source: ${prefix}, url: "http://a.example/h", auth: {type: BEARER, secretRef: {name: ${prefix}-secret, key: token}}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ${prefix}-broken}
spec: {source: ${prefix}, url: "http://b.example/h", auth: {type: HMAC, secretRef: {name: ${prefix}-missing, key: k}}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: ${prefix}-in}
spec: {source: ${prefix}, username: u, passwordSecretRef: {name: ${prefix}-secret, key: password}}
`;

async function lease(name: string): Promise<{ holderIdentity?: string; leaseTransitions?: number }> {
  const out = await kubectl(conn, ['get', 'lease', name, '-n', OPERATOR_NAMESPACE, '-o', 'json']);
  return (JSON.parse(out) as { spec: { holderIdentity?: string; leaseTransitions?: number } }).spec;
}

const readyEndpoint = (ns: string, name: string) =>
  whenReady(conn, 'WebhookEndpoint', ns, name, { timeoutMs: 30_000, what: `${ns}/${name} Ready` });

beforeAll(async () => {
  [conn, tdb] = await Promise.all([sharedKube(), createTestDatabase()]);
});
afterAll(async () => {
  await tdb?.destroy();
});

describe('restart', () => {
  it('a new operator process resumes without duplicate work: no row, status, finalizer or Event written again', async () => {
    const ns = await createNamespace(conn, 'restart');
    const first = await startTestOperator(conn, tdb.db, { namespaces: [ns] });
    await apply(conn, ns, resources('rs'));
    await readyEndpoint(ns, 'rs-a');
    await eventually(async () => ready(await customObjects(conn).get('InboundCredential', ns, 'rs-in'))?.status === 'True');
    await eventually(async () => ready(await customObjects(conn).get('WebhookEndpoint', ns, 'rs-broken'))?.reason === 'SecretNotFound');
    await settled(first);
    await first.stop();

    const snapshot = async () => ({
      rows: [
        ...(await tdb.db('webhook_endpoint').select('id', 'updated_at').where('name', 'like', `${ns}/%`).orderBy('id')),
        ...(await tdb.db('webhook_inbound_credential').select('id', 'updated_at').where('resource_name', 'like', `${ns}/%`).orderBy('id')),
      ],
      versions: await kubectl(conn, [
        'get',
        'whe,ic',
        '-n',
        ns,
        '-o',
        'jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion} {end}',
      ]),
      events: (await kubectl(conn, ['get', 'events', '-n', ns, '-o', 'jsonpath={range .items[*]}{.metadata.name}:{.count} {end}'])).trim(),
    });
    const before = await snapshot();

    const second = await startTestOperator(conn, tdb.db, { namespaces: [ns] });
    try {
      await settled(second);
      expect(await snapshot()).toEqual(before);
      // each resource reconciled once, and found in order
      expect(await counter(second.registry, 'webhook_fanout_operator_reconciles_total')).toBe(3);
      expect(await counter(second.registry, 'webhook_fanout_operator_reconciles_total', { result: 'unchanged' })).toBe(2);
      expect(await counter(second.registry, 'webhook_fanout_operator_reconciles_total', { result: 'not_ready' })).toBe(1);
      expect(await counter(second.registry, 'webhook_fanout_operator_row_writes_total')).toBe(0);
    } finally {
      await second.stop();
    }
  });
});

describe('leader election', () => {
  it('only the Lease holder reconciles; on graceful stop it releases the Lease and the standby takes over at once', async () => {
    const ns = await createNamespace(conn, 'le');
    const leaseName = `test-${randomBytes(4).toString('hex')}`;
    const le = { enabled: true, leaseName, leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 250 };
    const a = await startTestOperator(conn, tdb.db, { namespaces: [ns], identity: 'replica-a', leaderElection: le });
    await eventually(async () => a.isLeader(), { what: 'replica-a leading' });
    const b = await startTestOperator(conn, tdb.db, { namespaces: [ns], identity: 'replica-b', leaderElection: le });
    const ops: TestOperator[] = [a, b];
    try {
      await apply(conn, ns, resources('le1'));
      await readyEndpoint(ns, 'le1-a');
      expect(b.isLeader()).toBe(false);
      expect(b.controller()).toBeUndefined();
      expect(await counter(b.registry, 'webhook_fanout_operator_reconciles_total')).toBe(0);
      expect(await lease(leaseName)).toMatchObject({ holderIdentity: 'replica-a' });

      const t0 = Date.now();
      await a.stop();
      await eventually(async () => b.isLeader(), { what: 'replica-b leading' });
      expect(Date.now() - t0).toBeLessThan(le.leaseDurationMs); // released, not expired
      expect(await lease(leaseName)).toMatchObject({ holderIdentity: 'replica-b', leaseTransitions: 1 });

      await apply(conn, ns, resources('le2'));
      await readyEndpoint(ns, 'le2-a');
      await eventually(
        async () =>
          (await counter(b.registry, 'webhook_fanout_operator_reconciles_total', { kind: 'WebhookEndpoint', result: 'synced' })) > 0,
        {
          what: 'replica-b counting its reconciles',
        },
      );
      expect(await counter(b.registry, 'webhook_fanout_operator_leader_transitions_total')).toBe(1);
    } finally {
      await Promise.all(ops.map((o) => o.stop()));
    }
  });
});

describe('webhook-fanout operator (the CLI process)', () => {
  const children: OperatorCli[] = [];
  afterAll(async () => {
    for (const c of children) if (c.child.exitCode === null) c.child.kill('SIGKILL');
    await Promise.all(children.map((c) => c.stop()));
  });

  async function startCli(identity: string, ns: string, leaseName: string) {
    const cli = await startOperatorCli(conn, {
      DATABASE_URL: tdb.url,
      WATCH_NAMESPACE: ns,
      POD_NAME: identity,
      LEADER_ELECTION_LEASE_NAME: leaseName,
      LEADER_ELECTION_LEASE_DURATION_SECONDS: '3',
      LEADER_ELECTION_RENEW_DEADLINE_SECONDS: '2',
      LEADER_ELECTION_RETRY_PERIOD_SECONDS: '0.25',
    });
    children.push(cli);
    return cli;
  }

  it('serves /metrics and /readyz, fails over when the leader is killed, and releases the Lease on SIGTERM', async () => {
    const ns = await createNamespace(conn, 'cli');
    const leaseName = `cli-${randomBytes(4).toString('hex')}`;
    const one = await startCli('cli-one', ns, leaseName);
    await eventually(async () => (await lease(leaseName)).holderIdentity === 'cli-one', { timeoutMs: 20_000, what: 'cli-one leading' });
    const two = await startCli('cli-two', ns, leaseName);

    await apply(conn, ns, resources('cli1'));
    await readyEndpoint(ns, 'cli1-a');
    const ready1 = await one.get('/readyz');
    expect(ready1.status).toBe(200);
    expect(JSON.parse(ready1.text)).toMatchObject({ status: 'ready', checks: { postgres: 'ok', kubernetes: 'ok', informers: 'ok' } });
    const metrics = await eventually(
      async () => {
        const text = (await one.get('/metrics')).text;
        return /webhook_fanout_operator_reconciles_total\{kind="WebhookEndpoint",result="synced"\} [1-9]/.test(text) ? text : undefined;
      },
      { what: 'the reconcile counted on /metrics' },
    );
    expect(metrics).toMatch(/webhook_fanout_operator_leader 1/);
    expect((await two.get('/metrics')).text).toMatch(/webhook_fanout_operator_leader 0/);

    // a crash: no release, the standby waits for the lease to expire
    one.child.kill('SIGKILL');
    await one.exited;
    await eventually(async () => (await lease(leaseName)).holderIdentity === 'cli-two', { timeoutMs: 20_000, what: 'cli-two taking over' });
    await apply(conn, ns, resources('cli2'));
    await readyEndpoint(ns, 'cli2-a');

    // graceful: SIGTERM stops reconciling, releases the lease, exits 0
    two.child.kill('SIGTERM');
    expect(await two.exited).toBe(0);
    expect((await lease(leaseName)).holderIdentity ?? '').toBe('');
    expect(two.output()).toContain('released the lease');
  });
});
