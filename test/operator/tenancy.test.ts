import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEvent, startFanoutHarness, uniqueSource, type FanoutHarness } from '../fanout/support/harness.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { kubectl, type KubeConnection } from '../support/kube.js';
import { customObjects, ready, settled, sharedKube, startTestOperator, type TestOperator } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startOperatorCli, type OperatorCli } from '../support/operator-cli.js';
import {
  credentialYaml,
  endpointNamespace,
  ENDPOINTS,
  endpointsYaml,
  namespacesYaml,
  READER_LABEL,
  type Allowed,
  type EndpointName,
  type TenancyNames,
} from '../support/tenancy-manifests.js';
import { createOperatorStore, type OperatorStore } from '../../src/operator/store.js';

/**
 * Namespaces as tenants under the operator, on a real kube-apiserver (docs/tenancy.md): a source's
 * InboundCredential says which namespaces' WebhookEndpoints may subscribe (Same by default, All, or
 * a Selector over Namespace labels); an endpoint it does not allow is Ready=False
 * NotAllowedBySource with a Warning Event, one without a credential SourceNotFound, and neither
 * gets an event (a real Temporal worker routes them). A change of the credential, of its
 * allowedEndpoints or of a namespace's labels is decided again within seconds.
 */
let conn: KubeConnection;
let tdb: TestDatabase;
let store: OperatorStore;
let op: TestOperator;
let fanout: FanoutHarness;
let receiver: Receiver;
let n: TenancyNames;

/** How soon a change must show; the operator reacts to watch events, not to its resync (60 s here). */
const WITHIN_MS = 10_000;

beforeAll(async () => {
  [conn, tdb, receiver] = await Promise.all([sharedKube(), createTestDatabase(), startReceiver()]);
  store = createOperatorStore(tdb.db);
  const suffix = randomBytes(3).toString('hex');
  n = {
    pay: `ten-pay-${suffix}`,
    orders: `ten-orders-${suffix}`,
    intruder: `ten-intruder-${suffix}`,
    source: uniqueSource('pay'),
    receiver: receiver.origin,
  };
  await kubectl(conn, ['apply', '-f', '-'], { input: namespacesYaml(n, false) });
  op = await startTestOperator(conn, tdb.db, { namespaces: [n.pay, n.orders, n.intruder] });
  await settled(op);
  fanout = await startFanoutHarness({ database: tdb });
});

afterAll(async () => {
  await fanout?.close();
  await op?.stop();
  await receiver?.close();
  await tdb?.destroy();
});

const applyYaml = (yaml: string) => kubectl(conn, ['apply', '-f', '-'], { input: yaml });
const setAllowed = (allowed: Allowed) => applyYaml(credentialYaml(n, allowed));

/** The checks of one set of names (the file's, or another test's) against the API server, the rows and the receiver. */
function tenancyOf(names: () => TenancyNames) {
  const condition = async (e: EndpointName) => ready(await customObjects(conn).get('WebhookEndpoint', endpointNamespace(names(), e), e));

  /** Waits until the endpoint's Ready condition has this reason (Synced = Ready), and returns how long that took. */
  const becomes = async (
    e: EndpointName,
    reason: 'Synced' | 'NotAllowedBySource' | 'SourceNotFound',
    since = Date.now(),
  ): Promise<number> => {
    await eventually(async () => (await condition(e))?.reason === reason, { what: `${e} to be ${reason}`, timeoutMs: 30_000 });
    return Date.now() - since;
  };

  const row = async (e: EndpointName) => {
    const cr = await customObjects(conn).get('WebhookEndpoint', endpointNamespace(names(), e), e);
    return cr ? store.endpointByUid(cr.metadata.uid) : undefined;
  };

  /** Fans one event of the source out with the real worker; which endpoints the receiver heard from. */
  const routedTo = async (): Promise<string[]> => {
    const before = receiver.requests.length;
    const eventId = await addEvent(fanout.repos, { source: names().source });
    await fanout.runFanout(eventId);
    return receiver.requests
      .slice(before)
      .filter((r) => r.headers['x-webhook-event-id'] === eventId)
      .map((r) => r.path.slice(1))
      .sort();
  };
  return { condition, becomes, row, routedTo };
}

const { condition, becomes, row, routedTo } = tenancyOf(() => n);

const warnings = async (ns: string, name: string, reason: string) =>
  (
    JSON.parse(
      await kubectl(conn, ['get', 'events', '-n', ns, '--field-selector', `involvedObject.name=${name},reason=${reason}`, '-o', 'json']),
    ) as { items: { type: string; message: string }[] }
  ).items;

