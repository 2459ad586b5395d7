import { randomBytes } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFile } from 'node:fs/promises';
import { Admin, ProduceAcks } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaProduceMode } from '../../src/config/settings.js';
import type { KafkaTarget } from '../../src/delivery/broker-targets.js';
import type { Message } from '../../src/delivery/message.js';
import type { DeliveryOutcome } from '../../src/delivery/types.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createKafkaDestination } from '../../src/destinations/kafka/kafka-destination.js';
import { waitForBuilds } from '../support/builds.js';
import { startKafka, type KafkaBroker } from '../support/kafka.js';
import { eventually, sleep } from '../support/wait.js';
import { copiesWithinAttempts, publishThroughOutage, signedMessage, verifySignature } from './broker-messages.js';

// Kafka's jars come from Maven Central through the background queue (scripts/tools/builds.sh)
await waitForBuilds('kafka');

const SENDS = 'tracing:plt:kafka:producer:sends:start';
/** each request the client writes on a connection, with its API key */
const API_REQUESTS = 'tracing:plt:kafka:connections:api:start';
const METADATA = 3;

/** Runs `work`, and says how many records each produce request of the client carried (its diagnostics channel). */
async function requestsOf<T>(work: () => Promise<T>): Promise<{ result: T; requests: number[] }> {
  const requests: number[] = [];
  const onSend = (context: unknown): void =>
    void requests.push((context as { options?: { messages?: unknown[] } }).options?.messages?.length ?? 0);
  subscribe(SENDS, onSend);
  try {
    return { result: await work(), requests };
  } finally {
    unsubscribe(SENDS, onSend);
  }
}

/**
 * The established TCP connections to a loopback port, as the kernel lists them (/proc/net/tcp):
 * each one's local end ("127.0.0.1:54321" as hex), so a test sees which connections a client
 * closed without asking the client.
 */
async function connectionsTo(port: number): Promise<string[]> {
  const table = await readFile('/proc/net/tcp', 'utf8');
  return table
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter(([, , remote, state]) => state === '01' && remote !== undefined && parseInt(remote.split(':')[1] ?? '', 16) === port)
    .map(([, local]) => local ?? '');
}

const receiptOf = (o: DeliveryOutcome) => (o.kind === 'success' ? o.receipt : undefined);

/**
 * The Kafka destination against a real Kafka 4 (KRaft), each record read back by Kafka's own
 * console consumer (the Java client): what the broker acknowledged with acks=all is what a
 * consumer reads, headers per CloudEvents' Kafka binding, the signature verifying.
 */
