import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedriver, type Redriver } from '../../src/temporal/redriver.js';
import { createRedriveQueries } from '../../src/db/redrive-queries.js';
import { createLogger } from '../../src/observability/logger.js';
import { type OperatorStore } from '../../src/operator/store.js';
import { addEvent, deliveryOf, startFanoutHarness, type FanoutHarness } from '../fanout/support/harness.js';
import { type TestDatabase } from '../support/db.js';
import type { KubeConnection } from '../support/kube.js';
import { kubectl } from '../support/kube.js';
import { apply, customObjects, ready, settled, type TestOperator, whenReady } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { ownSource, startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

/**
 * Endpoint health under the operator, against a real kube-apiserver: deliveries by a real Temporal
 * worker to a real receiver disable the endpoint in Postgres; the operator notices (health poll)
 * and shows it (Ready=False AutoDisabled, a Warning Event, status.state in `kubectl get whe`); a
 * new value of the annotation webhookfanout.io/enable enables it and the held deliveries reach the
 * receiver once each, oldest first.
 */
let conn: KubeConnection;
let tdb: TestDatabase;
let store: OperatorStore;
let ns: string;
let op: TestOperator;
let fanout: FanoutHarness;
let redriver: Redriver;
let receiver: Receiver;
let scene: OperatorScene;

beforeAll(async () => {
  [scene, receiver] = await Promise.all([
    startOperatorScene('health', { operator: { healthPollMs: 200 } }),
    startReceiver([{ status: 500, body: 'down' }]),
  ]);
  ({ conn, tdb, store, ns, op } = scene);
  // the endpoints' sources, owned in their namespace (docs/tenancy.md)
  for (const name of ['plain', 'orders', 'ordered']) await ownSource(store.repos, `health-${name}`, ns);
  fanout = await startFanoutHarness({ database: tdb });
  redriver = createRedriver({
    queries: createRedriveQueries(tdb.db),
    client: fanout.client,
    taskQueue: fanout.taskQueue,
    metrics: fanout.metrics,
    logger: createLogger({ level: 'silent' }),
    intervalMs: 100,
  });
  redriver.start();
});

afterAll(async () => {
  await redriver?.stop();
  await fanout?.close();
  await receiver?.close();
  await scene?.close();
});

const endpointYaml = (name: string, url: string, autoDisable: string) => `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: ${name}
spec:
  source: health-${name}
  url: ${url}
  maxAttempts: 1
  ${autoDisable}
`;

const warnings = async (name: string, reason: string) =>
  JSON.parse(
    await kubectl(conn, ['get', 'events', '-n', ns, '--field-selector', `involvedObject.name=${name},reason=${reason}`, '-o', 'json']),
  ) as { items: { type: string; message: string }[] };

describe('WebhookEndpoint autoDisable', () => {
  it('the CRD refuses an autoDisable without a threshold, or a negative one; the row carries the threshold (absent: 0 = never)', async () => {
    await expect(apply(conn, ns, endpointYaml('bad', 'http://127.0.0.1:9/x', 'autoDisable: {}'))).rejects.toThrow(
      /autoDisable.afterConsecutiveFailures is required/,
    );
    await expect(
      apply(conn, ns, endpointYaml('bad', 'http://127.0.0.1:9/x', 'autoDisable: {afterConsecutiveFailures: -1}')),
    ).rejects.toThrow(/afterConsecutiveFailures.*(greater than or equal to 0|should be >= 0)/);
    await apply(conn, ns, endpointYaml('plain', 'http://127.0.0.1:9/x', ''));
    const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'plain');
    expect(cr.status?.state).toBe('ACTIVE');
    expect(await store.endpointByUid(cr.metadata.uid)).toMatchObject({ autoDisableAfter: 0, disabledAt: null });
  });

  it('disabled after N FAILED deliveries: Ready=False AutoDisabled, a Warning Event, DISABLED in kubectl get; a new annotation value enables it and redrives each missed event once, oldest first', async () => {
    await apply(conn, ns, endpointYaml('orders', receiver.url, 'autoDisable: {afterConsecutiveFailures: 2}'));
    const crs = customObjects(conn);
    const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'orders');
    const row = await store.endpointByUid(cr.metadata.uid);
    expect(row).toMatchObject({ autoDisableAfter: 2 });
    const endpointId = row!.id;
    expect(await kubectl(conn, ['get', 'whe', 'orders', '-n', ns])).toMatch(
      // an endpoint that is not ordered shows no blocked keys (an empty cell)
      /NAME\s+SOURCE\s+EVENT TYPE\s+URL\s+STATE\s+BLOCKED KEYS\s+READY\s+AGE\s+orders\s+health-orders\s+\S+\s+ACTIVE\s+True/,
    );

    for (let i = 0; i < 2; i++) expect(await fanout.runFanout(await addEvent(fanout.repos, { source: 'health-orders' }))).toBe('FAILED');
    expect(receiver.requests).toHaveLength(2);

    const disabled = await eventually(
      async () => {
        const o = await crs.get('WebhookEndpoint', ns, 'orders');
        return ready(o)?.reason === 'AutoDisabled' ? o : undefined;
      },
      { what: 'Ready=False AutoDisabled' },
    );
    expect(ready(disabled)).toMatchObject({ status: 'False', reason: 'AutoDisabled' });
    expect(ready(disabled)?.message).toMatch(/2 deliveries in a row ended FAILED.*webhookfanout\.io\/enable/);
    expect(disabled.status?.state).toBe('DISABLED');
    expect(await kubectl(conn, ['get', 'whe', 'orders', '-n', ns, '-o', 'wide'])).toMatch(
      /orders\s+health-orders\s+http\S+\s+true\s+DISABLED\s+False\s+AutoDisabled/,
    );
    const events = await eventually(
      async () => {
        const e = await warnings('orders', 'AutoDisabled');
        return e.items.length > 0 ? e.items : undefined;
      },
      { what: 'the AutoDisabled Event' },
    );
    expect(events[0]?.type).toBe('Warning');

    // missed while disabled: failed at once, nothing reaches the receiver
    const missed: string[] = [];
    for (let i = 0; i < 3; i++) {
      const eventId = await addEvent(fanout.repos, { source: 'health-orders' });
      missed.push(eventId);
      expect(await fanout.runFanout(eventId)).toBe('FAILED');
      expect((await deliveryOf(fanout.repos, eventId, endpointId)).lastError).toBe('endpoint disabled');
    }
    expect(receiver.requests).toHaveLength(2);

    receiver.setScript([{ status: 200, body: 'ok' }]);
    await kubectl(conn, ['annotate', 'whe', 'orders', '-n', ns, 'webhookfanout.io/enable=first']);
    await eventually(
      async () => {
        const o = await crs.get('WebhookEndpoint', ns, 'orders');
        return ready(o)?.status === 'True' && o?.status?.state === 'ACTIVE' ? o : undefined;
      },
      { what: 'Ready again' },
    );
    await eventually(async () => receiver.requests.length >= 5, { what: 'the missed deliveries' });
    await eventually(async () => (await deliveryOf(fanout.repos, missed[2]!, endpointId)).status === 'SUCCESS', {
      what: 'the last redrive settled',
    });
    expect(receiver.requests.slice(2).map((r) => r.headers['x-webhook-event-id'])).toEqual(missed);
    const enabledEvents = await eventually(
      async () => {
        const e = await warnings('orders', 'Enabled');
        return e.items.length > 0 ? e.items : undefined;
      },
      { what: 'the Enabled Event' },
    );
    expect(enabledEvents[0]?.type).toBe('Normal');

    // the same value again does nothing; after another disable only a new value enables
    receiver.setScript([{ status: 500 }]);
    for (let i = 0; i < 2; i++) await fanout.runFanout(await addEvent(fanout.repos, { source: 'health-orders' }));
    await eventually(async () => ready(await crs.get('WebhookEndpoint', ns, 'orders'))?.reason === 'AutoDisabled', {
      what: 'disabled again',
    });
    await kubectl(conn, ['annotate', '--overwrite', 'whe', 'orders', '-n', ns, 'webhookfanout.io/enable=first']);
    await op.controller()?.resync(); // every resource reconciled again: the value acted on is not acted on twice
    await settled(op);
    expect((await store.endpointByUid(cr.metadata.uid))?.disabledAt).not.toBeNull();
    await kubectl(conn, ['annotate', '--overwrite', 'whe', 'orders', '-n', ns, 'webhookfanout.io/enable=second']);
    await eventually(async () => (await store.endpointByUid(cr.metadata.uid))?.disabledAt === null, { what: 'enabled by the new value' });
    expect(receiver.requests).toHaveLength(7);
  });
});