describe('which endpoints a source allows', () => {
  it('endpoints created before their credential: SourceNotFound, and nothing is routed to them', async () => {
    await applyYaml(endpointsYaml(n));
    for (const e of ['own', 'orders', 'intruder'] as const) await becomes(e, 'SourceNotFound');
    expect(await condition('own')).toMatchObject({
      status: 'False',
      message: `source "${n.source}" has no InboundCredential in effect: nothing is routed to this endpoint until one is Ready`,
    });
    expect(await row('own')).toMatchObject({ namespace: n.pay, deniedReason: 'SourceNotFound' });
    expect(await routedTo()).toEqual([]);
  });

  it('the credential created after them: its own namespace becomes Ready within seconds, the others NotAllowedBySource (Same by default), with a Warning Event', async () => {
    const t0 = Date.now();
    await setAllowed('default');
    expect(await becomes('own', 'Synced', t0)).toBeLessThan(WITHIN_MS);
    await becomes('intruder', 'NotAllowedBySource');
    await becomes('orders', 'NotAllowedBySource');
    expect(await condition('intruder')).toMatchObject({
      status: 'False',
      message: expect.stringContaining(
        `InboundCredential ${n.pay}/pay of source "${n.source}" allows endpoints in its own namespace ${n.pay} only (it sets no spec.allowedEndpoints, and the installation's default is Same); this endpoint is in namespace ${n.intruder}`,
      ),
    });
    expect(await row('intruder')).toMatchObject({ namespace: n.intruder, deniedReason: 'NotAllowedBySource' });
    expect(await row('own')).toMatchObject({ namespace: n.pay, deniedReason: null });
    const events = await eventually(async () => {
      const w = await warnings(n.intruder, 'intruder', 'NotAllowedBySource');
      return w.length > 0 ? w : undefined;
    });
    expect(events[0]?.type).toBe('Warning');
    expect(await kubectl(conn, ['get', 'whe', 'intruder', '-n', n.intruder, '-o', 'wide'])).toMatch(/\sFalse\s+NotAllowedBySource\s/);
    expect(await routedTo()).toEqual(['own']);
  });

  it('from: All lets every namespace subscribe, within seconds', async () => {
    const t0 = Date.now();
    await setAllowed('All');
    expect(await becomes('intruder', 'Synced', t0)).toBeLessThan(WITHIN_MS);
    await becomes('orders', 'Synced');
    expect(await routedTo()).toEqual(['intruder', 'orders', 'own']);
  });

  it('from: Selector allows the namespaces whose labels match (not its own by itself); a label added or removed is decided again within seconds', async () => {
    let t0 = Date.now();
    await setAllowed('Selector');
    expect(await becomes('intruder', 'NotAllowedBySource', t0)).toBeLessThan(WITHIN_MS);
    await becomes('orders', 'NotAllowedBySource');
    await becomes('own', 'NotAllowedBySource');
    expect((await condition('orders'))?.message).toMatch(
      new RegExp(
        `namespaces its selector matches \\(spec\\.allowedEndpoints\\.namespaces\\.from: Selector\\); the labels of namespace ${n.orders} do not match`,
      ),
    );
    expect(await routedTo()).toEqual([]);

    t0 = Date.now();
    await kubectl(conn, ['label', 'namespace', n.orders, `${READER_LABEL}=true`]);
    expect(await becomes('orders', 'Synced', t0)).toBeLessThan(WITHIN_MS);
    expect(await routedTo()).toEqual(['orders']);

    t0 = Date.now();
    await kubectl(conn, ['label', 'namespace', n.orders, `${READER_LABEL}-`]);
    expect(await becomes('orders', 'NotAllowedBySource', t0)).toBeLessThan(WITHIN_MS);
    expect(await routedTo()).toEqual([]);
  });

  it('revocation: a delivery in retry to an endpoint that stops being allowed ends FAILED at its next attempt, naming the revocation; nothing more is sent', async () => {
    await setAllowed('All');
    await becomes('intruder', 'Synced');
    // the intruder's receiver fails, so its delivery keeps retrying (50 attempts, up to 0.5 s apart)
    await kubectl(conn, ['patch', 'whe', 'intruder', '-n', n.intruder, '--type=merge', '-p', '{"spec":{"maxAttempts":50}}']);
    await eventually(async () => (await row('intruder'))?.maxAttempts === 50, { what: 'maxAttempts 50 in the row' });
    receiver.setScript((_n, req) => (req.path === '/intruder' ? { status: 503, body: 'busy' } : { status: 200 }));
    const eventId = await addEvent(fanout.repos, { source: n.source });
    const heard = () => receiver.requests.filter((r) => r.path === '/intruder' && r.headers['x-webhook-event-id'] === eventId).length;
    const outcome = fanout.runFanout(eventId);
    await eventually(async () => heard() >= 2, { what: 'the delivery in retry' });

    await setAllowed('Same');
    await eventually(async () => (await row('intruder'))?.deniedReason === 'NotAllowedBySource', { what: 'the revocation in the row' });
    const heardWhenRevoked = heard();
    expect(await outcome).toBe('PARTIAL');
    const intruderId = (await row('intruder'))!.id;
    const delivery = (await fanout.repos.deliveries.listByEvent(eventId)).find((d) => d.endpointId === intruderId);
    expect(delivery).toMatchObject({ status: 'FAILED', lastError: 'revoked: endpoint not allowed by its source (NotAllowedBySource)' });
    // at most the attempt already on its way when the row changed reached the receiver
    expect(heard()).toBeLessThanOrEqual(heardWhenRevoked + 1);
    const attempts = await tdb.db('webhook_delivery_attempt').where({ delivery_id: delivery!.id }).orderBy('attempt');
    expect(attempts.at(-1)).toMatchObject({ outcome: 'FAILED', duration_ms: null, error: delivery!.lastError });
    expect(attempts.length).toBe(heard() + 1);
    receiver.setScript([{ status: 200 }]);
  });

  it('a deleted credential leaves its endpoints SourceNotFound within seconds', async () => {
    await setAllowed('All');
    await becomes('intruder', 'Synced');
    const t0 = Date.now();
    await kubectl(conn, ['delete', 'inboundcredential', 'pay', '-n', n.pay, '--wait=true']);
    expect(await becomes('own', 'SourceNotFound', t0)).toBeLessThan(WITHIN_MS);
    await becomes('intruder', 'SourceNotFound');
    expect(await routedTo()).toEqual([]);
  });
});

