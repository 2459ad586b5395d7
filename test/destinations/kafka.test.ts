import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { ProduceAcks } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaTarget } from '../../src/delivery/broker-targets.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createKafkaDestination } from '../../src/destinations/kafka/kafka-destination.js';
import { waitForBuilds } from '../support/builds.js';
import { startKafka, type KafkaBroker } from '../support/kafka.js';
import { copiesWithinAttempts, publishThroughOutage, signedMessage, verifySignature } from './broker-messages.js';

// Kafka's jars come from Maven Central through the background queue (scripts/tools/builds.sh)
await waitForBuilds('kafka');

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

  it("a record over the broker's message.max.bytes is final, and so is an unknown topic", async () => {
    const tooLarge = await destination.send(signedMessage({ body: Buffer.alloc(kafka.maxMessageBytes + 1, 'x') }), target(), {
      timeoutMs: 10_000,
    });
    expect(tooLarge).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_message_too_large: MESSAGE_TOO_LARGE/) });
    const unknown = await destination.send(signedMessage(), target({ topic: 'no-such-topic' }), { timeoutMs: 10_000 });
    expect(unknown).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_unknown_destination: .*no-such-topic/) });
  });

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
