import { createHook } from 'node:async_hooks';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiverProcess, type Receiver } from '../../bench/receiver.js';
import type { EndpointDestination } from '../../src/domain/records.js';
import { addEndpoint, addEvent, startFanoutHarness, uniqueSource, type FanoutHarness } from '../fanout/support/harness.js';
import { startKafka, type KafkaBroker } from '../support/kafka.js';
import { startFauxqsProcess, type Backend } from '../transport/backends.js';

// Issue 43, item 7: a Kafka or an SQS delivery costs the worker no more than an HTTP one beyond
// its send. Counted, not timed (a loaded machine times nothing): the same events through the real
// worker (Postgres, Temporal, the deliver activity) to a receiver, a Kafka 4 topic and a fauxqs
// queue, each far side a process of its own so this process counts the worker's work only. What
// a broker delivery must not add: a statement (a Secret, a config or a client read per delivery),
// bytes in the workflow's history (the receipt goes to the attempt log, not through the
// activity's result), a DNS lookup or a connection per send. Timers are not asserted: Temporal's
// and the pools' periodic ones make their count per delivery depend on how long a run took (a
// timer of the destination's own per send read 8.4 against HTTP's 7.5, the runs' noise ~0.3).

const EVENTS = 30;
const WARMUP = 5;
const INVOICE = JSON.stringify({ id: 'in_1', type: 'invoice.paid', amount: 4200, currency: 'eur', customer: 'cus_1', created: 1 });

type Kind = 'http' | 'kafka' | 'sqs';

interface Work {
  /** statements per delivery, and their kinds (the attempt recorded, else the start of each) */
  statements: number;
  kinds: Set<string>;
  /** per delivery, from async_hooks in this process (the worker's) */
  lookups: number;
  connects: number;
  /** per workflow, from its history */
  historyEvents: number;
  /** the deliver local activity's marker, bytes (its result travels in it) */
  markerBytes: number;
}

let h: FanoutHarness;
let kafka: KafkaBroker;
let receiver: Receiver;
let fauxqs: Backend;
let queueUrl = '';

beforeAll(async () => {
  h = await startFanoutHarness({ awsCredentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  [kafka, receiver, fauxqs] = await Promise.all([startKafka({ flushEachMessage: false }), startReceiverProcess(), startFauxqsProcess()]);
  await kafka.createTopic('work');
  const sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: fauxqs.endpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  try {
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'work' }))).QueueUrl ?? '';
  } finally {
    sqs.destroy();
  }
}, 240_000);

afterAll(async () => {
  await h?.close();
  await Promise.allSettled([kafka?.stop(), receiver?.close(), fauxqs?.stop()]);
});

const destinationOf = (kind: Kind): EndpointDestination | undefined =>
  kind === 'kafka'
    ? { type: 'Kafka', bootstrapServers: [kafka.bootstrap], topic: 'work', tls: null, sasl: null }
    : kind === 'sqs'
      ? { type: 'SQS', queueUrl, region: 'us-east-1', endpointUrl: fauxqs.endpoint, roleArn: null }
      : undefined;

/** `n` events to one endpoint of `kind`, 10 runs at once (the consumer's concurrency); what the worker did, when `count`. */
async function deliver(kind: Kind, n: number, count: boolean): Promise<Work | undefined> {
  const source = uniqueSource(`work-${kind}`);
  const destination = destinationOf(kind);
  const url = kind === 'kafka' ? `kafka://${kafka.bootstrap}/work` : kind === 'sqs' ? queueUrl : `${receiver.url}/work`;
  await addEndpoint(h.repos, { source, url, timeoutSeconds: 10, ...(destination ? { destination } : {}) });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await addEvent(h.repos, { source, payload: INVOICE }));

  let statements = 0;
  const kinds = new Set<string>();
  const resources = new Map<string, number>();
  const onQuery = (q: { sql: string }): void => {
    statements += 1;
    const sql = q.sql.replace(/\s+/g, ' ').trim();
    // the attempt recorded alone or with others that ended at the same time: one kind (timing picks)
    kinds.add(sql.includes('INSERT INTO webhook_delivery_attempt') ? 'the attempt recorded' : sql.slice(0, 80));
  };
  const hook = createHook({ init: (_id, type) => void resources.set(type, (resources.get(type) ?? 0) + 1) });
  if (count) {
    h.database.db.on('query', onQuery);
    hook.enable();
  }
  try {
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < ids.length) expect(await h.runFanout(ids[next++] ?? '')).toBe('COMPLETED');
    };
    await Promise.all(Array.from({ length: 10 }, lane));
  } finally {
    hook.disable();
    h.database.db.off('query', onQuery);
  }
  if (!count) return undefined;

  let historyEvents = 0;
  let markerBytes = 0;
  for (const id of ids) {
    const history = await h.client.workflow.getHandle(id).fetchHistory();
    historyEvents += history.events?.length ?? 0;
    for (const e of history.events ?? []) {
      const m = e.markerRecordedEventAttributes;
      if (m) markerBytes += proto.temporal.api.history.v1.MarkerRecordedEventAttributes.encode(m).finish().length;
    }
  }
  return {
    statements: statements / n,
    kinds,
    lookups: (resources.get('GETADDRINFOREQWRAP') ?? 0) / n,
    connects: (resources.get('TCPCONNECTWRAP') ?? 0) / n,
    historyEvents: historyEvents / n,
    markerBytes: markerBytes / n,
  };
}

describe("a broker delivery's work in the worker beside an HTTP one's (issue 43, item 7)", () => {
  it('Kafka and SQS: the same statements and history as HTTP, no lookup and no connection per send', { timeout: 300_000 }, async () => {
    // the first send of each type opens its connection and loads its client: not counted
    for (const kind of ['http', 'kafka', 'sqs'] as const) await deliver(kind, WARMUP, false);
    const work = {} as Record<Kind, Work>;
    for (const kind of ['http', 'kafka', 'sqs'] as const) work[kind] = (await deliver(kind, EVENTS, true))!;
    const http = work.http;
    // prepare, the attempt recorded (alone or in a batch with others ending together), finish
    expect(http.statements).toBeLessThanOrEqual(3);
    for (const kind of ['kafka', 'sqs'] as const) {
      const w = work[kind];
      expect({ kind, statements: w.statements <= 3, kinds: [...w.kinds].sort() }).toEqual({
        kind,
        statements: true,
        kinds: [...http.kinds].sort(),
      });
      expect({ kind, historyEvents: w.historyEvents }).toEqual({ kind, historyEvents: http.historyEvents });
      // the activity's result is its status, whatever the broker answered (a receipt is ~50 bytes)
      expect(Math.abs(w.markerBytes - http.markerBytes)).toBeLessThan(16);
      // brokers given as IP addresses are not looked up; their connections are kept: at most
      // one more per request in flight (10), not one per send
      expect(w.lookups, kind).toBe(0);
      expect(w.connects * EVENTS, kind).toBeLessThanOrEqual(10);
    }
  });
});