describe('WebhookEndpoint spec.ordering', () => {
  it('shows how many keys are blocked: status.orderingBlockedKeys and the BLOCKED KEYS column, down again as they are skipped', async () => {
    const target = await startReceiver([{ status: 422, body: 'refused' }]);
    try {
      await apply(
        conn,
        ns,
        `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: ordered
spec:
  source: health-ordered
  url: ${target.url}
  maxAttempts: 1
  ordering:
    key: event.data.key
`,
      );
      const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'ordered');
      expect(cr.status?.orderingBlockedKeys).toBe(0);
      const endpointId = (await store.endpointByUid(cr.metadata.uid))!.id;
      // keys a and b each refused (a 4xx, final): each holds its key under Block
      const events: string[] = [];
      for (const key of ['a', 'b']) {
        const eventId = await addEvent(fanout.repos, { source: 'health-ordered', payload: JSON.stringify({ key }) });
        events.push(eventId);
        expect(await fanout.runFanout(eventId)).toBe('FAILED');
      }
      const crs = customObjects(conn);
      const blockedIs = (n: number) =>
        eventually(async () => (await crs.get('WebhookEndpoint', ns, 'ordered'))?.status?.orderingBlockedKeys === n, {
          what: `status.orderingBlockedKeys ${n}`,
        });
      await blockedIs(2);
      expect(await kubectl(conn, ['get', 'whe', 'ordered', '-n', ns])).toMatch(
        /STATE\s+BLOCKED KEYS\s+READY\s+AGE\s+ordered\s+health-ordered\s+\S+\s+ACTIVE\s+2\s+True/,
      );
      for (const [i, eventId] of events.entries()) {
        expect(await fanout.repos.ordering.skip((await deliveryOf(fanout.repos, eventId, endpointId)).id)).not.toBe('not_skippable');
        await blockedIs(1 - i);
      }
      expect(await kubectl(conn, ['get', 'whe', 'ordered', '-n', ns])).toMatch(/ordered\s+health-ordered\s+\S+\s+ACTIVE\s+0\s+True/);
    } finally {
      await target.close();
    }
  });
});
