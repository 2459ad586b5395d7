import { Producer, stringSerializers } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForBuilds } from '../support/builds.js';
import { startKafka, type KafkaBroker } from '../support/kafka.js';

// Kafka's jars come from Maven Central through the background queue (scripts/tools/builds.sh)
await waitForBuilds('kafka');

/**
 * The Kafka the destination tests start (test/support/kafka.ts): a record acknowledged by all
 * in-sync replicas is read back, headers and key included, by Kafka's own console consumer.
 */
describe('the test Kafka (KRaft, from Maven Central)', () => {
  let kafka: KafkaBroker;
  beforeAll(async () => {
    kafka = await startKafka();
  }, 180_000);
  afterAll(async () => {
    await kafka?.stop();
  });

  it('acknowledges a record with acks=all and its console consumer reads it back', async () => {
    await kafka.createTopic('smoke', 2);
    const producer = new Producer({ clientId: 'smoke', bootstrapBrokers: [kafka.bootstrap], serializers: stringSerializers, acks: -1 });
    try {
      const result = await producer.send({
        messages: [{ topic: 'smoke', key: 'k-1', value: '{"hello":"kafka"}', headers: { ce_id: 'evt-1', ce_type: 'order.created' } }],
      });
      expect(result.offsets?.[0]).toMatchObject({ topic: 'smoke', offset: 0n });
    } finally {
      await producer.close();
    }
    const [record, ...rest] = await kafka.consume('smoke', 1);
    expect(rest).toEqual([]);
    expect(record).toMatchObject({
      offset: 0,
      key: 'k-1',
      value: '{"hello":"kafka"}',
      headers: { ce_id: 'evt-1', ce_type: 'order.created' },
    });
  });
});