describe('the Kafka destination', () => {
  let kafka: KafkaBroker;
  const destination = createKafkaDestination({ addressPolicy: createAddressPolicy() });
  const target = (over: Partial<KafkaTarget> = {}): KafkaTarget => ({
    type: 'Kafka',
    bootstrapServers: [kafka.bootstrap],
    topic: 'payments',
    tls: null,
    sasl: null,
    secrets: {},
    ...over,
  });
  beforeAll(async () => {
    kafka = await startKafka();
    await kafka.createTopic('payments', 3);
  }, 180_000);
  afterAll(async () => {
    await destination.close();
    await kafka?.stop();
  });

  it('publishes with acks=all; the consumer reads the body, the ce_ headers and a signature that verifies, at the partition and offset of the receipt', async () => {
    const message = signedMessage({ orderingKey: 'cus_42' });
    // the acks each produce went out with, as the client reports its sends (its diagnostics channel):
    // one broker answers acks=1 and acks=all alike, so the consumer alone could not tell them apart
    const acks: unknown[] = [];
    const onSend = (context: unknown): void => void acks.push((context as { options?: { acks?: unknown } }).options?.acks);
    subscribe('tracing:plt:kafka:producer:sends:start', onSend);
    let outcome;
    try {
      outcome = await destination.send(message, target(), { timeoutMs: 10_000 });
    } finally {
      unsubscribe('tracing:plt:kafka:producer:sends:start', onSend);
    }
    expect(acks).toEqual([ProduceAcks.ALL]);
    expect(outcome).toMatchObject({ kind: 'success', receipt: { partition: expect.any(Number), offset: expect.any(String) } });
    const receipt = outcome.kind === 'success' ? outcome.receipt : undefined;

    const records = await kafka.consume('payments', 1);
    expect(records).toHaveLength(1);
    const [record] = records;
    expect(record).toMatchObject({
      partition: receipt?.partition,
      offset: Number(receipt?.offset),
      key: 'cus_42',
      value: message.body.toString(),
    });
    expect(record?.headers).toMatchObject({
      ce_specversion: '1.0',
      ce_id: message.deduplicationId,
      ce_source: '/webhook-fanout/stripe',
      ce_type: 'order.created',
      ce_partitionkey: 'cus_42',
      'content-type': 'application/json',
      'X-Webhook-Event-Id': message.deduplicationId,
    });
    expect(() => verifySignature(record?.value ?? '', record?.headers ?? {})).not.toThrow();
  });

  it('SASL (SCRAM-SHA-512): publishes with the right password; a wrong one is refused, final', async () => {
    const sasl = { mechanism: 'SCRAM-SHA-512' as const, username: kafka.user.username };
    await kafka.createTopic('sasl');
    const ok = await destination.send(
      signedMessage(),
      target({ bootstrapServers: [kafka.saslBootstrap], topic: 'sasl', sasl, secrets: { password: kafka.user.password } }),
      {
        timeoutMs: 10_000,
      },
    );
    expect(ok.kind).toBe('success');
    const refused = await destination.send(
      signedMessage(),
      target({ bootstrapServers: [kafka.saslBootstrap], topic: 'sasl', sasl, secrets: { password: 'not-the-password' } }),
      { timeoutMs: 10_000 },
    );
    expect(refused).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_auth_refused: SASL_AUTHENTICATION_FAILED/) });
    // the password is never in what the attempt log keeps
    expect(JSON.stringify(refused)).not.toContain('not-the-password');
  });

  it("a record over the broker's message.max.bytes is final", async () => {
    const tooLarge = await destination.send(signedMessage({ body: Buffer.alloc(kafka.maxMessageBytes + 1, 'x') }), target(), {
      timeoutMs: 10_000,
    });
    expect(tooLarge).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_message_too_large: MESSAGE_TOO_LARGE/) });
  });

  it('a topic created a moment before is not unknown: the first record sent to each of many new topics is written, coalesced as single', async () => {
    // an endpoint applied with its topic (GitOps): the endpoint's first record sent as soon as
    // CreateTopics has answered (the broker may not serve the new topic in its metadata yet: here
    // 3 to 16 ms after the answer, for about 1 topic in 13), or while the topic is being created
    // (either may come first). Before the fix, each record that met the gap FAILED as an unknown topic
    const TOPICS = Number(process.env.KAFKA_NEW_TOPICS ?? 20);
    const admin = new Admin({ clientId: 'wf-test-admin', bootstrapBrokers: [kafka.bootstrap] });
    const single = createKafkaDestination({ addressPolicy: createAddressPolicy(), produce: 'single' });
    const sent: { topic: string; message: Message; outcome: DeliveryOutcome }[] = [];
    const create = (topic: string) => admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
    try {
      for (const [produce, dest] of [
        ['coalesced', destination],
        ['single', single],
      ] as const)
        for (let i = 0; i < TOPICS; i++) {
          const [answered, together] = [`new-${produce}-${i}`, `new-${produce}-together-${i}`];
          const send = async (topic: string) => {
            const message = signedMessage();
            sent.push({ topic, message, outcome: await dest.send(message, target({ topic }), { timeoutMs: 10_000 }) });
          };
          await create(answered);
          await send(answered);
          await Promise.all([create(together), send(together)]);
        }
    } finally {
      await Promise.all([admin.close(), single.close()]);
    }
    const failed = sent
      .filter((s) => s.outcome.kind !== 'success')
      .map((s) => `${s.topic}: ${s.outcome.kind === 'success' ? '' : s.outcome.error}`);
    expect(failed).toEqual([]);
    // each record in its topic, once
    const records = await kafka.consume(/new-.*/, sent.length + 5, 8_000);
    expect(records.map((r) => r.headers.ce_id).sort()).toEqual(sent.map((s) => s.message.deduplicationId).sort());
  }, 120_000);

  it('a topic that does not exist is final, with the reason, once the metadata has said so for 2 s (half the timeout if less), coalesced as single; then at once while remembered', async () => {
    const single = createKafkaDestination({ addressPolicy: createAddressPolicy(), produce: 'single' });
    const metadataRequests: number[] = [];
    const onRequest = (context: unknown): void => {
      if ((context as { apiKey?: number }).apiKey === METADATA) metadataRequests.push(1);
    };
    try {
      for (const [produce, dest] of [
        ['coalesced', destination],
        ['single', single],
      ] as const)
        for (const [timeoutMs, windowMs] of [
          [10_000, 2_000],
          [1_000, 500],
        ] as const) {
          // a topic of its own per case: one looked for in vain is remembered by its producer (below)
          const topic = `no-such-topic-${produce}-${timeoutMs}`;
          const started = performance.now();
          const unknown = await dest.send(signedMessage(), target({ topic }), { timeoutMs });
          const tookMs = performance.now() - started;
          // final (not a timeout, which would be retried without the reason)
          expect(unknown).toMatchObject({
            kind: 'permanent',
            error: expect.stringMatching(
              new RegExp(`^broker_unknown_destination: Unknown topic ${topic}\\. \\(still unknown to the cluster's metadata \\d+ ms after`),
            ),
          });
          // looked for again through the window, and answered soon after it (reads every 200 ms)
          expect(tookMs).toBeGreaterThanOrEqual(windowMs);
          expect(tookMs).toBeLessThan(Math.min(windowMs + 1_000, timeoutMs));

          // a moment later the producer remembers it missing: final after its own request and one
          // forced read a re-read's time (200 ms) after it, not a whole window again
          subscribe(API_REQUESTS, onRequest);
          metadataRequests.length = 0;
          const again = performance.now();
          let remembered: DeliveryOutcome;
          try {
            remembered = await dest.send(signedMessage(), target({ topic }), { timeoutMs });
          } finally {
            unsubscribe(API_REQUESTS, onRequest);
          }
          expect(remembered).toMatchObject({
            kind: 'permanent',
            error: expect.stringMatching(
              /^broker_unknown_destination: Unknown topic .*\(unknown to the cluster's metadata for an attempt's whole window until \d+ ms before this attempt's request, to it, and to a read after it\)$/,
            ),
          });
          const rememberedMs = performance.now() - again;
          expect(rememberedMs).toBeGreaterThanOrEqual(200);
          expect(rememberedMs).toBeLessThan(Math.min(windowMs, 1_000));
          expect(metadataRequests.length).toBeLessThanOrEqual(4);
        }
    } finally {
      await single.close();
    }
  });

  it('concurrent attempts go in one request per partition, each its own record: read once, at its receipt, key as partition key', async () => {
    await kafka.createTopic('coalesced', 3);
    // where one key's records go when sent one by one (KAFKA_PRODUCE=single): the coalesced ones must go there too
    const single = createKafkaDestination({ addressPolicy: createAddressPolicy(), produce: 'single' });
    let keyPartition: number | undefined;
    try {
      keyPartition = receiptOf(
        await single.send(signedMessage({ orderingKey: 'cus_7' }), target({ topic: 'coalesced' }), { timeoutMs: 10_000 }),
      )?.partition;
    } finally {
      await single.close();
    }
    expect(keyPartition).toEqual(expect.any(Number));

    const messages = [
      ...Array.from({ length: 4 }, () => signedMessage({ orderingKey: 'cus_7' })),
      ...Array.from({ length: 8 }, () => signedMessage()),
    ];
    const { result: outcomes, requests } = await requestsOf(() =>
      Promise.all(messages.map((m) => destination.send(m, target({ topic: 'coalesced' }), { timeoutMs: 10_000 }))),
    );
    // the keyed records in their partition's request, the others together in one partition's
    expect(outcomes.map((o) => o.kind)).toEqual(messages.map(() => 'success'));
    expect(requests.length).toBeLessThanOrEqual(2);
    expect(requests.reduce((a, b) => a + b, 0)).toBe(messages.length);
    const receipts = outcomes.map(receiptOf);
    expect(new Set(receipts.map((r) => `${r?.partition}:${r?.offset}`)).size).toBe(messages.length);
    for (const r of receipts.slice(0, 4)) expect(r?.partition).toBe(keyPartition);

    const records = await kafka.consume('coalesced', messages.length + 1);
    const byId = new Map(records.map((r) => [r.headers.ce_id, r]));
    expect(records).toHaveLength(messages.length + 1);
    messages.forEach((message, i) => {
      const record = byId.get(message.deduplicationId);
      expect(record, `the record of message ${i}`).toMatchObject({
        partition: receipts[i]?.partition,
        offset: Number(receipts[i]?.offset),
        key: message.orderingKey,
        value: message.body.toString(),
      });
      expect(record?.headers).toMatchObject({ 'X-Webhook-Event-Id': message.deduplicationId, 'content-type': 'application/json' });
      expect(() => verifySignature(record?.value ?? '', record?.headers ?? {})).not.toThrow();
    });
  });

  it('KAFKA_PRODUCE=single: one request per record', async () => {
    const single = createKafkaDestination({ addressPolicy: createAddressPolicy(), produce: 'single' });
    try {
      const { result: outcomes, requests } = await requestsOf(() =>
        Promise.all(Array.from({ length: 4 }, () => single.send(signedMessage(), target(), { timeoutMs: 10_000 }))),
      );
      expect(outcomes.map((o) => o.kind)).toEqual(['success', 'success', 'success', 'success']);
      expect(requests).toEqual([1, 1, 1, 1]);
    } finally {
      await single.close();
    }
  });

  it("in one request, a record over the broker's limit fails alone (final); records that fit only apart are each written", async () => {
    await kafka.createTopic('limits');
    const small = Array.from({ length: 3 }, () => signedMessage());
    const tooLarge = signedMessage({ body: Buffer.alloc(kafka.maxMessageBytes + 1, 'x') });
    // each under message.max.bytes, the two together over it
    const halves = Array.from({ length: 2 }, (_, i) =>
      signedMessage({ body: Buffer.from(JSON.stringify({ id: `half_${i}`, pad: 'y'.repeat(Math.floor(kafka.maxMessageBytes * 0.6)) })) }),
    );
    const send = (m: Message) => destination.send(m, target({ topic: 'limits' }), { timeoutMs: 10_000 });
    const { result, requests } = await requestsOf(async () => ({
      withLarge: await Promise.all([small[0], tooLarge, small[1], small[2]].map((m) => send(m as Message))),
      halves: await Promise.all(halves.map(send)),
    }));
    expect(result.withLarge.map((o) => o.kind)).toEqual(['success', 'permanent', 'success', 'success']);
    expect(result.withLarge[1]).toMatchObject({ error: expect.stringMatching(/^broker_message_too_large: MESSAGE_TOO_LARGE/) });
    expect(result.halves.map((o) => o.kind)).toEqual(['success', 'success']);
    // each group went as one request first, then record by record
    expect(requests).toEqual([4, 1, 1, 1, 1, 2, 1, 1]);

    const records = await kafka.consume('limits', 6, 15_000);
    expect(records.map((r) => r.headers.ce_id).sort()).toEqual([...small, ...halves].map((m) => m.deduplicationId).sort());
  });

  it("one record the broker refuses (no key on a compacted topic) fails its own attempt only, not another endpoint's in its request", async () => {
    await kafka.createTopic('compacted', 1, { 'cleanup.policy': 'compact' });
    const to = target({ topic: 'compacted' });
    // the producer's metadata warm, then an ordered endpoint's keyed record and another endpoint's unkeyed one in one tick
    expect((await destination.send(signedMessage({ orderingKey: 'warm' }), to, { timeoutMs: 10_000 })).kind).toBe('success');
    const keyedMessage = signedMessage({ orderingKey: 'cus_1' });
    const { result, requests } = await requestsOf(() =>
      Promise.all([
        destination.send(keyedMessage, to, { timeoutMs: 10_000 }),
        destination.send(signedMessage({ orderingKey: null }), to, { timeoutMs: 10_000 }),
      ]),
    );
    const [keyed, unkeyed] = result;
    expect(keyed?.kind).toBe('success');
    // it can never be written: final, with the broker's words, not retried until its attempts are spent
    expect(unkeyed).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_record_invalid: .*without key/i) });
    // one request for both, refused, then each alone
    expect(requests).toEqual([2, 1, 1]);
    const records = await kafka.consume('compacted', 2, 15_000);
    expect(records.map((r) => r.headers.ce_id)).toContain(keyedMessage.deduplicationId);
  });

  it('a record still waiting for its request when its deadline passes is never sent', async () => {
    await kafka.createTopic('deadline');
    const send = (m: Message, timeoutMs: number) => destination.send(m, target({ topic: 'deadline' }), { timeoutMs });
    const first = Array.from({ length: 3 }, () => signedMessage());
    const late = Array.from({ length: 3 }, () => signedMessage());
    // the first request is in flight (a produce with acks=all and a flush takes milliseconds); the
    // others wait for its answer, and their 1 ms passes first
    const inFlight = Promise.all(first.map((m) => send(m, 10_000)));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const lateOutcomes = await Promise.all(late.map((m) => send(m, 1)));
    expect((await inFlight).map((o) => o.kind)).toEqual(['success', 'success', 'success']);
    expect(lateOutcomes.every((o) => o.kind === 'retryable' && o.statusClass === 'timeout')).toBe(true);

    const records = await kafka.consume('deadline', first.length + late.length, 8_000);
    expect(records.map((r) => r.headers.ce_id).sort()).toEqual(first.map((m) => m.deduplicationId).sort());
  });

  it("a record that waited out a stalled leader's request is not sent with too little of its attempt's time left: no second copy on its retry, coalesced as single", async () => {
    // How many copies of each event a consumer reads when the network to the leader stalls with a
    // request in flight and the connection drops a second later (a leader gone without a reset),
    // attempts each retried until acknowledged, as the delivery's backoff would. The records of
    // attempts that began meanwhile have 2 to 120 ms of their time left when the drop comes.
    const copies = async (produce: KafkaProduceMode): Promise<Map<string, number>> => {
      const topic = `stalled-${produce}`;
      await kafka.createTopic(topic);
      const dest = createKafkaDestination({ addressPolicy: createAddressPolicy(), produce });
      const to = target({ bootstrapServers: [kafka.proxiedBootstrap], topic });
      const send = (m: Message, timeoutMs: number) => dest.send(m, to, { timeoutMs });
      const messages = Array.from({ length: 61 }, () => signedMessage());
      const [first, ...waiting] = messages as [Message, ...Message[]];
      try {
        // the producer knows the topic and has its connection
        expect((await send(signedMessage(), 10_000)).kind).toBe('success');
        kafka.proxy.stall();
        const STALLED_MS = 1_000;
        const drop = setTimeout(() => {
          kafka.proxy.cut();
          kafka.proxy.restore();
        }, STALLED_MS);
        let outcomes: DeliveryOutcome[];
        try {
          const inFlight = send(first, 10_000);
          await new Promise((resolve) => setImmediate(resolve));
          await new Promise((resolve) => setImmediate(resolve));
          outcomes = await Promise.all([inFlight, ...waiting.map((m, i) => send(m, STALLED_MS + 2 + 2 * i))]);
        } finally {
          clearTimeout(drop);
          kafka.proxy.restore();
        }
        // the request in flight fails with the connection; the others fail or are written, each once
        expect(outcomes[0]).toMatchObject({ kind: 'retryable', error: expect.stringMatching(/^broker_unavailable: /) });
        for (const m of messages) {
          let outcome = await send(m, 10_000);
          for (let i = 0; outcome.kind !== 'success' && i < 20; i++) {
            await sleep(250);
            outcome = await send(m, 10_000);
          }
          expect(outcome.kind).toBe('success');
        }
      } finally {
        await dest.close();
      }
      const read = new Map<string, number>();
      for (const r of await kafka.consume(topic, messages.length + 10, 8_000))
        read.set(r.headers.ce_id ?? '', (read.get(r.headers.ce_id ?? '') ?? 0) + 1);
      for (const m of messages) expect(read.get(m.deduplicationId), `copies of ${m.deduplicationId}`).toBeGreaterThanOrEqual(1);
      return read;
    };
    const twice = (read: Map<string, number>) => [...read.values()].filter((n) => n > 1).length;
    expect(twice(await copies('single'))).toBe(0);
    expect(twice(await copies('coalesced'))).toBe(0);
  }, 120_000);

  it("a password rotation: the old password's producer is closed (its connections with it) once its record in flight is answered, nothing lost; an idle one is closed too", async () => {
    await kafka.createTopic('rotation');
    const sasl = { mechanism: 'SCRAM-SHA-512' as const, username: kafka.user.username };
    const to = (password: string) => target({ bootstrapServers: [kafka.saslBootstrap], topic: 'rotation', sasl, secrets: { password } });
    const saslPort = Number(kafka.saslBootstrap.split(':')[1]);
    // the connections this test's producers open: those to the port now are other tests' clients
    const others = await connectionsTo(saslPort);
    const ours = async () => (await connectionsTo(saslPort)).filter((c) => !others.includes(c));
    const dest = createKafkaDestination({ addressPolicy: createAddressPolicy() });
    const oldPassword = kafka.user.password;
    const newPassword = randomBytes(12).toString('hex');
    const first = signedMessage();
    const inFlight = signedMessage();
    const rotated = signedMessage();
    try {
      expect((await dest.send(first, to(oldPassword), { timeoutMs: 10_000 })).kind).toBe('success');
      const oldConnections = await ours();
      expect(oldConnections.length).toBeGreaterThan(0);
      // another endpoint's Secret with a wrong password for the same user closes nothing that works
      expect((await dest.send(signedMessage(), to('not-the-password'), { timeoutMs: 10_000 })).kind).toBe('permanent');
      expect(await ours()).toEqual(expect.arrayContaining(oldConnections));
      await kafka.setPassword(newPassword);
      // an attempt of the endpoint's old Secret still publishing when the first with the new one begins
      const [a, b] = await Promise.all([
        dest.send(inFlight, to(oldPassword), { timeoutMs: 10_000 }),
        dest.send(rotated, to(newPassword), { timeoutMs: 10_000 }),
      ]);
      expect(a.kind).toBe('success');
      expect(b.kind).toBe('success');
      // the broker's side: none of the old producer's connections left, the new one's open
      await eventually(
        async () => {
          const now = await ours();
          return now.length > 0 && now.every((c) => !oldConnections.includes(c));
        },
        { timeoutMs: 10_000, what: "the old password's connections closed" },
      );
    } finally {
      await dest.close();
    }

    // a producer no attempt uses for its idle time is closed; the next attempt makes another
    const idle = createKafkaDestination({ addressPolicy: createAddressPolicy(), idleCloseMs: 300 });
    const later = signedMessage();
    try {
      expect((await idle.send(signedMessage(), to(newPassword), { timeoutMs: 10_000 })).kind).toBe('success');
      expect((await ours()).length).toBeGreaterThan(0);
      await eventually(async () => (await ours()).length === 0, { timeoutMs: 10_000, what: 'the idle producer closed' });
      expect((await idle.send(later, to(newPassword), { timeoutMs: 10_000 })).kind).toBe('success');
    } finally {
      await idle.close();
    }
    const records = await kafka.consume('rotation', 6, 8_000);
    for (const m of [first, inFlight, rotated, later]) expect(records.map((r) => r.headers.ce_id)).toContain(m.deduplicationId);
  }, 120_000);

  it('never dials an address the outbound policy refuses: a cloud-metadata bootstrap server, or a broker the cluster advertises', async () => {
    const metadata = await destination.send(signedMessage(), target({ bootstrapServers: ['169.254.169.254:9092'] }), { timeoutMs: 5_000 });
    expect(metadata).toMatchObject({
      kind: 'permanent',
      statusClass: 'blocked',
      error: expect.stringMatching(/^address_blocked: address 169\.254\.169\.254/),
    });
    // reached by name, the cluster advertises 127.0.0.1, which this policy refuses
    const strict = createKafkaDestination({ addressPolicy: createAddressPolicy({ deny: ['127.0.0.0/8'] }) });
    try {
      const advertised = await strict.send(
        signedMessage(),
        target({ bootstrapServers: [kafka.bootstrap.replace('127.0.0.1', 'localhost')] }),
        {
          timeoutMs: 5_000,
        },
      );
      expect(advertised).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^address_blocked: address (127\.0\.0\.1|::1)/) });
    } finally {
      await strict.close();
    }
  });

  it('a request that fails fails each of its attempts with the reason, each retried on its own; each record then read once', async () => {
    await kafka.createTopic('refused-request');
    const messages = Array.from({ length: 6 }, () => signedMessage());
    const send = (m: Message) => destination.send(m, target({ topic: 'refused-request' }), { timeoutMs: 5_000 });
    // a first record makes the producer know the topic (its metadata stays cached through the outage)
    const warm = signedMessage();
    expect((await send(warm)).kind).toBe('success');
    await kafka.halt();
    let failed;
    try {
      failed = await requestsOf(() => Promise.all(messages.map(send)));
    } finally {
      await kafka.start();
    }
    expect(failed.requests).toEqual([messages.length]);
    for (const o of failed.result) expect(o).toMatchObject({ kind: 'retryable', error: expect.stringMatching(/^broker_unavailable: /) });
    // each attempt retried by its own delivery, as its backoff says: these one after the other
    for (const m of messages) {
      let outcome = await send(m);
      for (let i = 0; outcome.kind !== 'success' && i < 20; i++) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        outcome = await send(m);
      }
      expect(outcome.kind).toBe('success');
    }
    const records = await kafka.consume('refused-request', messages.length + 2, 15_000);
    expect(records.map((r) => r.headers.ce_id).sort()).toEqual([warm, ...messages].map((m) => m.deduplicationId).sort());
  }, 180_000);

  it('the broker down for 30 s mid-run: every message is in the topic, a second copy only of one whose answer was lost', async () => {
    await kafka.createTopic('outage');
    const messages = Array.from({ length: 12 }, () => signedMessage());
    // the deliveries go on while the broker stops, each retried as the delivery's backoff would
    const held = copiesWithinAttempts((message) => destination.send(message, target({ topic: 'outage' }), { timeoutMs: 5_000 }));
    const outcomes = await publishThroughOutage({
      messages,
      send: held.send,
      broker: kafka,
    });

    const failed = outcomes.filter((o) => o.kind === 'retryable');
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((o) => o.kind !== 'success' && o.error.startsWith('broker_unavailable:'))).toBe(true);
    const records = await kafka.consume('outage', messages.length + 5, 15_000);
    held.expectHeld(
      records.map((r) => r.headers.ce_id ?? ''),
      messages,
    );
  }, 180_000);
});
