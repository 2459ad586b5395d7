import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/ports.js';
import { queueCalls } from '../../src/transport/queue-calls.js';
import { AppError } from '../../src/domain/errors.js';
import { createAwsClients, type AwsClients, type AwsClientsOptions } from '../../src/transport/aws-clients.js';
import { createEventPublisher } from '../../src/transport/publisher.js';
import { createQueueConsumer } from '../../src/transport/queue-consumer.js';
import { ensureTopology } from '../../src/transport/topology.js';
import { startFauxqsBackend, type Backend } from './backends.js';
import { captureLogger, deferred, queueDepth, receiveOne, uniqueSuffix, waitFor } from './helpers.js';
import { httpStatusOf } from '../../src/http/problem.js';

/** Failure paths: dead or silent endpoints, and recovery once the queue comes back. */
describe('transport when SNS/SQS is unavailable', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function optionsFor(endpoint: string, extra: Partial<AwsClientsOptions> = {}): AwsClientsOptions {
    return { region: 'us-east-1', endpoint, env: {}, ...extra };
  }

  function clientsFor(endpoint: string, extra: Partial<AwsClientsOptions> = {}): AwsClients {
    const clients = createAwsClients(optionsFor(endpoint, extra));
    cleanups.push(() => {
      clients.sns.destroy();
      clients.sqs.destroy();
    });
    return clients;
  }

  /** the production publisher (ingest's), on its own clients for this endpoint */
  function publisherFor(
    endpoint: string,
    topicArn: string,
    extra: Partial<AwsClientsOptions> = {},
  ): ReturnType<typeof createEventPublisher> {
    const publisher = createEventPublisher({ sns: clientsFor(endpoint, extra).sns, aws: optionsFor(endpoint, extra), topicArn });
    cleanups.push(() => publisher.close());
    return publisher;
  }

  async function expectPublishFailsFast(endpoint: string, withinMs: number, extra: Partial<AwsClientsOptions> = {}): Promise<AppError> {
    const publisher = publisherFor(endpoint, 'arn:aws:sns:us-east-1:000000000000:webhook-fanout-events', extra);
    const t0 = Date.now();
    const err = await publisher.publish(randomUUID()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(Date.now() - t0).toBeLessThan(withinMs);
    expect(err).toBeInstanceOf(AppError);
    const appErr = err as AppError;
    expect(appErr.kind).toBe('transient');
    expect(appErr.code).toBe('publish_failed');
    expect(httpStatusOf(appErr)).toBe(503);
    expect(appErr.message).not.toContain('test'); // the dummy secret
    return appErr;
  }

  it('publish to an endpoint where nothing listens throws a transient publish_failed within seconds', async () => {
    const port = await freePort();
    const err = await expectPublishFailsFast(`http://127.0.0.1:${port}`, 3_000);
    expect(err.message).toMatch(/^publishing event [0-9a-f-]{36} failed: /);
  });

  it('publish to an endpoint that accepts but never answers times out instead of hanging', async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          silent.close(() => resolve());
        }),
    );
    const { port } = silent.address() as net.AddressInfo;
    // 2 attempts x 1 s request timeout, plus the retry's delay (at most 100 ms)
    await expectPublishFailsFast(`http://127.0.0.1:${port}`, 5_000, { snsRequestTimeoutMs: 1_000 });
  });

  it('publish refuses an id that is not a UUID instead of sending a poison message', async () => {
    const publisher = publisherFor(`http://127.0.0.1:${await freePort()}`, 'arn:aws:sns:us-east-1:000000000000:t');
    await expect(publisher.publish('not-a-uuid')).rejects.toMatchObject({ kind: 'internal', code: 'unpublishable_event_id' });
  });

  it('the consumer backs off while the queue is down, keeps running, and recovers when it is back', async () => {
    const port = await freePort();
    const queueName = `events-${uniqueSuffix()}`;
    const clients = clientsFor(`http://127.0.0.1:${port}`);
    const { logger, records } = captureLogger();
    const handled: string[] = [];
    const consumer = createQueueConsumer({
      sqs: clients.sqs,
      calls: () => queueCalls({ sqs: clients.sqs, aws: optionsFor(`http://127.0.0.1:${port}`) }),
      // fauxqs's URL shape for the queue it will create once it is up
      queueUrl: `http://sqs.us-east-1.localhost:${port}/000000000000/${queueName}`,
      logger,
      waitTimeSeconds: 1,
      backoff: { initialMs: 100, maxMs: 400 },
      handle: async (id) => {
        handled.push(id);
      },
    });
    cleanups.push(() => consumer.stop());
    consumer.start();

    const failures = () => records.filter((r) => r.msg === 'receiving from the queue failed');
    await waitFor(() => (failures().length >= 4 ? true : undefined), 'four failed receives');
    expect(consumer.running).toBe(true);
    expect(
      failures()
        .slice(0, 4)
        .map((r) => r.retryInMs),
    ).toEqual([100, 200, 400, 400]);

    const backend: Backend = await startFauxqsBackend(port);
    cleanups.push(() => backend.stop());
    const topo = await ensureTopology(clients, { topicName: queueName, queueName, dlqName: `dlq-${queueName}` });
    const eventId = randomUUID();
    await publisherFor(`http://127.0.0.1:${port}`, topo.topicArn).publish(eventId);
    await waitFor(() => (handled.includes(eventId) ? true : undefined), 'the event after recovery');
    await consumer.stop();
    expect(await queueDepth(clients.sqs, topo.queueUrl)).toEqual({ visible: 0, notVisible: 0 });
  });

  it('stop() ends a long backoff at once', async () => {
    const port = await freePort();
    const { logger, records } = captureLogger();
    const { sqs } = clientsFor(`http://127.0.0.1:${port}`);
    const consumer = createQueueConsumer({
      sqs,
      calls: () => queueCalls({ sqs, aws: optionsFor(`http://127.0.0.1:${port}`) }),
      queueUrl: `http://127.0.0.1:${port}/000000000000/nowhere`,
      logger,
      backoff: { initialMs: 30_000 },
      handle: async () => undefined,
    });
    consumer.start();
    await waitFor(() => (records.length > 0 ? true : undefined), 'the first failed receive');
    const t0 = Date.now();
    await consumer.stop();
    expect(Date.now() - t0).toBeLessThan(500);
    expect(consumer.running).toBe(false);
  });

  it('stop() gives up on a handler that outlives the shutdown timeout; its message is redelivered later', async () => {
    const backend = await startFauxqsBackend();
    cleanups.push(() => backend.stop());
    const clients = clientsFor(backend.endpoint);
    const s = uniqueSuffix();
    const topo = await ensureTopology(clients, {
      topicName: `events-${s}`,
      queueName: `events-${s}`,
      dlqName: `dlq-${s}`,
      visibilityTimeoutSeconds: 1,
    });
    const started = deferred();
    const never = deferred();
    const { logger, records } = captureLogger();
    const consumer = createQueueConsumer({
      sqs: clients.sqs,
      calls: () => queueCalls({ sqs: clients.sqs, aws: optionsFor(backend.endpoint) }),
      queueUrl: topo.queueUrl,
      logger,
      shutdownTimeoutMs: 300,
      handle: async () => {
        started.resolve();
        await never.promise;
      },
    });
    consumer.start();
    await publisherFor(backend.endpoint, topo.topicArn).publish(randomUUID());
    await started.promise;
    const t0 = Date.now();
    await consumer.stop();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    expect(Date.now() - t0).toBeLessThan(1_500);
    expect(records.some((r) => r.stillRunning === 1)).toBe(true);
    // not deleted: it is back once the visibility timeout ran out
    // (asked by receiving: fauxqs counts an expired in-flight message as NotVisible until then)
    const back = await receiveOne(clients.sqs, topo.queueUrl, 3);
    expect(back?.Attributes?.ApproximateReceiveCount).toBe('2');
    never.resolve();
  });
});
