import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { continuedDelivery } from '../../src/domain/ordering.js';
import { decodeEventMessage } from '../../src/transport/event-message.js';
import { addEndpoint } from '../fanout/support/harness.js';
import { waitForBuilds } from '../support/builds.js';
import { startKafka, type KafkaBroker } from '../support/kafka.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { sleep } from '../support/wait.js';
import { logLateEvents } from './late-events.js';
import { addOrderedEndpoint, expectKeysInOrder, type AcceptedByKey, type OrderedEndpoint } from './ordered-keys.js';
import { launch, log, restart, sigkill, timeToReady, type Proc } from './processes.js';
import { sendUntilAccepted, settledWithin, startFaultStack, type FaultStack } from './stack.js';

// Kafka's jars come from Maven Central through the background queue (scripts/tools/brokers.sh)
await waitForBuilds('kafka');

/**
 * The compiled build as it runs in production: ingest, consumer and two workers as separate
 * processes against a real Postgres, Temporal dev server and SNS/SQS emulator (fauxqs, its own
 * process), each killed with SIGKILL under load, Postgres, Temporal and the Kafka broker of a
 * third endpoint stopped and started. Then what a user checks: every accepted event delivered to
 * every endpoint (the Kafka topic read back with Kafka's own consumer), nothing failed that the
 * endpoints never refused, one workflow per event, nothing lost in the dead-letter queue.
 *
 * A fourth endpoint takes the `customer.updated` events (every fourth a sender sends), ordered
 * (docs/ordering.md) by `event.data.key`, its receiver answering 500 to a tenth of the requests.
 * Each sender owns some keys and sends one event at a time, each after the 200 of the one before,
 * so every key has an order to keep through all the faults (ingest killed, the emulator emptied,
 * Postgres and Temporal down): per key, every event delivered, in the order accepted, one request
 * in flight, one SUCCESS each (test/faults/ordering.test.ts kills the workers and the consumer
 * around an ordered endpoint at a closer pace).
 */

/** events per second the sender offers, all through the faults */
const RATE = Number(process.env.FAULTS_RATE ?? 8);
const SENDERS = 4;
/** every ORDERED_EVERY-th event a sender sends is for the ordered endpoint, its keys taken in turn */
const ORDERED_EVERY = 4;
const KEYS_PER_SENDER = Number(process.env.FAULTS_ORDERED_KEYS_PER_SENDER ?? 4);
// the outages a user's SRE would try: Postgres 30 s, Temporal a minute, processes restarted in them
const PG_OUTAGE_MS = Number(process.env.FAULTS_PG_OUTAGE_MS ?? 30_000);
const TEMPORAL_OUTAGE_MS = Number(process.env.FAULTS_TEMPORAL_OUTAGE_MS ?? 60_000);
const KAFKA_OUTAGE_MS = Number(process.env.FAULTS_KAFKA_OUTAGE_MS ?? 30_000);
/** the Kafka endpoint's topic */
const TOPIC = 'faults';
const SETTLE_WITHIN_MS = 60_000;

