import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { freePort } from '../../src/dev/ports.js';
import { isAppError } from '../../src/domain/errors.js';
import { createAwsClients, type AwsClients } from '../../src/transport/aws-clients.js';
import { createEventPublisher } from '../../src/transport/publisher.js';
import { ensureTopology, type Topology } from '../../src/transport/topology.js';

describe('batching SNS publisher', () => {
  let fauxqs: Awaited<ReturnType<typeof startFauxqs>>;
  let aws: AwsClients;
  let topology: Topology;
  beforeAll(async () => {
    fauxqs = await startFauxqs({ port: 0, logger: false });
    aws = createAwsClients({ region: 'us-east-1', endpoint: fauxqs.address });
    topology = await ensureTopology(aws, { topicName: 'batch-t', queueName: 'batch-q', dlqName: 'batch-dlq' });
  });
  afterAll(async () => {
    aws?.sns.destroy();
    aws?.sqs.destroy();
    await fauxqs?.stop();
  });

  it('publishes 25 concurrent ids in batches; every caller resolves and every id arrives once', async () => {
    const publisher = createEventPublisher({
      sns: aws.sns,
      aws: { region: 'us-east-1', endpoint: fauxqs.address },
      topicArn: topology.topicArn,
    });
    const ids = Array.from({ length: 25 }, () => randomUUID());
    await Promise.all(ids.map((id) => publisher.publish(id)));
    const seen: string[] = [];
    for (let i = 0; i < 10 && seen.length < 25; i++) {
      const r = await aws.sqs.send(new ReceiveMessageCommand({ QueueUrl: topology.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      for (const m of r.Messages ?? []) seen.push((JSON.parse(m.Body ?? '{}') as { eventId: string }).eventId);
    }
    expect(seen.sort()).toEqual([...ids].sort());
  });

  it('rejects every waiting caller with a transient error when the topic is unreachable', async () => {
    const deadOptions = { region: 'us-east-1', endpoint: `http://127.0.0.1:${await freePort()}`, maxAttempts: 1 };
    const dead = createAwsClients(deadOptions);
    const publisher = createEventPublisher({ sns: dead.sns, aws: deadOptions, topicArn: topology.topicArn });
    const results = await Promise.allSettled([randomUUID(), randomUUID(), randomUUID()].map((id) => publisher.publish(id)));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const r of results) {
      const reason = (r as PromiseRejectedResult).reason as unknown;
      expect(isAppError(reason) && reason.kind === 'transient' && reason.code === 'publish_failed').toBe(true);
    }
    await publisher.close();
    dead.sns.destroy();
    dead.sqs.destroy();
  });

  it('refuses an id that is not a UUID before it reaches the topic', async () => {
    const publisher = createEventPublisher({
      sns: aws.sns,
      aws: { region: 'us-east-1', endpoint: fauxqs.address },
      topicArn: topology.topicArn,
    });
    await expect(publisher.publish('not-a-uuid')).rejects.toMatchObject({ kind: 'internal', code: 'unpublishable_event_id' });
  });
});
