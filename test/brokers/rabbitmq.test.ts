import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForBuilds } from '../support/builds.js';
import { startRabbitMq, type RabbitMq } from '../support/rabbitmq.js';

// Debian's rabbitmq-server, installed by the background queue (scripts/tools/builds.sh)
await waitForBuilds('rabbitmq');

/** The RabbitMQ the destination tests start (test/support/rabbitmq.ts), read back with amqplib. */
describe('the test RabbitMQ (Debian rabbitmq-server, a node of its own)', () => {
  let rabbit: RabbitMq;
  beforeAll(async () => {
    rabbit = await startRabbitMq();
  }, 180_000);
  afterAll(async () => {
    await rabbit?.stop();
  });

  it('confirms a message published to an exchange and a consumer of its bound queue reads it back', async () => {
    const conn = await amqp.connect(rabbit.url);
    try {
      const ch = await conn.createConfirmChannel();
      await ch.assertExchange('smoke', 'direct', { durable: true });
      const { queue } = await ch.assertQueue('smoke-q', { durable: true });
      await ch.bindQueue(queue, 'smoke', 'orders');
      ch.publish('smoke', 'orders', Buffer.from('{"hello":"rabbit"}'), { persistent: true, headers: { cloudEvents_id: 'evt-1' } });
      await ch.waitForConfirms();
      const got = await ch.get(queue, { noAck: true });
      expect(got && got.content.toString()).toBe('{"hello":"rabbit"}');
      expect(got && got.properties.headers).toMatchObject({ cloudEvents_id: 'evt-1' });
    } finally {
      await conn.close();
    }
  });

  it('refuses a wrong password', async () => {
    await expect(amqp.connect(rabbit.url.replace(rabbit.password, 'wrong'))).rejects.toThrow(/ACCESS_REFUSED|403/);
  });
});
