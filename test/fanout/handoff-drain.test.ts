import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { createSequenceJudge } from '../../src/activities/sequence-judge.js';
import { createExpressionCache } from '../../src/content/expression-cache.js';
import { createRepositories } from '../../src/db/repositories.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createDestinations } from '../../src/destinations/index.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { addEndpoint, addEvent, uniqueSource } from './support/harness.js';

// A worker that drains (SIGTERM: its stop() began) makes no new handoff: the activity that
// releases an ordered key then only wakes the next delivery's run, so the drain waits for the
// attempt in hand and not for a chain of more (docs/ordering.md, "The handoff"). Real Postgres and
// a real receiver; the release runs as the worker runs it, in an activity context.
describe('the handoff while the worker drains', () => {
  let database: TestDatabase;
  let receiver: Receiver;
  const destinations = createDestinations({ addressPolicy: createAddressPolicy({ allow: ['127.0.0.0/8'] }) });
  beforeAll(async () => {
    database = await createTestDatabase();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await destinations.close();
    await receiver.close();
    await database.destroy();
  });

  /** Two events of one key, the second's run waiting behind the first (and taking a handoff), the first delivered. */
  async function secondWaiting(): Promise<{ d1: string; d2: string }> {
    const repos = createRepositories(database.db);
    const judge = createSequenceJudge({ expressions: createExpressionCache() });
    const source = uniqueSource('drain');
    await addEndpoint(repos, { source, url: `${receiver.url}/${source}`, ordering: { key: null, onFailure: 'Block' } });
    const e1 = await addEvent(repos, { source, payload: '{"seq":1}' });
    const e2 = await addEvent(repos, { source, payload: '{"seq":2}' });
    const d1 = (await repos.deliveries.prepareRun(e1, 'run-1'))![0]!.delivery.id;
    const d2 = (await repos.deliveries.prepareRun(e2, 'run-2'))![0]!.delivery.id;
    expect(await repos.ordering.firstTurn(d1, 'run-1', judge, true)).toEqual({ turn: 'go', outOfOrder: false });
    expect(await repos.ordering.firstTurn(d2, 'run-2', judge, true)).toEqual({ turn: 'wait', behind: d1, wake: 'signal' });
    await database.db('webhook_delivery').where({ id: d1 }).update({ status: 'SUCCESS', attempts: 1 });
    return { d1, d2 };
  }

  const release = (draining: boolean, deliveryId: string) => {
    const activities = createActivities({
      repos: createRepositories(database.db),
      metrics: createMetrics({ defaultMetrics: false }),
      destinations,
      draining: () => draining,
    });
    const env = new MockActivityEnvironment(
      { attempt: 1, isLocal: true, startToCloseTimeoutMs: 180_000, workflowExecution: { workflowId: 'run-1', runId: 'r' } },
      { logger: new DefaultLogger('ERROR') },
    );
    return env.run(activities.orderingRelease, { deliveryId });
  };

  const requestsTo = (path: string) => receiver.requests.filter((r) => r.path.startsWith(path)).length;

  /** the receiver's URL of a delivery's endpoint: each test's source has a path of its own */
  const pathOf = async (deliveryId: string): Promise<string> =>
    (await database
      .db('webhook_delivery')
      .join('webhook_endpoint', 'webhook_endpoint.id', 'webhook_delivery.endpoint_id')
      .where('webhook_delivery.id', deliveryId)
      .first<{ url: string }>('webhook_endpoint.url'))!.url;

  it("running: the release makes the next delivery's attempt itself", async () => {
    const { d1, d2 } = await secondWaiting();
    const path = await pathOf(d2);
    await release(false, d1);
    expect(requestsTo(new URL(path).pathname)).toBe(1);
    expect(await database.db('webhook_delivery').where({ id: d2 }).first('status', 'ordering_handoff')).toEqual({
      status: 'SUCCESS',
      ordering_handoff: 'ended',
    });
  });

  it("draining: no claim, no request; the wake-up goes to the next delivery's run", async () => {
    const { d1, d2 } = await secondWaiting();
    const path = await pathOf(d2);
    expect(await release(true, d1)).toEqual({ wake: { workflowId: 'run-2', deliveryId: d2 } });
    expect(requestsTo(new URL(path).pathname)).toBe(0);
    expect(await database.db('webhook_delivery').where({ id: d2 }).first('status', 'ordering_handoff')).toEqual({
      status: 'PENDING',
      ordering_handoff: 'accepts',
    });
  });
});
