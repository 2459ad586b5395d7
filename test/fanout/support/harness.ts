import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import type { FinishedEventStatus } from '../../../src/activities/index.js';
import type { DeliveryProxyConfig } from '../../../src/config/delivery-proxy.js';
import type { BackoffSettings } from '../../../src/config/settings.js';
import { createFanoutStarter, type FanoutStarter } from '../../../src/temporal/fanout-starter.js';
import { createRedriver } from '../../../src/temporal/redriver.js';
import { createOrderingWaker, type OrderingWaker } from '../../../src/temporal/ordering-waker.js';
import { createRedriveQueries } from '../../../src/db/redrive-queries.js';
import { createRepositories, type Repositories } from '../../../src/db/repositories.js';
import type { EndpointSpec } from '../../../src/db/endpoints.js';
import { createMetrics, type Metrics } from '../../../src/metrics/metrics.js';
import { createLogger } from '../../../src/observability/logger.js';
import { buildWorkerProcess, type WorkerDeps } from '../../../src/processes/worker-process.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { eventually } from '../../support/wait.js';

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
  runFanout(eventId: string): Promise<FinishedEventStatus>;
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
 * Everything real: a fresh Postgres database, the shared Temporal dev server, and the worker
 * process as cmd/worker.ts builds and starts it (real outbound sender), on a task queue of this
 * file's own.
 */
export async function startFanoutHarness(
  opts: {
    backoff?: BackoffSettings;
    /** shared with another harness (e.g. an operator's); not destroyed by close() */ database?: TestDatabase;
    /** WORKER_SANDBOX_DIAGNOSTICS (default off, as in production) */
    sandboxDiagnostics?: boolean;
    /** the AWS destinations' base credentials (an IAM user of moto's); absent: the SDK's default chain */
    awsCredentials?: WorkerDeps['awsCredentials'];
    /** DELIVERY_PROXY_*: the forward proxy HTTP deliveries go through (default none) */
    deliveryProxy?: DeliveryProxyConfig;
  } = {},
): Promise<FanoutHarness> {
  quietRuntime();
  const address = inject('temporalAddress');
  const database = opts.database ?? (await createTestDatabase());
  const repos = createRepositories(database.db);
  const metrics = createMetrics({ defaultMetrics: false });
  const taskQueue = `fanout-test-${randomUUID()}`;

  const connection = await NativeConnection.connect({ address });
  const clientConnection = await Connection.connect({ address });
  const client = new Client({ connection: clientConnection, namespace: 'default' });

  const built = await buildWorkerProcess({
    settings: {
      temporal: { namespace: 'default', taskQueue },
      backoff: opts.backoff ?? TEST_BACKOFF,
      outboundDenyCidrs: [],
      outboundAllowCidrs: [],
      maxConcurrentActivities: 100,
      sandboxDiagnostics: opts.sandboxDiagnostics ?? false,
      ...(opts.deliveryProxy ? { deliveryProxy: opts.deliveryProxy } : {}),
    },
    connection,
    repos,
    metrics,
    logger: createLogger({ level: 'silent' }),
    ...(opts.awsCredentials ? { awsCredentials: opts.awsCredentials } : {}),
  });
  const worker = built.start();
  const start = createFanoutStarter({ client, taskQueue, metrics, events: repos.events });

  return {
    database,
    repos,
    metrics,
    client,
    taskQueue,
    worker: built.worker,
    start,
    async runFanout(eventId) {
      await start(eventId);
      const status = (await client.workflow.getHandle(eventId).result()) as FinishedEventStatus;
      // RECEIVED: the run left an ordered delivery to its key's chain, whose end finishes the event
      return status === 'RECEIVED' ? ((await finishedEvents({ client, database }, [eventId]))[0] as FinishedEventStatus) : status;
    },
    async close() {
      await worker.stop();
      await Promise.allSettled([clientConnection.close(), connection.close()]);
      if (!opts.database) await database.destroy();
    },
  };
}

/** A unique source per test, so tests of one file never route to each other's endpoints. */
export const uniqueSource = (prefix = 'src'): string => `${prefix}-${randomUUID().slice(0, 8)}`;

export async function addEndpoint(
  repos: Repositories,
  spec: Partial<EndpointSpec> & Pick<EndpointSpec, 'source' | 'url'>,
): Promise<string> {
  const row = await repos.endpoints.upsertByResourceUid(`test:${randomUUID()}`, endpointSpec(spec));
  return row.id;
}