describe("TENANCY_DEFAULT_ALLOWED_NAMESPACES=All (the chart's tenancy.defaultAllowedNamespaces: All), in the operator's own process", () => {
  // a second operator, the CLI process configured by its environment as the chart's Deployment
  // is, over namespaces of its own (the file's operator keeps the default Same over the others)
  let cli: OperatorCli | undefined;
  let m: TenancyNames;
  const all = tenancyOf(() => m);

  beforeAll(async () => {
    const suffix = randomBytes(3).toString('hex');
    m = {
      pay: `all-pay-${suffix}`,
      orders: `all-orders-${suffix}`,
      intruder: `all-intruder-${suffix}`,
      source: uniqueSource('payall'),
      receiver: receiver.origin,
    };
    await applyYaml(namespacesYaml(m, false));
    cli = await startOperatorCli(conn, {
      DATABASE_URL: tdb.url,
      WATCH_NAMESPACE: [m.pay, m.orders, m.intruder].join(','),
      LEADER_ELECTION: 'false',
      TENANCY_DEFAULT_ALLOWED_NAMESPACES: 'All',
    });
  });

  afterAll(async () => {
    await cli?.stop();
  });

  it('a credential without allowedEndpoints lets the endpoints of every namespace subscribe: Ready, and each receives the deliveries', async () => {
    await applyYaml(credentialYaml(m, 'default'));
    await applyYaml(endpointsYaml(m));
    await eventually(async () => ready(await customObjects(conn).get('InboundCredential', m.pay, 'pay'))?.status === 'True', {
      what: 'the credential Ready',
      timeoutMs: 30_000,
    });
    for (const e of ENDPOINTS) await all.becomes(e, 'Synced');
    for (const e of ENDPOINTS) expect(await all.condition(e)).toMatchObject({ status: 'True' });
    expect(await all.row('intruder')).toMatchObject({ namespace: m.intruder, deniedReason: null });
    expect(await all.routedTo()).toEqual(['intruder', 'orders', 'own']);
  });

  it('a credential that says from: Same still refuses the other namespaces: NotAllowedBySource, and they receive nothing', async () => {
    await applyYaml(credentialYaml(m, 'Same'));
    await applyYaml(endpointsYaml(m));
    await all.becomes('intruder', 'NotAllowedBySource');
    await all.becomes('orders', 'NotAllowedBySource');
    await all.becomes('own', 'Synced');
    expect(await all.condition('intruder')).toMatchObject({
      status: 'False',
      message: `InboundCredential ${m.pay}/pay of source "${m.source}" allows endpoints in its own namespace ${m.pay} only (spec.allowedEndpoints.namespaces.from: Same); this endpoint is in namespace ${m.intruder}: nothing is routed to this endpoint`,
    });
    expect(await all.row('intruder')).toMatchObject({ namespace: m.intruder, deniedReason: 'NotAllowedBySource' });
    expect(await all.routedTo()).toEqual(['own']);
  });
});
