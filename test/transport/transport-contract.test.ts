import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { sleep } from '../support/wait.js';
import { GetSubscriptionAttributesCommand, ListSubscriptionsByTopicCommand, ListTopicsCommand } from '@aws-sdk/client-sns';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permanent, transient } from '../../src/domain/errors.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { createAwsClients, type AwsClients, type AwsClientsOptions } from '../../src/transport/aws-clients.js';
import { createEventPublisher } from '../../src/transport/publisher.js';
import { createQueueConsumer, type QueueConsumer } from '../../src/transport/queue-consumer.js';
import { ensureTopology, type Topology } from '../../src/transport/topology.js';
import { AWS_TRANSPORTS } from '../../src/config/settings.js';
import { queueCalls } from '../../src/transport/queue-calls.js';
import { BACKENDS, type Backend } from './backends.js';
import { captureLogger, deferred, queueDepth, queueMessagesCount, receiveOne, uniqueSuffix, waitFor } from './helpers.js';

/**
 * One contract, two independent SNS/SQS implementations: what passes on both is what we rely on
 * from AWS. Each test gets its own topic and queues. Each runs with both ways of making the hot
 * calls (AWS_TRANSPORT): our signed POSTs and the SDK's send(), the way back if ours breaks.
 */
const CASES = BACKENDS.flatMap((backend) => AWS_TRANSPORTS.map((transport) => ({ ...backend, transport })));