/** A whole endpoint spec: what `spec` says, the tests' defaults for the rest. */
export function endpointSpec(spec: Partial<EndpointSpec> & Pick<EndpointSpec, 'source' | 'url'>): EndpointSpec {
  return {
    name: spec.name ?? 'endpoint',
    source: spec.source,
    eventType: spec.eventType ?? null,
    url: spec.url,
    method: spec.method ?? 'POST',
    authType: spec.authType ?? 'NONE',
    authUsername: spec.authUsername ?? null,
    authSecret: spec.authSecret ?? null,
    ...(spec.authOAuth2 ? { authOAuth2: spec.authOAuth2 } : {}),
    signingType: spec.signingType ?? 'NONE',
    signingPublicKeys: spec.signingPublicKeys ?? [],
    signingSecret: spec.signingSecret ?? null,
    previousSigningSecret: spec.previousSigningSecret ?? null,
    customHeaders: spec.customHeaders ?? {},
    maxAttempts: spec.maxAttempts ?? 3,
    timeoutSeconds: spec.timeoutSeconds ?? 5,
    retryOnStatus: spec.retryOnStatus ?? [],
    rateLimitPerSecond: spec.rateLimitPerSecond ?? null,
    maxConcurrency: spec.maxConcurrency ?? null,
    active: spec.active ?? true,
    autoDisableAfter: spec.autoDisableAfter ?? 0,
    filter: spec.filter ?? null,
    transform: spec.transform ?? null,
    ordering: spec.ordering ?? null,
    namespace: spec.namespace ?? null,
    format: spec.format ?? 'Raw',
    deniedReason: spec.deniedReason ?? null,
    ...(spec.destination ? { destination: spec.destination } : {}),
    ...(spec.destinationSecrets ? { destinationSecrets: spec.destinationSecrets } : {}),
    proxyDirect: spec.proxyDirect ?? false,
  };
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
/**
 * The event's delivery to the endpoint, once its run's prepare has put it in place: a run started
 * beside others may be prepared after an earlier event has already finished (an ordered delivery's
 * run ends after prepare), so the row is waited for (up to 20 s) rather than read once.
 */
export async function deliveryOf(repos: Repositories, eventId: string, endpointId: string) {
  return eventually(async () => (await repos.deliveries.listByEvent(eventId)).find((x) => x.endpointId === endpointId), {
    timeoutMs: 20_000,
    intervalMs: 50,
    what: `the delivery of event ${eventId} for endpoint ${endpointId}`,
  });
}

/** One event with one endpoint on `url`, prepared by `prepare` (attempt 1): its ids. */
export async function preparedDelivery(
  deps: {
    repos: Repositories;
    prepare: (attempt: number, input: { eventId: string }) => Promise<{ deliveries: Array<{ deliveryId: string }> }>;
    url: string;
  },
  opts: { maxAttempts?: number } = {},
): Promise<{ eventId: string; endpointId: string; deliveryId: string }> {
  const source = uniqueSource();
  const endpointId = await addEndpoint(deps.repos, { source, url: deps.url, maxAttempts: opts.maxAttempts ?? 5 });
  const eventId = await addEvent(deps.repos, { source });
  const plan = await deps.prepare(1, { eventId });
  const d = plan.deliveries[0];
  if (!d) throw new Error('nothing prepared');
  return { eventId, endpointId, deliveryId: d.deliveryId };
}

/** Runs `fn` while the consumer's redriver (an enabled endpoint's held deliveries) runs on the harness, every 100 ms. */
export async function whileRedriving<T>(h: FanoutHarness, fn: () => Promise<T>): Promise<T> {
  const redriver = createRedriver({
    queries: createRedriveQueries(h.database.db),
    client: h.client,
    taskQueue: h.taskQueue,
    metrics: h.metrics,
    logger: createLogger({ level: 'silent' }),
    intervalMs: 100,
  });
  redriver.start();
  try {
    return await fn();
  } finally {
    await redriver.stop();
  }
}

/** The consumer's ordering waker on the harness (its defaults, or a stalled age of its own: 0 wakes at once). */
export function orderingWakerOf(h: FanoutHarness, stalledAfterSeconds?: number): OrderingWaker {
  return createOrderingWaker({
    repos: h.repos,
    client: h.client,
    taskQueue: h.taskQueue,
    metrics: h.metrics,
    logger: createLogger({ level: 'silent' }),
    ...(stalledAfterSeconds === undefined ? {} : { stalledAfterSeconds }),
  });
}

/**
 * The events' statuses once every one is finished: their runs ended (200 result polls at a time:
 * the dev server refuses more than its namespace's concurrent pollers, 2 000), then each event's
 * status in Postgres is final. An ordered delivery left to its key's chain ends after its event's
 * run (docs/ordering.md), and whoever ends an event's last delivery finishes the event.
 */
export async function finishedEvents(
  h: Pick<FanoutHarness, 'client' | 'database'>,
  ids: readonly string[],
  timeoutMs = 120_000,
): Promise<string[]> {
  for (let i = 0; i < ids.length; i += 200) await Promise.all(ids.slice(i, i + 200).map((id) => h.client.workflow.getHandle(id).result()));
  return eventually(
    async () => {
      const rows: Array<{ id: string; status: string }> = await h.database.db('webhook_event').whereIn('id', ids).select('id', 'status');
      const status = new Map(rows.map((r) => [r.id, r.status]));
      const statuses = ids.map((id) => status.get(id) ?? 'missing');
      return statuses.every((st) => st !== 'RECEIVED') && statuses;
    },
    { timeoutMs, intervalMs: 200, what: 'every event finished (none RECEIVED)' },
  );
}
