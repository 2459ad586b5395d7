import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/db/knex.js';
import { migrateLatest } from '../../src/db/migrate.js';
import { createRepositories } from '../../src/db/repositories.js';
import { startEmbeddedPostgres, type LocalPostgres } from '../../src/dev/embedded-postgres.js';
import { freePort } from '../../src/dev/ports.js';
import { startTemporalDevServer, type TemporalDevServer } from '../../src/dev/temporal-dev-server.js';
import { createAwsClients, type AwsClients } from '../../src/transport/aws-clients.js';
import { ensureTopology } from '../../src/transport/topology.js';
import { addEndpoint } from '../fanout/support/harness.js';
import { basic } from '../support/http.js';
import { addCredential } from '../support/ingest-harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { sleep } from '../support/wait.js';
import { startFauxqsProcess, type Backend } from '../transport/backends.js';
import { commonEnv, launch, log, sigkill, startAll, timeToReady, type Proc } from './processes.js';

/**
 * Operational events (docs/operations-events.md) across crashes between the change and the
 * publish: every delivery to a receiver that always fails ends FAILED, and each FAILED records its
 * delivery.failed in the statement that settles it, unpublished, for ingest's sweeper to publish.
 * The worker (the writer of the change) and ingest (the publisher) are SIGKILLed while events flow,
 * ingest also kept down for a while so that rows wait unpublished. Then every FAILED delivery has
 * exactly one delivery.failed event (none lost, none twice for one change), each published, fanned
 * out once (one workflow) and delivered to the subscriber.
 */

const EVENTS = Number(process.env.FAULTS_OPS_EVENTS ?? 40);
const SETTLE_WITHIN_MS = 60_000;