describe('the compiled build under SIGKILL and dependency outages', () => {
  let stack: FaultStack;
  let receivers: Receiver[] = [];
  let ordered: OrderedEndpoint;
  let kafka: KafkaBroker | undefined;
  const serveAgain: Array<{ component: string; ms: number }> = [];

  beforeAll(async () => {
    stack = await startFaultStack('crash', {
      alongside: {
        start: async () => {
          kafka = await startKafka();
        },
        stop: async () => kafka?.stop(),
      },
    });
    await kafka!.createTopic(TOPIC, 3);
    receivers = await Promise.all([startReceiver(), startReceiver()]);
    for (const [i, r] of receivers.entries()) {
      await addEndpoint(stack.repos, { source: 'shop', url: r.url, name: `ep-${i}`, maxAttempts: 5, timeoutSeconds: 5 });
    }
    // a Kafka topic beside the two HTTP endpoints; enough attempts to outlast its broker's outage
    // (the workers' backoff: 200 ms doubling to 2 s)
    await addEndpoint(stack.repos, {
      source: 'shop',
      url: `kafka://${kafka!.bootstrap}/${TOPIC}`,
      name: 'ep-kafka',
      maxAttempts: 40,
      timeoutSeconds: 5,
      destination: { type: 'Kafka', bootstrapServers: [kafka!.bootstrap], topic: TOPIC, tls: null, sasl: null },
    });
    ordered = await addOrderedEndpoint(stack.repos, 'ep-ordered', 0.1, 'customer.updated');
    await stack.launch([
      [
        'ingest',
        'ingest',
        stack.ingestEnv({ SWEEP_INTERVAL_SECONDS: '5', SWEEP_MIN_AGE_SECONDS: '5', SWEEP_UNSTARTED_AFTER_SECONDS: '20' }),
      ],
      ['consumer', 'consumer', stack.consumerEnv()],
      ['worker-1', 'worker', stack.workerEnv()],
      // worker-2 also does the consumer's work (WORKER_CONSUME_QUEUE): it competes with the consumer
      // for messages and starts its workflows eagerly on itself, so its deaths cover that mode too
      [
        'worker-2',
        'worker',
        stack.workerEnv({ WORKER_CONSUME_QUEUE: 'true', QUEUE_URL: stack.topology.queueUrl, QUEUE_VISIBILITY_TIMEOUT_SECONDS: '5' }),
      ],
    ]);
  });

  afterAll(async () => {
    for (const r of [...receivers, ordered?.receiver]) await r?.close();
    await stack?.stop();
  });

  it('delivers every accepted event to every endpoint after every fault', async () => {
    const { db, procs } = stack;
    // senders as real ones behave: each event retried on 5xx and connection errors with the same id
    const accepted = new Map<string, string>(); // external id -> event id
    const acceptedByKey: AcceptedByKey = new Map();
    let next = 0;
    let faultsOver = false;
    const sendAll = async (sender: number) => {
      for (let turn = 0; !faultsOver; turn++) {
        const n = next++;
        const externalId = `evt-${n}`;
        if (turn % ORDERED_EVERY === ORDERED_EVERY - 1) {
          const k = Math.floor(turn / ORDERED_EVERY);
          const key = `sender-${sender}-key-${k % KEYS_PER_SENDER}`;
          const seq = Math.floor(k / KEYS_PER_SENDER);
          const eventId = await sendUntilAccepted(stack.ingestUrl, { id: externalId, type: 'customer.updated', n, key, seq });
          accepted.set(externalId, eventId);
          if (!acceptedByKey.has(key)) acceptedByKey.set(key, []);
          acceptedByKey.get(key)!.push({ seq, eventId });
        } else {
          accepted.set(externalId, await sendUntilAccepted(stack.ingestUrl, { id: externalId, type: 'order.created', n }));
        }
        await sleep((1000 * SENDERS) / RATE);
      }
    };
    const sending = Promise.all(Array.from({ length: SENDERS }, (_, i) => sendAll(i)));

    const restartTimed = async (p: Proc, afterMs = 500) => {
      serveAgain.push({ component: p.name, ms: await restart(p, afterMs) });
    };

    await sleep(2_000);
    log('SIGKILL ingest');
    await restartTimed(procs.ingest!);
    log('SIGKILL consumer');
    await restartTimed(procs.consumer!);
    log('SIGKILL worker-1');
    await restartTimed(procs['worker-1']!);
    log('SIGKILL worker-2 (it consumes the queue too)');
    await restartTimed(procs['worker-2']!);
    // the emulator keeps its state in memory: killed, it comes back empty, its queued messages lost; the
    // topology is re-created as `setup-transport` would, and the sweeper re-publishes what was lost
    log('killing the SNS/SQS emulator');
    const sqsDown = Date.now();
    await stack.restartEmulator(2_000);
    serveAgain.push({ component: 'SNS/SQS emulator (restarted, topology re-created)', ms: Date.now() - sqsDown });

    // the broker stops (its data kept) while the deliveries to it go on: each retried until it is back
    log('stopping Kafka');
    await kafka!.halt();
    const kafkaDown = Date.now();
    await sleep(KAFKA_OUTAGE_MS);
    await kafka!.start();
    serveAgain.push({ component: 'Kafka (restarted on its data)', ms: Date.now() - kafkaDown - KAFKA_OUTAGE_MS });

    log('stopping Postgres');
    await stack.stopPostgres();
    const pgDown = Date.now();
    await sleep(PG_OUTAGE_MS / 2);
    // a process restarted during the outage must wait, not crash
    await sigkill(procs['worker-2']!);
    launch(procs['worker-2']!);
    await sleep(PG_OUTAGE_MS / 2);
    await stack.startPostgres();
    log(`Postgres back after ${Date.now() - pgDown} ms`);
    serveAgain.push({ component: 'worker-2 (restarted during the Postgres outage)', ms: await timeToReady(procs['worker-2']!) });

    log('stopping Temporal');
    await stack.stopTemporal();
    const temporalDown = Date.now();
    await sleep(TEMPORAL_OUTAGE_MS / 2);
    await sigkill(procs.consumer!);
    launch(procs.consumer!);
    await sigkill(procs['worker-1']!);
    launch(procs['worker-1']!);
    await sleep(TEMPORAL_OUTAGE_MS / 2);
    await stack.startTemporal();
    log(`Temporal back after ${Date.now() - temporalDown} ms`);
    const temporalBack = Date.now();
    for (const name of ['consumer', 'worker-1', 'worker-2']) {
      serveAgain.push({ component: `${name} after the Temporal outage`, ms: await timeToReady(procs[name]!) });
    }
    log(`ready again after Temporal returned: ${Date.now() - temporalBack} ms`);
    log('SIGKILL ingest again');
    await restartTimed(procs.ingest!, 0);
    const lastFault = Date.now();
    log(`last fault ${lastFault - temporalBack} ms after Temporal returned; Temporal went down ${lastFault - temporalDown} ms before it`);

    // the load ran through every fault; each sender finishes the event it is retrying
    faultsOver = true;
    await sending;
    log(`sender done: ${accepted.size} of ${next} offered events accepted`);
    expect(accepted.size).toBe(next);

    // every accepted event settles within a minute of the last fault
    const ids = [...accepted.values()];
    const settled = await settledWithin(db, ids, lastFault, SETTLE_WITHIN_MS);
    const settledAfter = Date.now() - lastFault;
    await logLateEvents(db, ids, lastFault, log);
    for (const s of serveAgain) log(`serving again: ${s.component} in ${s.ms} ms`);
    log(`all ${settled}/${ids.length} events settled ${settledAfter} ms after the last fault`);
    if (settled !== ids.length) {
      const stuck = await db('webhook_event')
        .whereIn('id', ids)
        .where('status', 'RECEIVED')
        .select('id', 'published_at', 'workflow_id')
        .limit(5);
      log(`stuck: ${JSON.stringify(stuck)}`);
      // which endpoint's deliveries are behind (the ordered one's go one at a time per key)
      const deliveries = await db('webhook_delivery as d')
        .join('webhook_endpoint as p', 'p.id', 'd.endpoint_id')
        .whereIn('d.event_id', ids)
        .groupBy('p.name', 'd.status')
        .select('p.name', 'd.status')
        .count<{ name: string; status: string; n: string }[]>('* as n');
      log(`deliveries by endpoint and status: ${deliveries.map((d) => `${d.name} ${d.status} ${d.n}`).join(', ')}`);
      // what Temporal knows of the first one, and what the processes said last
      const conn = await Connection.connect({ address: stack.temporalAddress });
      const first = (stuck[0] as { id: string } | undefined)?.id;
      const described = first
        ? await new Client({ connection: conn, namespace: 'default' }).workflow
            .getHandle(first)
            .describe()
            .then(
              (d) => `${d.status.name} started ${d.startTime.toISOString()}`,
              (err: unknown) => String(err),
            )
        : 'none';
      await conn.close();
      log(`temporal on ${first ?? '-'}: ${described}`);
      for (const p of Object.values(procs)) log(`${p.name} said: ${p.tail.join('').slice(-1500)}`);
    }
    expect(settled).toBe(ids.length);

    const statuses = await db('webhook_event')
      .whereIn('id', ids)
      .select('status')
      .groupBy('status')
      .count<{ status: string; count: string }[]>('* as count');
    expect(statuses.map((r) => ({ status: r.status, count: Number(r.count) }))).toEqual([{ status: 'COMPLETED', count: ids.length }]);
    // no delivery FAILED (the endpoints never refused one), every endpoint reached for every event
    const failed = await db('webhook_delivery')
      .whereIn('event_id', ids)
      .whereNot('status', 'SUCCESS')
      .count<{ n: string }[]>('* as n')
      .first();
    expect(Number(failed?.n)).toBe(0);
    for (const r of receivers) {
      const seen = new Set(r.requests.map((q) => String(q.headers['x-webhook-event-id'])));
      expect(ids.filter((id) => !seen.has(id))).toEqual([]);
    }
    const resent = receivers.reduce((n, r) => n + r.requests.length, 0) - ids.length * receivers.length;
    log(`requests beyond one per event and endpoint (at-least-once re-sends): ${resent}`);
    // the ordered endpoint, per key: every event, in the order accepted, one request in flight, one SUCCESS each
    const inOrder = await expectKeysInOrder(db, ordered, acceptedByKey);
    log(
      `ordered endpoint: ${acceptedByKey.size} keys, ${inOrder.requests} requests for ${inOrder.events} events; 200s sent again: ${inOrder.resent}`,
    );
    // every event in the topic, read by Kafka's own consumer (at least once: Kafka does not de-duplicate)
    const records = await kafka!.consume(TOPIC, ids.length + 50, 20_000);
    const published = new Set(records.map((r) => r.headers['X-Webhook-Event-Id']));
    expect(ids.filter((id) => !published.has(id))).toEqual([]);
    log(`Kafka records beyond one per event (at-least-once re-sends): ${records.length - ids.length}`);

    // one workflow per event: workflow id = event id, and exactly one run of each; besides them,
    // only continuations (docs/ordering.md): runs of the ordered endpoint's deliveries that their
    // key's chain left to a run of their own (a retry, a wake-up from the waker after a kill)
    const connection = await Connection.connect({ address: stack.temporalAddress });
    try {
      const client = new Client({ connection, namespace: 'default' });
      const eventRuns: string[] = [];
      const continued: string[] = [];
      for await (const w of client.workflow.list({ query: `TaskQueue = '${stack.taskQueue}'` })) {
        const c = continuedDelivery(w.workflowId);
        if (c) continued.push(c.eventId);
        else eventRuns.push(w.workflowId);
      }
      expect(eventRuns.sort()).toEqual([...ids].sort());
      const orderedEvents = new Set([...acceptedByKey.values()].flatMap((events) => events.map((e) => e.eventId)));
      expect(continued.filter((id) => !orderedEvents.has(id))).toEqual([]);
      log(`continuations (runs of ordered deliveries of their own): ${continued.length}`);
      // both ways of starting ran: the consumer's (through the task queue) and worker-2's (eager)
      let eager = 0;
      for (const id of ids) {
        const history = await client.workflow.getHandle(id).fetchHistory();
        if (history.events?.[0]?.workflowExecutionStartedEventAttributes?.eagerExecutionAccepted) eager++;
      }
      log(`workflows started eagerly by worker-2: ${eager} of ${ids.length}`);
      expect(eager).toBeGreaterThan(0);
      expect(eager).toBeLessThan(ids.length);
    } finally {
      await connection.close();
    }

    // anything dead-lettered (e.g. during the Temporal outage) was re-published and delivered
    const dlq = await stack.aws.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: stack.topology.dlqUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    for (const m of dlq.Messages ?? []) {
      const id = decodeEventMessage(m.Body ?? '');
      expect(id !== undefined && ids.includes(id)).toBe(true);
    }
  });
});
