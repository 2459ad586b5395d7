import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { createAwsClients, type AwsClients } from '../../src/transport/aws-clients.js';
import { randomUUID } from 'node:crypto';
import { encodeEventMessage } from '../../src/transport/event-message.js';
import { createQueueConsumer } from '../../src/transport/queue-consumer.js';
import { createQueueDepthProbe } from '../../src/transport/queue-depth.js';
import { queueCalls } from '../../src/transport/queue-calls.js';
import { ensureTopology, type Topology } from '../../src/transport/topology.js';
import { startFauxqsBackend, type Backend } from './backends.js';
import { sleep } from '../support/wait.js';

// The consumer's queue depth gauge, read from an SQS emulator over HTTP: what the dashboard's
// queue and DLQ panels and the WebhookFanoutDLQNotEmpty alert read.

describe('queue depth probe (webhook_fanout_queue_depth_messages)', () => {
  let backend: Backend;
  let aws: AwsClients;
  let topology: Topology;
  beforeAll(async () => {
    backend = await startFauxqsBackend();
    aws = createAwsClients({ region: 'us-east-1', endpoint: backend.endpoint });
    topology = await ensureTopology(aws, { topicName: 'depth-events', queueName: 'depth-events', dlqName: 'depth-dlq' });
  });
  afterAll(async () => {
    aws?.sns.destroy();
    aws?.sqs.destroy();
    await backend?.stop();
  });

  it('reports the visible messages of the queue and of the DLQ its redrive policy names', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const probe = createQueueDepthProbe({ sqs: aws.sqs, queueUrl: topology.queueUrl, metrics, logger: createLogger({ level: 'silent' }) });
    const value = async (queue: string, state: string) =>
      (await metrics.queueDepth.get()).values.find((v) => v.labels.queue === queue && v.labels.state === state)?.value;

    await probe.probe();
    expect(await value('queue', 'visible')).toBe(0);
    expect(await value('dlq', 'visible')).toBe(0);

    for (let i = 0; i < 3; i++) await aws.sqs.send(new SendMessageCommand({ QueueUrl: topology.queueUrl, MessageBody: `e-${i}` }));
    await aws.sqs.send(new SendMessageCommand({ QueueUrl: topology.dlqUrl, MessageBody: 'poison' }));
    await aws.sqs.send(new SendMessageCommand({ QueueUrl: topology.dlqUrl, MessageBody: 'poison-2' }));
    await probe.probe();
    expect(await value('queue', 'visible')).toBe(3);
    expect(await value('dlq', 'visible')).toBe(2);
    expect(await value('queue', 'in_flight')).toBe(0);
  });

  it('a failed read leaves the last values and stop() ends the ticks', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const probe = createQueueDepthProbe({
      sqs: aws.sqs,
      queueUrl: `${topology.queueUrl}-gone`,
      metrics,
      logger: createLogger({ level: 'silent' }),
      intervalMs: 50,
    });
    probe.start();
    await sleep(200);
    await probe.stop();
    expect((await metrics.queueDepth.get()).values).toEqual([]);
  });

  it('the consumer observes how long each message waited (webhook_fanout_queue_message_age_seconds)', async () => {
    const q = await ensureTopology(aws, { topicName: 'age-events', queueName: 'age-events', dlqName: 'age-dlq' });
    const metrics = createMetrics({ defaultMetrics: false });
    const handled: string[] = [];
    await aws.sqs.send(new SendMessageCommand({ QueueUrl: q.queueUrl, MessageBody: encodeEventMessage(randomUUID()) }));
    await sleep(300); // it waits a little in the queue
    const consumer = createQueueConsumer({
      sqs: aws.sqs,
      calls: () => queueCalls({ sqs: aws.sqs, aws: { region: 'us-east-1', endpoint: backend.endpoint } }),
      queueUrl: q.queueUrl,
      handle: async (id) => {
        handled.push(id);
        return 'started';
      },
      metrics,
      waitTimeSeconds: 1,
    });
    consumer.start();
    try {
      await expect.poll(() => handled.length, { timeout: 20_000 }).toBe(1);
    } finally {
      await consumer.stop();
    }
    const age = (await metrics.queueMessageAge.get()).values;
    expect(age.find((v) => v.metricName === 'webhook_fanout_queue_message_age_seconds_count')?.value).toBe(1);
    const sum = age.find((v) => v.metricName === 'webhook_fanout_queue_message_age_seconds_sum')?.value ?? 0;
    expect(sum).toBeGreaterThanOrEqual(0.25);
    expect(sum).toBeLessThan(30);
  });
});