describe('operational events across crashes between the change and the publish', () => {
  const suffix = randomUUID().slice(0, 8);
  let pg: LocalPostgres;
  const pgDir = `/tmp/webhook-fanout-faults-ops-pg-${suffix}`;
  let temporal: TemporalDevServer;
  let sqs: Backend;
  let aws: AwsClients;
  let db: Db;
  let failing: Receiver;
  let subscriber: Receiver;
  const procs: Record<string, Proc> = {};
  let ingestUrl: string;
  const taskQueue = `faults-ops-${suffix}`;

  beforeAll(async () => {
    const pgPort = await freePort();
    pg = await startEmbeddedPostgres({ port: pgPort, dataDir: pgDir, persistent: true });
    const [t, q] = await Promise.allSettled([
      startTemporalDevServer({ port: await freePort(), dbFile: `/tmp/webhook-fanout-faults-ops-temporal-${suffix}.db` }),
      startFauxqsProcess({ port: await freePort() }),
    ]);
    if (t.status === 'fulfilled') temporal = t.value;
    if (q.status === 'fulfilled') sqs = q.value;
    if (t.status === 'rejected') throw t.reason;
    if (q.status === 'rejected') throw q.reason;
    const admin = createDb({ url: pg.url });
    await admin.raw('create database faults_ops');
    await admin.destroy();
    const dbUrl = pg.url.replace(/\/postgres$/, '/faults_ops');
    db = createDb({ url: dbUrl, poolMax: 4 });
    await migrateLatest(db);
    const repos = createRepositories(db);
    await addCredential(repos, 'shop', 'u', 'p4ss');
    [failing, subscriber] = await Promise.all([startReceiver([{ status: 500 }]), startReceiver()]);
    await addEndpoint(repos, { source: 'shop', url: failing.url, name: 'payments/ledger', namespace: 'payments', maxAttempts: 1 });
    await addEndpoint(repos, {
      source: 'webhook-fanout',
      url: subscriber.url,
      name: 'payments/ops',
      namespace: 'payments',
      maxAttempts: 10,
    });
    aws = createAwsClients({ region: 'us-east-1', endpoint: sqs.endpoint });
    const topology = await ensureTopology(aws, {
      topicName: `t-${suffix}`,
      queueName: `q-${suffix}`,
      dlqName: `dlq-${suffix}`,
      visibilityTimeoutSeconds: 5,
    });
    const common = commonEnv({ dbUrl: dbUrl, temporalAddress: temporal.address, taskQueue, awsEndpoint: sqs.endpoint });
    const ingestPort = await freePort();
    ingestUrl = `http://127.0.0.1:${ingestPort}`;
    const defs: Array<[string, string, Record<string, string>]> = [
      [
        'ingest',
        'ingest',
        { ...common, PORT: String(ingestPort), HOST: '127.0.0.1', TOPIC_ARN: topology.topicArn, ADMIN_API_ENABLED: 'false' },
      ],
      ['consumer', 'consumer', { ...common, QUEUE_URL: topology.queueUrl, QUEUE_VISIBILITY_TIMEOUT_SECONDS: '5' }],
      [
        'worker',
        'worker',
        { ...common, DELIVERY_BACKOFF_INITIAL_MS: '200', DELIVERY_BACKOFF_MAX_MS: '2000', OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8' },
      ],
    ];
    await startAll(procs, defs);
  });

  afterAll(async () => {
    for (const p of Object.values(procs)) await sigkill(p).catch(() => {});
    await Promise.all([failing, subscriber].map((r) => r?.close()));
    aws?.sns.destroy();
    aws?.sqs.destroy();
    await db?.destroy();
    await Promise.allSettled([temporal?.stop(), pg?.stop(), sqs?.stop()]);
  });

  it('every FAILED delivery has one delivery.failed, published, fanned out once and delivered', async () => {
    const accepted: string[] = [];
    const send = async (n: number): Promise<void> => {
      for (let attempt = 1; ; attempt++) {
        try {
          const res = await fetch(`${ingestUrl}/api/webhooks/shop`, {
            method: 'POST',
            headers: { authorization: basic('u', 'p4ss'), 'content-type': 'application/json' },
            body: JSON.stringify({ id: `inv-${n}`, type: 'invoice.paid' }),
            signal: AbortSignal.timeout(10_000),
          });
          if (res.status === 200) {
            accepted.push(((await res.json()) as { eventId: string }).eventId);
            return;
          }
          await res.arrayBuffer();
        } catch {
          // ingest is down: a sender retries
        }
        await sleep(Math.min(200 * attempt, 2_000));
      }
    };
    const sending = (async () => {
      for (let n = 0; n < EVENTS; n++) {
        await send(n);
        await sleep(100);
      }
    })();

    await sleep(1_000);
    log('ops: SIGKILL the worker while it settles failures (the change and its event commit together)');
    await sigkill(procs.worker!);
    await sleep(500);
    launch(procs.worker!);
    await sleep(1_500);
    log('ops: SIGKILL ingest, the publisher, and keep it down: delivery.failed rows wait unpublished');
    await sigkill(procs.ingest!);
    await sleep(5_000);
    const waiting = await db('webhook_event')
      .where({ source: 'webhook-fanout' })
      .whereNull('published_at')
      .count<{ n: string }[]>('* as n');
    log(`ops: ${waiting[0]?.n ?? 0} operational events waiting unpublished while ingest is down`);
    launch(procs.ingest!);
    await timeToReady(procs.ingest!);
    log('ops: SIGKILL the worker and ingest once more');
    await sigkill(procs.worker!);
    await sigkill(procs.ingest!);
    launch(procs.worker!);
    launch(procs.ingest!);
    await Promise.all([timeToReady(procs.worker!), timeToReady(procs.ingest!)]);
    await sending;
    const lastFault = Date.now();
    expect(accepted).toHaveLength(EVENTS);

    // the third party's deliveries all end FAILED (the receiver always answers 500) ...
    type Row = { id: string; attempts: number; status: string };
    let failed: Row[] = [];
    let ops: Array<{ id: string; external_event_id: string; status: string }> = [];
    while (Date.now() - lastFault < SETTLE_WITHIN_MS) {
      failed = await db('webhook_delivery').whereIn('event_id', accepted).select('id', 'attempts', 'status');
      ops = await db('webhook_event')
        .where({ source: 'webhook-fanout', event_type: 'delivery.failed' })
        .select('id', 'external_event_id', 'status');
      const settled = ops.filter((o) => o.status !== 'RECEIVED').length;
      if (failed.length === EVENTS && failed.every((d) => d.status === 'FAILED') && ops.length === EVENTS && settled === EVENTS) break;
      await sleep(1_000);
    }
    log(`ops: ${failed.length} deliveries, ${ops.length} delivery.failed events, ${Date.now() - lastFault} ms after the last fault`);
    expect(failed.map((d) => d.status)).toEqual(Array.from({ length: EVENTS }, () => 'FAILED'));
    // ... and each has exactly one delivery.failed, keyed by the delivery and its attempt: none lost, none twice
    expect(ops.map((o) => o.external_event_id).sort()).toEqual(failed.map((d) => `delivery.failed:${d.id}:${d.attempts}`).sort());
    expect(ops.every((o) => o.status === 'COMPLETED')).toBe(true);
    // published (the sweeper's outbox) and fanned out once: one delivery row to the subscriber each
    const deliveries = await db('webhook_delivery')
      .whereIn(
        'event_id',
        ops.map((o) => o.id),
      )
      .select('event_id', 'status');
    expect(deliveries).toHaveLength(EVENTS);
    expect(deliveries.every((d: { status: string }) => d.status === 'SUCCESS')).toBe(true);
    const seen = new Set(subscriber.requests.map((r) => String(r.headers['x-webhook-event-id'])));
    expect(ops.map((o) => o.id).filter((id) => !seen.has(id))).toEqual([]);
    log(
      `ops: subscriber requests ${subscriber.requests.length} for ${EVENTS} events (at-least-once re-sends: ${subscriber.requests.length - EVENTS})`,
    );
  });
});
