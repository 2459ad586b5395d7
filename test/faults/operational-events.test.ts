import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEndpoint } from '../fanout/support/harness.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { sleep } from '../support/wait.js';
import { launch, log, sigkill, timeToReady } from './processes.js';
import { sendUntilAccepted, startFaultStack, type FaultStack } from './stack.js';

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
  let stack: FaultStack;
  let failing: Receiver;
  let subscriber: Receiver;

  beforeAll(async () => {
    stack = await startFaultStack('ops');
    [failing, subscriber] = await Promise.all([startReceiver([{ status: 500 }]), startReceiver()]);
    await addEndpoint(stack.repos, { source: 'shop', url: failing.url, name: 'payments/ledger', namespace: 'payments', maxAttempts: 1 });
    await addEndpoint(stack.repos, {
      source: 'webhook-fanout',
      url: subscriber.url,
      name: 'payments/ops',
      namespace: 'payments',
      maxAttempts: 10,
    });
    await stack.launch([
      ['ingest', 'ingest', stack.ingestEnv()],
      ['consumer', 'consumer', stack.consumerEnv()],
      ['worker', 'worker', stack.workerEnv()],
    ]);
  });

  afterAll(async () => {
    await Promise.all([failing, subscriber].map((r) => r?.close()));
    await stack?.stop();
  });

  it('every FAILED delivery has one delivery.failed, published, fanned out once and delivered', async () => {
    const { db, procs } = stack;
    const accepted: string[] = [];
    const sending = (async () => {
      for (let n = 0; n < EVENTS; n++) {
        accepted.push(await sendUntilAccepted(stack.ingestUrl, { id: `inv-${n}`, type: 'invoice.paid' }));
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
