import { Admin } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaTarget } from '../../src/delivery/broker-targets.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { classifyKafkaError } from '../../src/destinations/kafka/classify.js';
import { createKafkaDestination } from '../../src/destinations/kafka/kafka-destination.js';
import { waitForBuilds } from '../support/builds.js';
import { startKafka, type KafkaBroker } from '../support/kafka.js';
import { eventually, sleep } from '../support/wait.js';
import { plainKafkaTarget, signedMessage } from './broker-messages.js';

// Kafka's jars come from Maven Central through the background queue (scripts/tools/builds.sh)
await waitForBuilds('kafka');

/**
 * The Kafka destination while a partition has no leader, on a real Kafka 4 (KRaft) of two nodes:
 * node 1 the controller and a broker, node 2 a broker started and restarted by the test. A file of
 * its own: its second node, its restart and the console consumer's group must not depend on which
 * tests ran before it (review9).
 */
describe('the Kafka destination and a leader election', () => {
  let kafka: KafkaBroker;
  const target = (topic: string): KafkaTarget => plainKafkaTarget(kafka.bootstrap, topic);
  beforeAll(async () => {
    kafka = await startKafka();
  }, 180_000);
  afterAll(async () => {
    await kafka?.stop();
  });

  it('a partition without a leader (its only broker restarting) when the attempt begins: the attempt waits for the election, and the record is written once, coalesced as single', async () => {
    // the console consumer's group lives in __consumer_offsets (one partition), created on its first
    // use: first used while node 2 is in the cluster, it may be placed there, and the read-back
    // after node 2's restart then read nothing (review9: 0 records 3 of 3 runs alone); created now, on node 1
    await kafka.createTopic('before-node-2', 1);
    expect(await kafka.consume('before-node-2', 1, 3_000)).toEqual([]);
    const node = await kafka.addBroker();
    const admin = new Admin({ clientId: 'wf-test-admin', bootstrapBrokers: [kafka.bootstrap] });
    const single = createKafkaDestination({ addressPolicy: createAddressPolicy(), produce: 'single' });
    const coalesced = createKafkaDestination({ addressPolicy: createAddressPolicy() });
    const topic = 'leaderless';
    const messages = Array.from({ length: 6 }, () => signedMessage());
    try {
      await admin.createTopics({ topics: [topic], assignments: [{ partition: 0, brokers: [node.nodeId] }] });
      await eventually(
        async () => (await admin.metadata({ topics: [topic], forceUpdate: true })).topics.get(topic)?.partitions[0]?.leader === node.nodeId,
        {
          what: `node ${node.nodeId} to lead ${topic}`,
        },
      );
      // the broker stops (a controlled shutdown: the controller takes its leadership away, no other replica to give it to)
      await node.halt();
      await eventually(
        async () => {
          try {
            await admin.metadata({ topics: [topic], forceUpdate: true });
            return false;
          } catch (error) {
            return /LEADER_NOT_AVAILABLE/.test(JSON.stringify(classifyKafkaError(error)));
          }
        },
        { what: `${topic} to have no leader` },
      );
      // the attempts begin while it has none; the broker is back (and leads again) seconds later: named
      // leader in the metadata a moment before its listener takes connections, which are refused
      // meanwhile (nothing sent: waited for too, within the attempt)
      const sending = Promise.all(messages.map((m, i) => (i % 2 === 0 ? coalesced : single).send(m, target(topic), { timeoutMs: 30_000 })));
      await sleep(300);
      await node.start();
      const outcomes = await sending;
      expect(outcomes.map((o) => (o.kind === 'success' ? 'success' : o.error))).toEqual(messages.map(() => 'success'));
      // each once (the broker refused nothing it wrote, nothing was sent twice); read again while
      // the console consumer, started as the restarted broker settles, comes back with nothing
      const records = await eventually(async () => {
        const read = await kafka.consume(topic, messages.length + 5, 8_000);
        return read.length >= messages.length && read;
      }, 60_000);
      expect(records.map((r) => r.headers.ce_id).sort()).toEqual(messages.map((m) => m.deduplicationId).sort());
    } finally {
      await Promise.all([admin.close(), single.close(), coalesced.close()]);
      await node.stop();
    }
  }, 180_000);
});
