import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RabbitMqTarget } from '../../src/delivery/broker-targets.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createRabbitMqDestination } from '../../src/destinations/rabbitmq/rabbitmq-destination.js';
import { waitForBuilds } from '../support/builds.js';
import { startRabbitMq, type RabbitMq } from '../support/rabbitmq.js';
import { copiesWithinAttempts, publishThroughOutage, signedMessage, verifySignature } from './broker-messages.js';

// Debian's rabbitmq-server, installed by the background queue (scripts/tools/builds.sh)
await waitForBuilds('rabbitmq');

/** What a consumer of the bound queue reads (amqplib), every message there, acknowledged. */
async function drain(
  url: string,
  queue: string,
): Promise<{ body: string; headers: Record<string, string>; contentType?: string; messageId?: string }[]> {
  const conn = await amqp.connect(url);
  try {
    const ch = await conn.createChannel();
    const out = [];
    for (;;) {
      const m = await ch.get(queue, { noAck: true });
      if (m === false) return out;
      out.push({
        body: m.content.toString(),
        headers: (m.properties.headers ?? {}) as Record<string, string>,
        contentType: m.properties.contentType as string | undefined,
        messageId: m.properties.messageId as string | undefined,
      });
    }
  } finally {
    await conn.close();
  }
}

/**
 * The RabbitMQ destination against Debian's RabbitMQ: a persistent message confirmed by the broker
 * is what a consumer of the bound queue reads, headers per CloudEvents' AMQP binding.
 */
describe('the RabbitMQ destination', () => {
  let rabbit: RabbitMq;
  const destination = createRabbitMqDestination({ addressPolicy: createAddressPolicy() });
  const target = (over: Partial<RabbitMqTarget> = {}): RabbitMqTarget => ({
    type: 'RabbitMQ',
    url: `amqp://127.0.0.1:${rabbit.port}/`,
    exchange: 'payments',
    routingKey: 'stripe',
    username: rabbit.username,
    tls: null,
    secrets: { password: rabbit.password },
    ...over,
  });
  beforeAll(async () => {
    rabbit = await startRabbitMq();
    const conn = await amqp.connect(rabbit.url);
    const ch = await conn.createChannel();
    await ch.assertExchange('payments', 'direct', { durable: true });
    for (const queue of ['payments-q', 'outage-q']) await ch.assertQueue(queue, { durable: true });
    await ch.bindQueue('payments-q', 'payments', 'stripe');
    await ch.bindQueue('outage-q', 'payments', 'outage');
    await conn.close();
  }, 180_000);
  afterAll(async () => {
    await destination.close();
    await rabbit?.stop();
  });

  it('publishes with a publisher confirm; the consumer reads the body, the cloudEvents_ headers and a signature that verifies', async () => {
    const message = signedMessage();
    const outcome = await destination.send(message, target(), { timeoutMs: 10_000 });
    expect(outcome).toMatchObject({ kind: 'success', receipt: { messageId: message.deduplicationId } });
    const [read, ...more] = await drain(rabbit.url, 'payments-q');
    expect(more).toEqual([]);
    expect(read).toMatchObject({ body: message.body.toString(), contentType: 'application/json', messageId: message.deduplicationId });
    expect(read?.headers).toMatchObject({
      cloudEvents_specversion: '1.0',
      cloudEvents_id: message.deduplicationId,
      cloudEvents_source: '/webhook-fanout/stripe',
      cloudEvents_type: 'order.created',
      'X-Webhook-Event-Id': message.deduplicationId,
    });
    expect(() => verifySignature(read?.body ?? '', read?.headers ?? {})).not.toThrow();
  });

  it('a wrong password is refused, final, and never said', async () => {
    const refused = await destination.send(signedMessage(), target({ secrets: { password: 'not-the-password' } }), { timeoutMs: 10_000 });
    expect(refused).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_auth_refused: .*ACCESS_REFUSED/) });
    expect(JSON.stringify(refused)).not.toContain('not-the-password');
  });

  it('a message over max_message_size and an unknown exchange are final; one no queue takes is retried, never counted delivered', async () => {
    const tooLarge = await destination.send(signedMessage({ body: Buffer.alloc(rabbit.maxMessageBytes + 1, 'x') }), target(), {
      timeoutMs: 10_000,
    });
    expect(tooLarge).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_message_too_large: .*message size/) });
    const unknown = await destination.send(signedMessage(), target({ exchange: 'no-such-exchange' }), { timeoutMs: 10_000 });
    expect(unknown).toMatchObject({
      kind: 'permanent',
      error: expect.stringMatching(/^broker_unknown_destination: .*no exchange 'no-such-exchange'/),
    });
    const unroutable = await destination.send(signedMessage(), target({ routingKey: 'nobody-listens' }), { timeoutMs: 10_000 });
    expect(unroutable).toMatchObject({ kind: 'retryable', error: expect.stringMatching(/^broker_unroutable: returned 312 NO_ROUTE/) });
    // and a publish after them still goes (a failed publish closed only its own channel)
    expect((await destination.send(signedMessage(), target(), { timeoutMs: 10_000 })).kind).toBe('success');
    await drain(rabbit.url, 'payments-q');
  });

  it('never dials an address the outbound policy refuses, by literal or by name', async () => {
    const literal = await destination.send(signedMessage(), target({ url: 'amqp://169.254.169.254:5672/' }), { timeoutMs: 5_000 });
    expect(literal).toMatchObject({
      kind: 'permanent',
      statusClass: 'blocked',
      error: expect.stringMatching(/^address_blocked: address 169\.254\.169\.254/),
    });
    const strict = createRabbitMqDestination({ addressPolicy: createAddressPolicy({ deny: ['127.0.0.0/8', '::1/128'] }) });
    try {
      const named = await strict.send(signedMessage(), target({ url: `amqp://localhost:${rabbit.port}/` }), { timeoutMs: 5_000 });
      expect(named).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^address_blocked: /) });
    } finally {
      await strict.close();
    }
  });

  it('the broker down for 30 s mid-run: every message is in the queue, a second copy only of one whose answer was lost', async () => {
    const messages = Array.from({ length: 12 }, () => signedMessage());
    // the deliveries go on while the broker stops, each retried as the delivery's backoff would
    const held = copiesWithinAttempts((message) => destination.send(message, target({ routingKey: 'outage' }), { timeoutMs: 5_000 }));
    const outcomes = await publishThroughOutage({
      messages,
      send: held.send,
      broker: rabbit,
    });

    const failed = outcomes.filter((o) => o.kind === 'retryable');
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((o) => o.kind !== 'success' && o.error.startsWith('broker_unavailable:'))).toBe(true);
    const read = await drain(rabbit.url, 'outage-q');
    held.expectHeld(
      read.map((r) => r.messageId ?? ''),
      messages,
    );
  }, 180_000);
});