describe.each(CASES)('transport contract on $name, $transport calls', (kind) => {
  let backend: Backend;
  let clients: AwsClients;
  let awsOptions: AwsClientsOptions;
  const consumers: QueueConsumer[] = [];
  const publishers: Array<ReturnType<typeof createEventPublisher>> = [];

  /** the production publisher (ingest's): event ids batched into signed PublishBatch calls */
  function publisherFor(topicArn: string): ReturnType<typeof createEventPublisher> {
    const p = createEventPublisher({ sns: clients.sns, aws: awsOptions, topicArn });
    publishers.push(p);
    return p;
  }

  beforeAll(async () => {
    backend = await kind.start();
    awsOptions = { region: 'us-east-1', endpoint: backend.endpoint, env: {}, transport: kind.transport };
    clients = createAwsClients(awsOptions);
  });

  afterAll(async () => {
    await Promise.allSettled(consumers.map((c) => c.stop()));
    await Promise.allSettled(publishers.map((p) => p.close()));
    clients?.sns.destroy();
    clients?.sqs.destroy();
    await backend?.stop();
  });

  /** a fresh topic -> queue -> DLQ with a 1 s visibility timeout, so redelivery is quick */
  async function freshTopology(): Promise<Topology> {
    const s = uniqueSuffix();
    return ensureTopology(clients, {
      topicName: `events-${s}`,
      queueName: `events-${s}`,
      dlqName: `webhook-fanout-dlq-${s}`,
      visibilityTimeoutSeconds: 1,
    });
  }

  function consumer(opts: Omit<Parameters<typeof createQueueConsumer>[0], 'sqs' | 'calls'>): QueueConsumer {
    const c = createQueueConsumer({ sqs: clients.sqs, calls: () => queueCalls({ sqs: clients.sqs, aws: awsOptions }), ...opts });
    consumers.push(c);
    return c;
  }

  it('ensureTopology creates topic, queue, DLQ, redrive, policy and one raw subscription, idempotently', async () => {
    // the default names: this backend is private to this suite
    const first = await ensureTopology(clients);
    const second = await ensureTopology(clients);
    expect(second).toEqual(first);
    expect(first.dlqUrl).toMatch(/\/webhook-fanout-dlq$/);
    expect(first.dlqArn).toMatch(/:webhook-fanout-dlq$/);
    expect(first.queueUrl).toMatch(/\/webhook-fanout-events$/);
    expect(first.queueArn).toMatch(/:webhook-fanout-events$/);
    expect(first.topicArn).toMatch(/^arn:aws:sns:us-east-1:\d+:webhook-fanout-events$/);

    const topics = await clients.sns.send(new ListTopicsCommand({}));
    expect(topics.Topics?.filter((t) => t.TopicArn === first.topicArn)).toHaveLength(1);

    const attrs = await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: first.queueUrl, AttributeNames: ['All'] }));
    const redrive = JSON.parse(attrs.Attributes?.RedrivePolicy ?? '{}') as Record<string, unknown>;
    expect(redrive.deadLetterTargetArn).toBe(first.dlqArn);
    expect(Number(redrive.maxReceiveCount)).toBe(5);
    expect(attrs.Attributes?.VisibilityTimeout).toBe('30');
    const policy = JSON.parse(attrs.Attributes?.Policy ?? '{}') as {
      Statement: { Action: string; Resource: string; Condition: { ArnEquals: Record<string, string> } }[];
    };
    expect(policy.Statement[0]?.Action).toBe('sqs:SendMessage');
    expect(policy.Statement[0]?.Resource).toBe(first.queueArn);
    expect(policy.Statement[0]?.Condition.ArnEquals['aws:SourceArn']).toBe(first.topicArn);

    const subs = await clients.sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: first.topicArn }));
    const sqsSubs = subs.Subscriptions?.filter((s) => s.Protocol === 'sqs') ?? [];
    expect(sqsSubs).toHaveLength(1);
    expect(sqsSubs[0]?.Endpoint).toBe(first.queueArn);
    const subAttrs = await clients.sns.send(new GetSubscriptionAttributesCommand({ SubscriptionArn: sqsSubs[0]?.SubscriptionArn }));
    expect(subAttrs.Attributes?.RawMessageDelivery).toBe('true');
  });

  it('publish delivers the raw {"eventId"} body to the queue, not the SNS envelope', async () => {
    const topo = await freshTopology();
    const publisher = publisherFor(topo.topicArn);
    const eventId = randomUUID();
    await publisher.publish(eventId);
    const message = await receiveOne(clients.sqs, topo.queueUrl);
    expect(message?.Body).toBe(JSON.stringify({ eventId }));
  });

  it('the consumer hands the event id to handle() and deletes the message after success', async () => {
    const topo = await freshTopology();
    const metrics = createMetrics({ defaultMetrics: false });
    const publisher = publisherFor(topo.topicArn);
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const seen: string[] = [];
    const c = consumer({
      queueUrl: topo.queueUrl,
      metrics,
      handle: async (eventId) => {
        seen.push(eventId);
        return 'started';
      },
    });
    c.start();
    expect(c.running).toBe(true);
    for (const id of ids) await publisher.publish(id);
    await waitFor(() => (seen.length >= ids.length ? true : undefined), 'three handled events');
    await c.stop();
    expect(c.running).toBe(false);
    expect([...seen].sort()).toEqual([...ids].sort());
    expect(await queueMessagesCount(metrics, 'started')).toBe(3);
    // deleted, not merely invisible: after the 1 s visibility timeout nothing comes back either
    expect(await queueDepth(clients.sqs, topo.queueUrl)).toEqual({ visible: 0, notVisible: 0 });
    await sleep(1_200);
    expect(await receiveOne(clients.sqs, topo.queueUrl, 1)).toBeUndefined();
  });

  it('the trace context published with an event reaches the handler through the message attributes (docs/tracing.md)', async () => {
    const topo = await freshTopology();
    const publisher = publisherFor(topo.topicArn);
    const traced = randomUUID();
    const untraced = randomUUID();
    const trace = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'vendor=a1' };
    const seen = new Map<string, unknown>();
    const c = consumer({
      queueUrl: topo.queueUrl,
      handle: async (eventId, carried) => {
        seen.set(eventId, carried);
        return 'started';
      },
    });
    c.start();
    await publisher.publish(traced, trace);
    await publisher.publish(untraced);
    await waitFor(() => (seen.size >= 2 ? true : undefined), 'two handled events');
    await c.stop();
    expect(seen.get(traced)).toEqual(trace);
    expect(seen.get(untraced)).toBeUndefined();
  });

  it('a handler that throws leaves the message, which is redelivered after the visibility timeout', async () => {
    const topo = await freshTopology();
    const metrics = createMetrics({ defaultMetrics: false });
    const publisher = publisherFor(topo.topicArn);
    const eventId = randomUUID();
    const calls: number[] = [];
    const c = consumer({
      queueUrl: topo.queueUrl,
      metrics,
      handle: async (id) => {
        expect(id).toBe(eventId);
        calls.push(Date.now());
        if (calls.length === 1) throw new Error('temporal unavailable');
      },
    });
    c.start();
    await publisher.publish(eventId);
    await waitFor(() => (calls.length >= 2 ? true : undefined), 'the redelivery');
    await c.stop();
    expect(calls).toHaveLength(2);
    const [first = 0, second = 0] = calls;
    expect(second - first).toBeGreaterThanOrEqual(900);
    expect(await queueMessagesCount(metrics, 'error')).toBe(1);
    expect(await queueMessagesCount(metrics, 'handled')).toBe(1);
    expect(await queueDepth(clients.sqs, topo.queueUrl)).toEqual({ visible: 0, notVisible: 0 });
  });

  // what a message in the DLQ carries: its body, and why and which message it was
  const deadLetters = async (dlqUrl: string) => {
    const res = await clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ['All'] }),
    );
    return (res.Messages ?? []).map((m) => ({
      body: m.Body,
      reason: m.MessageAttributes?.['webhook-fanout-reason']?.StringValue,
      messageId: m.MessageAttributes?.['webhook-fanout-message-id']?.StringValue,
    }));
  };

  it('a poison message goes to the DLQ after one receive, with its body and the reason, not after five', async () => {
    const topo = await freshTopology();
    const metrics = createMetrics({ defaultMetrics: false });
    const { logger, records } = captureLogger();
    const handled: string[] = [];
    const c = consumer({
      queueUrl: topo.queueUrl,
      metrics,
      logger,
      waitTimeSeconds: 1,
      handle: async (id) => {
        handled.push(id);
      },
    });
    const sent = await clients.sqs.send(new SendMessageCommand({ QueueUrl: topo.queueUrl, MessageBody: '{"eventId":"not-a-uuid"}' }));
    c.start();
    const dead = await waitFor(
      async () => {
        const got = await deadLetters(topo.dlqUrl);
        return got.length > 0 ? got : undefined;
      },
      'the poison message in the DLQ',
      20_000,
    );
    await c.stop();
    expect(dead).toEqual([{ body: '{"eventId":"not-a-uuid"}', reason: 'invalid: not {"eventId": <uuid>}', messageId: sent.MessageId }]);
    expect(await queueMessagesCount(metrics, 'invalid')).toBe(1);
    expect(await queueMessagesCount(metrics, 'dead_lettered')).toBe(1);
    expect(records.filter((r) => r.messageId === sent.MessageId).map((r) => Number(r.receiveCount))).toEqual([1]);
    expect(handled).toEqual([]);
    expect(await queueDepth(clients.sqs, topo.queueUrl)).toEqual({ visible: 0, notVisible: 0 });
  });

  it('a permanent error of the handler dead-letters at once; a transient one is redelivered', async () => {
    const topo = await freshTopology();
    const metrics = createMetrics({ defaultMetrics: false });
    const permanentId = randomUUID();
    const transientId = randomUUID();
    const seen: string[] = [];
    const c = consumer({
      queueUrl: topo.queueUrl,
      metrics,
      waitTimeSeconds: 1,
      handle: async (id) => {
        seen.push(id);
        if (id === permanentId) throw permanent('event_not_found', `event ${id} not found`);
        if (id === transientId && seen.filter((s) => s === id).length === 1) throw transient('database_unavailable', 'down');
      },
    });
    for (const id of [permanentId, transientId]) {
      await clients.sqs.send(new SendMessageCommand({ QueueUrl: topo.queueUrl, MessageBody: JSON.stringify({ eventId: id }) }));
    }
    c.start();
    const dead = await waitFor(
      async () => {
        const got = await deadLetters(topo.dlqUrl);
        return got.length > 0 ? got : undefined;
      },
      'the permanent failure in the DLQ',
      20_000,
    );
    await waitFor(() => (seen.filter((s) => s === transientId).length >= 2 ? true : undefined), 'the transient one redelivered');
    await c.stop();
    expect(dead).toEqual([
      { body: JSON.stringify({ eventId: permanentId }), reason: 'permanent: event_not_found', messageId: expect.any(String) },
    ]);
    expect(seen.filter((s) => s === permanentId)).toHaveLength(1);
    expect(await queueMessagesCount(metrics, 'dead_lettered')).toBe(1);
    expect(await queueDepth(clients.sqs, topo.queueUrl)).toEqual({ visible: 0, notVisible: 0 });
  });

  /** the queue's own client with every command it sends counted by name */
  /**
   * A client whose calls pass through a proxy that counts them by operation (`x-amz-target`) on
   * their way to the backend: what goes over the wire, whoever makes the call (SDK or not).
   */
  async function countingSqs(): Promise<{
    sqs: AwsClients['sqs'];
    aws: AwsClientsOptions;
    calls: Map<string, number>;
    close(): Promise<void>;
  }> {
    const upstream = new URL(backend.endpoint);
    const calls = new Map<string, number>();
    const proxy = http.createServer((req, res) => {
      const name = String(req.headers['x-amz-target'] ?? '?').replace(/^AmazonSQS\./, '');
      calls.set(name, (calls.get(name) ?? 0) + 1);
      const up = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    proxy.listen(0, '127.0.0.1');
    await once(proxy, 'listening');
    const aws: AwsClientsOptions = {
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      env: {},
      transport: kind.transport,
    };
    const own = createAwsClients(aws);
    own.sns.destroy();
    return {
      sqs: own.sqs,
      aws,
      calls,
      close: () =>
        new Promise<void>((resolve) => {
          own.sqs.destroy();
          proxy.closeAllConnections();
          proxy.close(() => resolve());
        }),
    };
  }

  async function sendEvents(queueUrl: string, ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 10) {
      await clients.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: ids.slice(i, i + 10).map((id, j) => ({ Id: `m${j}`, MessageBody: JSON.stringify({ eventId: id }) })),
        }),
      );
    }
  }

  it('with a backlog, receives and deletes go in batches, not one call per freed slot', async () => {
    const topo = await freshTopology();
    const ids = Array.from({ length: 40 }, () => randomUUID());
    await sendEvents(topo.queueUrl, ids);
    const { sqs, aws, calls, close } = await countingSqs();
    const seen: string[] = [];
    let running = 0;
    let mostRunning = 0;
    const c = createQueueConsumer({
      sqs,
      calls: () => queueCalls({ sqs, aws }),
      queueUrl: topo.queueUrl,
      concurrency: 10,
      waitTimeSeconds: 1,
      handle: async (id) => {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        // handlers end one after another, as workflow starts do under load
        await sleep(5 + Math.random() * 20);
        running -= 1;
        seen.push(id);
      },
    });
    consumers.push(c);
    c.start();
    await waitFor(() => (seen.length >= ids.length ? true : undefined), 'every event handled');
    await c.stop();
    await close();
    expect([...seen].sort()).toEqual([...ids].sort());
    expect(mostRunning).toBeLessThanOrEqual(10);
    // one receive per freed slot made 13 to 19 receives of these 40 messages
    expect(calls.get('ReceiveMessage') ?? 0).toBeGreaterThanOrEqual(4);
    expect(calls.get('ReceiveMessage') ?? 0).toBeLessThanOrEqual(8);
    expect(calls.get('DeleteMessageBatch') ?? 0).toBeGreaterThanOrEqual(4);
    expect(calls.get('DeleteMessageBatch') ?? 0).toBeLessThanOrEqual(8);
    expect(await queueDepth(clients.sqs, topo.queueUrl)).toEqual({ visible: 0, notVisible: 0 });
  });

  it('stop() also handles and deletes the received messages still waiting for a slot', async () => {
    const topo = await freshTopology();
    const ids = Array.from({ length: 4 }, () => randomUUID());
    await sendEvents(topo.queueUrl, ids);
    const release = deferred();
    const seen: string[] = [];
    const c = consumer({
      queueUrl: topo.queueUrl,
      concurrency: 2,
      waitTimeSeconds: 1,
      handle: async (id) => {
        seen.push(id);
        await release.promise;
      },
    });
    c.start();
    await waitFor(() => (seen.length >= 2 ? true : undefined), 'two handlers running');
    await sleep(300); // the next receive brings messages that wait for a slot
    const stopping = c.stop();
    release.resolve();
    await stopping;
    // what was received was handled and deleted; what was not is still visible
    const depth = await queueDepth(clients.sqs, topo.queueUrl);
    expect(depth.notVisible).toBe(0);
    expect(seen.length + depth.visible).toBe(4);
    expect(seen.length).toBeGreaterThan(2);
  });

  it('stop() lets the in-flight handler finish and delete its message, then receives no more', async () => {
    const topo = await freshTopology();
    const publisher = publisherFor(topo.topicArn);
    const started = deferred();
    const release = deferred();
    const seen: string[] = [];
    const c = consumer({
      queueUrl: topo.queueUrl,
      handle: async (id) => {
        seen.push(id);
        started.resolve();
        await release.promise;
      },
    });
    c.start();
    const first = randomUUID();
    await publisher.publish(first);
    await started.promise;

    let stopped = false;
    const stopping = c.stop().then(() => {
      stopped = true;
    });
    await sleep(300);
    expect(stopped).toBe(false); // still waiting for the handler
    const releasedAt = Date.now();
    release.resolve();
    await stopping;
    // the 20 s long poll was aborted, not waited out
    expect(Date.now() - releasedAt).toBeLessThan(2_000);
    expect(c.running).toBe(false);
    expect(await queueDepth(clients.sqs, topo.queueUrl)).toEqual({ visible: 0, notVisible: 0 });

    // nothing polls any more: a new message stays visible and unhandled
    await publisher.publish(randomUUID());
    await sleep(1_500);
    expect(seen).toEqual([first]);
    expect(await queueDepth(clients.sqs, topo.queueUrl)).toEqual({ visible: 1, notVisible: 0 });
  });
});
