import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { KafkaTarget } from '../../src/delivery/broker-targets.js';
import type { Message } from '../../src/delivery/message.js';
import type { DeliveryOutcome } from '../../src/delivery/types.js';
import { sleep } from '../support/wait.js';
import { standardWebhooksSignature } from '../../src/delivery/signature.js';

/** The endpoints' Standard Webhooks key in these tests; the consumers verify with the standardwebhooks library. */
export const SIGNING_KEY = `whsec_${Buffer.from('broker-destination-test-key-0123').toString('base64')}`;

/**
 * One attempt's message as the deliver activity builds it (delivery/message.ts): a JSON body, the
 * event's CloudEvents attributes, signed with Standard Webhooks, the X-Webhook-* headers.
 */
export function signedMessage(
  opts: { body?: Buffer; format?: Message['format']; orderingKey?: string | null; eventId?: string } = {},
): Message {
  const eventId = opts.eventId ?? randomUUID();
  const body = opts.body ?? Buffer.from(JSON.stringify({ id: `evt_${eventId.slice(0, 8)}`, type: 'order.created', amount: 4200 }));
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    body,
    contentType: 'application/json',
    format: opts.format ?? 'CloudEventsBinary',
    attributes: {
      specversion: '1.0',
      id: eventId,
      source: '/webhook-fanout/stripe',
      type: 'order.created',
      time: new Date().toISOString(),
    },
    formatHeaders: {},
    headers: {
      'webhook-id': eventId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': standardWebhooksSignature(eventId, timestamp, body, [SIGNING_KEY]),
      'X-Webhook-Event-Id': eventId,
      'X-Webhook-Source': 'stripe',
      'X-Webhook-Event-Type': 'order.created',
      'X-Webhook-Delivery-Id': randomUUID(),
      'X-Webhook-Attempt': '1',
    },
    deduplicationId: eventId,
    orderingKey: opts.orderingKey ?? null,
    meta: { eventId, source: 'stripe', eventType: 'order.created', deliveryId: randomUUID(), attempt: 1 },
  };
}

/** Whether the signature headers a consumer read verify over the body it read (throws when not). */
export function verifySignature(body: string | Buffer, headers: Record<string, string>): unknown {
  return new Webhook(SIGNING_KEY).verify(body.toString(), {
    'webhook-id': headers['webhook-id'] ?? '',
    'webhook-timestamp': headers['webhook-timestamp'] ?? '',
    'webhook-signature': headers['webhook-signature'] ?? '',
  });
}

/**
 * Publishes the messages one after the other, each retried every second until acknowledged (as
 * the delivery's backoff would) and failing on a final outcome, while the broker stops 2 s in for
 * 30 s (FAULTS-like: `halt` then `start` on the same data). Resolves with every attempt's outcome.
 */
export async function publishThroughOutage(opts: {
  messages: readonly Message[];
  send: (message: Message) => Promise<DeliveryOutcome>;
  broker: { halt(): Promise<void>; start(): Promise<void> };
}): Promise<DeliveryOutcome[]> {
  const outcomes: DeliveryOutcome[] = [];
  const run = (async () => {
    for (const message of opts.messages) {
      for (;;) {
        const outcome = await opts.send(message);
        outcomes.push(outcome);
        if (outcome.kind === 'success') break;
        if (outcome.kind === 'permanent') throw new Error(`a final outcome during the outage: ${outcome.error}`);
        await sleep(1_000);
      }
      await sleep(500);
    }
  })();
  await sleep(2_000);
  await opts.broker.halt();
  await sleep(30_000);
  await opts.broker.start();
  await run;
  return outcomes;
}

/**
 * What a broker that does not de-duplicate holds after an outage (Kafka, RabbitMQ): every message,
 * and a second copy only of one whose attempt ended without the broker's answer (it may have
 * written the message before the answer was lost: delivery is at least once; docs/destinations.md),
 * so at most one copy per attempt; nothing else. `send` counts each message's attempts.
 */
export function copiesWithinAttempts(send: (message: Message) => Promise<DeliveryOutcome>) {
  const attempts = new Map<string, number>();
  return {
    send: (message: Message) => {
      attempts.set(message.deduplicationId, (attempts.get(message.deduplicationId) ?? 0) + 1);
      return send(message);
    },
    expectHeld(read: readonly string[], messages: readonly Message[]) {
      const copies = new Map<string, number>();
      for (const id of read) copies.set(id, (copies.get(id) ?? 0) + 1);
      expect([...copies.keys()].sort()).toEqual(messages.map((m) => m.deduplicationId).sort());
      for (const [id, n] of copies) expect(n, `copies of ${id}`).toBeLessThanOrEqual(attempts.get(id) ?? 0);
    },
  };
}

/** A Kafka endpoint's target on the test broker: PLAINTEXT, no TLS, no SASL. */
export function plainKafkaTarget(bootstrap: string, topic: string): KafkaTarget {
  return { type: 'Kafka', bootstrapServers: [bootstrap], topic, tls: null, sasl: null, secrets: {} };
}
