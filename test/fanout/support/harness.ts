import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { createActivities, type BackoffSettings, type FinalEventStatus } from '../../../src/activities/index.js';
import { createFanoutStarter, type FanoutStarter } from '../../../src/consumer/start-fanout.js';
import { createRepositories, type Repositories } from '../../../src/db/repositories.js';
import type { EndpointSpec } from '../../../src/db/endpoints.js';
import { createAddressPolicy } from '../../../src/delivery/address-policy.js';
import { createSender } from '../../../src/delivery/sender.js';
import type { Send } from '../../../src/delivery/types.js';
import { createMetrics, type Metrics } from '../../../src/metrics/metrics.js';
import { createFanoutWorker } from '../../../src/worker/worker.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';

/** Short backoff so retries take milliseconds, not seconds. */
export const TEST_BACKOFF: BackoffSettings = { initialIntervalMs: 50, backoffCoefficient: 2, maximumIntervalMs: 500 };

export interface FanoutHarness {
  database: TestDatabase;
  repos: Repositories;
  metrics: Metrics;
  client: Client;
  taskQueue: string;
  worker: Worker;
  /** the consumer's starter, on this file's task queue */
  start: FanoutStarter;
  /** starts the fanout of an event (workflow id = event id) and waits for its final status */
  runFanout(eventId: string): Promise<FinalEventStatus>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/** Only errors from the SDK's own logging (it warns on every failed attempt); one Runtime per process. */
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // already installed by an earlier harness in this process
  }
}

/**
 * Everything real: a fresh Postgres database, the shared Temporal dev server, a worker on a task
 * queue of this file's own, and the real outbound sender.
 */
export async function startFanoutHarness(opts: { backoff?: BackoffSettings; send?: Send } = {}): Promise<FanoutHarness> {
  quietRuntime();
  const address = inject('temporalAddress');
  const database = await createTestDatabase();
  const repos = createRepositories(database.db);
  const metrics = createMetrics({ defaultMetrics: false });
  const sender = createSender({ addressPolicy: createAddressPolicy() });
  const taskQueue = `fanout-test-${randomUUID()}`;

  const connection = await NativeConnection.connect({ address });
  const clientConnection = await Connection.connect({ address });
  const client = new Client({ connection: clientConnection, namespace: 'default' });

  const activities = createActivities({
    repos,
    send: opts.send ?? sender.send,
    metrics,
    backoff: opts.backoff ?? TEST_BACKOFF,
  });
  const worker = await createFanoutWorker({ connection, namespace: 'default', taskQueue, activities });
  const running = worker.run();
  const start = createFanoutStarter({ client, taskQueue, metrics, events: repos.events });

  return {
    database,
    repos,
    metrics,
    client,
    taskQueue,
    worker,
    start,
    async runFanout(eventId) {
      await start(eventId);
      return client.workflow.getHandle(eventId).result() as Promise<FinalEventStatus>;
    },
    async close() {
      worker.shutdown();
      await running;
      await Promise.allSettled([clientConnection.close(), connection.close(), sender.close()]);
      await database.destroy();
    },
  };
}

/** A unique source per test, so tests of one file never route to each other's endpoints. */
export const uniqueSource = (prefix = 'src'): string => `${prefix}-${randomUUID().slice(0, 8)}`;

export async function addEndpoint(
  repos: Repositories,
  spec: Partial<EndpointSpec> & Pick<EndpointSpec, 'source' | 'url'>,
): Promise<string> {
  const row = await repos.endpoints.upsertByResourceUid(`test:${randomUUID()}`, {
    name: spec.name ?? 'endpoint',
    source: spec.source,
    eventType: spec.eventType ?? null,
    url: spec.url,
    method: spec.method ?? 'POST',
    authType: spec.authType ?? 'NONE',
    authUsername: spec.authUsername ?? null,
    authSecret: spec.authSecret ?? null,
    signingSecret: spec.signingSecret ?? null,
    previousSigningSecret: spec.previousSigningSecret ?? null,
    customHeaders: spec.customHeaders ?? {},
    maxAttempts: spec.maxAttempts ?? 3,
    timeoutSeconds: spec.timeoutSeconds ?? 5,
    retryOnStatus: spec.retryOnStatus ?? [],
    rateLimitPerSecond: spec.rateLimitPerSecond ?? null,
    maxConcurrency: spec.maxConcurrency ?? null,
    active: spec.active ?? true,
  });
  return row.id;
}

export async function addEvent(
  repos: Repositories,
  e: { source: string; eventType?: string | null; payload?: string; contentType?: string },
): Promise<string> {
  const inserted = await repos.events.insertOrGetDuplicate({
    source: e.source,
    externalEventId: randomUUID(),
    eventType: e.eventType ?? null,
    payload: Buffer.from(e.payload ?? JSON.stringify({ hello: 'world' })),
    contentType: e.contentType ?? 'application/json',
    headers: {},
  });
  return inserted.id;
}

/** The single delivery row of an event for an endpoint. */
export async function deliveryOf(repos: Repositories, eventId: string, endpointId: string) {
  const all = await repos.deliveries.listByEvent(eventId);
  const d = all.find((x) => x.endpointId === endpointId);
  if (!d) throw new Error(`no delivery for endpoint ${endpointId}`);
  return d;
}
