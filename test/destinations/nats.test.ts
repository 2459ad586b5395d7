import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsTarget } from '../../src/delivery/broker-targets.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createNatsDestination } from '../../src/destinations/nats/nats-destination.js';
import { waitForBuilds } from '../support/builds.js';
import { startNats, type NatsServer } from '../support/nats.js';
import { publishThroughOutage, signedMessage, verifySignature } from './broker-messages.js';

// Debian's nats-server, installed by the background queue (scripts/tools/builds.sh)
await waitForBuilds('nats');

/**
 * The NATS destination against Debian's nats-server with JetStream: what the stream acknowledged
 * is what NATS's own client reads from it, headers per CloudEvents' NATS binding, the event id as
 * Nats-Msg-Id so a second publish of it is stored once.
 */
describe('the NATS JetStream destination', () => {
  let nats: NatsServer;
  const destination = createNatsDestination({ addressPolicy: createAddressPolicy() });
  const target = (over: Partial<NatsTarget> = {}): NatsTarget => ({
    type: 'NATS',
    servers: [nats.url],
    subject: 'payments.stripe',
    username: nats.username,
    tls: null,
    secrets: { password: nats.password },
    ...over,
  });
  const reader = async <T>(read: (nc: NatsConnection) => Promise<T>): Promise<T> => {
    const nc = await connect({ servers: nats.url, user: nats.username, pass: nats.password });
    try {
      return await read(nc);
    } finally {
      await nc.close();
    }
  };
  beforeAll(async () => {
    nats = await startNats();
    await reader(async (nc) => {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'PAYMENTS', subjects: ['payments.>'] });
      await jsm.streams.add({ name: 'OUTAGE', subjects: ['outage.>'] });
    });
  }, 60_000);
  afterAll(async () => {
    await destination.close();
    await nats?.stop();
  });

  it('publishes with a JetStream ack; the stream holds the body, ce- headers and a signature that verifies at the receipt sequence; a second publish of the event is stored once', async () => {
    const message = signedMessage();
    const outcome = await destination.send(message, target(), { timeoutMs: 10_000 });
    expect(outcome).toMatchObject({ kind: 'success', receipt: { sequence: '1' } });
    const again = await destination.send(message, target(), { timeoutMs: 10_000 });
    expect(again).toMatchObject({ kind: 'success', receipt: { sequence: '1' }, body: expect.stringContaining('duplicate') });

    const stored = await reader(async (nc) => {
      const jsm = await jetstreamManager(nc);
      const m = await jsm.streams.getMessage('PAYMENTS', { seq: 1 });
      const headers: Record<string, string> = {};
      for (const [k, v] of m?.header ?? []) headers[k] = v[0] ?? '';
      return { body: m?.string() ?? '', headers, count: (await jsm.streams.info('PAYMENTS')).state.messages };
    });
    expect(stored.count).toBe(1);
    expect(stored.body).toBe(message.body.toString());
    expect(stored.headers).toMatchObject({
      'ce-specversion': '1.0',
      'ce-id': message.deduplicationId,
      'ce-source': '/webhook-fanout/stripe',
      'ce-type': 'order.created',
      'ce-datacontenttype': 'application/json',
      'Nats-Msg-Id': message.deduplicationId,
      'X-Webhook-Event-Id': message.deduplicationId,
    });
    expect(() => verifySignature(stored.body, stored.headers)).not.toThrow();
  });

  it('a wrong password is refused, final, and never said', async () => {
    const refused = await destination.send(signedMessage(), target({ secrets: { password: 'not-the-password' } }), { timeoutMs: 10_000 });
    expect(refused).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_auth_refused: .*Authorization Violation/i) });
    expect(JSON.stringify(refused)).not.toContain('not-the-password');
  });

  it('a message over max_payload and a subject no stream takes are final', async () => {
    const tooLarge = await destination.send(signedMessage({ body: Buffer.alloc(nats.maxPayloadBytes + 1, 'x') }), target(), {
      timeoutMs: 10_000,
    });
    expect(tooLarge).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_message_too_large: .*max_payload/) });
    const unknown = await destination.send(signedMessage(), target({ subject: 'nowhere.stripe' }), { timeoutMs: 5_000 });
    expect(unknown).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_unknown_destination: no JetStream stream/) });
  });

  it('never dials an address the outbound policy refuses', async () => {
    const refused = await destination.send(signedMessage(), target({ servers: ['nats://169.254.169.254:4222'] }), { timeoutMs: 5_000 });
    expect(refused).toMatchObject({
      kind: 'permanent',
      statusClass: 'blocked',
      error: expect.stringMatching(/^address_blocked: address 169\.254\.169\.254/),
    });
  });

  it('the server down for 30 s mid-run: every message is in the stream once', async () => {
    const messages = Array.from({ length: 12 }, () => signedMessage());
    // the deliveries go on while the broker stops, each retried as the delivery's backoff would
    const outcomes = await publishThroughOutage({
      messages,
      send: (message) => destination.send(message, target({ subject: 'outage.stripe' }), { timeoutMs: 3_000 }),
      broker: nats,
    });

    expect(outcomes.filter((o) => o.kind === 'retryable').length).toBeGreaterThan(0);
    const ids = await reader(async (nc) => {
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info('OUTAGE');
      const out: string[] = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage('OUTAGE', { seq });
        out.push(m?.header.get('ce-id') ?? '');
      }
      return out;
    });
    expect(ids.sort()).toEqual(messages.map((m) => m.deduplicationId).sort());
  }, 180_000);
});
