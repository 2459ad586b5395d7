import { Admin } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaTarget } from '../../src/delivery/broker-targets.js';
import type { Message } from '../../src/delivery/message.js';
import type { DeliveryOutcome } from '../../src/delivery/types.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createKafkaDestination } from '../../src/destinations/kafka/kafka-destination.js';
import { waitForBuilds } from '../support/builds.js';
import { startKafka, type KafkaBroker } from '../support/kafka.js';
import { plainKafkaTarget, signedMessage } from './broker-messages.js';

// Kafka's jars come from Maven Central through the background queue (scripts/tools/builds.sh)
await waitForBuilds('kafka');

/**
 * A topic remembered missing by its producer (looked for in vain through an attempt's whole
 * window: topic-recheck.ts) on a real Kafka 4 (KRaft): the memory spares the next attempts the
 * whole window, never the read that finds a topic created meanwhile, and one attempt's window
 * never ends another's (review9, on 066ba88: 16 of 16 records failed final; 3 of 3 long attempts).
 */
describe('the Kafka destination and a topic remembered missing', () => {
  let kafka: KafkaBroker;
  const target = (topic: string): KafkaTarget => plainKafkaTarget(kafka.bootstrap, topic);
  beforeAll(async () => {
    kafka = await startKafka();
  }, 180_000);
  afterAll(async () => {
    await kafka?.stop();
  });

  it('records sent while the team creates the topic within 10 s of a miss are written, not failed final', async () => {
    const TOPICS = 8;
    const admin = new Admin({ clientId: 'wf-test-admin', bootstrapBrokers: [kafka.bootstrap] });
    const coalesced = createKafkaDestination({ addressPolicy: createAddressPolicy() });
    const single = createKafkaDestination({ addressPolicy: createAddressPolicy(), produce: 'single' });
    const sent: { topic: string; message: Message; outcome: DeliveryOutcome }[] = [];
    try {
      for (const [produce, dest] of [
        ['coalesced', coalesced],
        ['single', single],
      ] as const)
        for (let i = 0; i < TOPICS; i++) {
          const topic = `late-${produce}-${i}`;
          // the first delivery: the topic does not exist yet (1 s attempt: 500 ms window), final
          const first = await dest.send(signedMessage(), target(topic), { timeoutMs: 1_000 });
          expect(first).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^broker_unknown_destination/) });
          // the team creates it at once (well within the 10 s); the endpoint's next event goes meanwhile
          const message = signedMessage();
          const [, outcome] = await Promise.all([
            admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 }),
            dest.send(message, target(topic), { timeoutMs: 10_000 }),
          ]);
          sent.push({ topic, message, outcome });
        }
    } finally {
      await Promise.all([admin.close(), single.close(), coalesced.close()]);
    }
    const failed = sent
      .filter((s) => s.outcome.kind !== 'success')
      .map((s) => `${s.topic}: ${s.outcome.kind === 'success' ? '' : `${s.outcome.kind} ${s.outcome.error}`}`);
    expect(failed).toEqual([]);
    const records = await kafka.consume(/late-.*/, sent.length + 5, 8_000);
    expect(records.map((r) => r.headers.ce_id).sort()).toEqual(sent.map((s) => s.message.deduplicationId).sort());
  }, 180_000);
  it("one endpoint's short window does not cut another's: a 10 s attempt waiting for a topic created 800 ms in is written", async () => {
    const admin = new Admin({ clientId: 'wf-test-admin', bootstrapBrokers: [kafka.bootstrap] });
    const dest = createKafkaDestination({ addressPolicy: createAddressPolicy(), produce: 'single' });
    const results: string[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const topic = `shared-${i}`;
        // two endpoints of the same cluster and credentials (one producer), the same topic, not there
        // yet: one with timeoutSeconds 1 (a 500 ms window), one with 10 (a 2 s window); the topic is
        // created 800 ms after they began, well within the long attempt's own window
        const started = performance.now();
        const short = dest.send(signedMessage(), target(topic), { timeoutMs: 1_000 });
        const long = dest.send(signedMessage(), target(topic), { timeoutMs: 10_000 });
        await new Promise((resolve) => setTimeout(resolve, 800));
        await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
        const [, outcome] = await Promise.all([short, long]);
        results.push(
          `${topic}: ${outcome.kind === 'success' ? 'success' : `${outcome.kind} ${outcome.error}`} after ${Math.round(performance.now() - started)} ms`,
        );
      }
    } finally {
      await Promise.all([admin.close(), dest.close()]);
    }
    expect(results.filter((r) => !/: success/.test(r))).toEqual([]);
  }, 120_000);
});
