import { CreateEventBusCommand, EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type Message as SqsMessage,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { cloudEventAttributes } from '../../src/delivery/body-format.js';
import type { Destinations } from '../../src/delivery/destination.js';
import { composeMessage, type Message } from '../../src/delivery/message.js';
import { signBody } from '../../src/delivery/signature.js';
import { createDestinations } from '../../src/destinations/index.js';
import { startMotoBackend, type Backend } from '../transport/backends.js';

// SQS, SNS and EventBridge destinations against moto, each message read back with the SDK's own
// client: the body, the CloudEvents attributes, the signature, the receipt; errors classified.
const region = 'eu-west-1';
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
let moto: Backend;
let destinations: Destinations;
let sqs: SQSClient;

const message = (id: string, body = '{"id":"evt_1","amount":1999}', orderingKey: string | null = null): Message =>
  composeMessage({
    body: Buffer.from(body),
    contentType: 'application/json',
    format: 'Raw',
    attributes: cloudEventAttributes({ id, source: 'stripe', type: 'invoice.paid', time: new Date('2026-11-29T06:00:00Z') }),
    signing: { type: 'HMAC', secret: 'sig-secret' },
    meta: { eventId: id, source: 'stripe', eventType: 'invoice.paid', deliveryId: `d-${id}`, attempt: 1 },
    orderingKey,
  });

async function queue(name: string, attributes: Record<string, string> = {}): Promise<{ url: string; arn: string }> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: QueueUrl!, AttributeNames: ['QueueArn'] }));
  return { url: QueueUrl!, arn: a.Attributes!.QueueArn! };
}

async function receive(url: string): Promise<SqsMessage[]> {
  const r = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], WaitTimeSeconds: 2 }),
  );
  return r.Messages ?? [];
}

const attr = (m: SqsMessage, name: string) => m.MessageAttributes?.[name]?.StringValue;

beforeAll(async () => {
  moto = await startMotoBackend();
  sqs = new SQSClient({ region, endpoint: moto.endpoint, credentials });
  destinations = createDestinations({ addressPolicy: createAddressPolicy(), awsCredentials: credentials });
}, 60_000);
afterAll(async () => {
  await destinations?.close();
  sqs?.destroy();
  await moto?.stop();
});

describe('AWS destinations against moto', () => {
  const aws = () => ({ region, endpointUrl: moto.endpoint, roleArn: null });

  it('SQS: the body, the CloudEvents attributes and the signature as message attributes, the message id as receipt', async () => {
    const q = await queue('payments');
    const m = message('0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10');
    const outcome = await destinations.send(m, { type: 'SQS', queueUrl: q.url, ...aws() }, { timeoutMs: 10_000 });
    expect(outcome).toMatchObject({ kind: 'success', receipt: { messageId: expect.any(String) } });
    const [got, ...more] = await receive(q.url);
    expect(more).toEqual([]);
    expect(got!.MessageId).toBe(outcome.kind === 'success' ? outcome.receipt?.messageId : undefined);
    expect(got!.Body).toBe('{"id":"evt_1","amount":1999}');
    expect([attr(got!, 'ce-id'), attr(got!, 'ce-source'), attr(got!, 'ce-type'), attr(got!, 'ce-specversion')]).toEqual([
      '0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10',
      '/webhook-fanout/stripe',
      'invoice.paid',
      '1.0',
    ]);
    expect(attr(got!, 'content-type')).toBe('application/json');
    const headers = JSON.parse(attr(got!, 'webhook-headers')!) as Record<string, string>;
    expect(headers['X-Webhook-Signature']).toBe(signBody(Buffer.from(got!.Body!), 'sig-secret'));
  });

  it('SQS FIFO: the event id de-duplicates (a retry is not a second message), the ordering key groups', async () => {
    const q = await queue('payments.fifo', { FifoQueue: 'true' });
    const target = { type: 'SQS' as const, queueUrl: q.url, ...aws() };
    const m = message('1d8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10', '{"n":1}', 'customer-7');
    const first = await destinations.send(m, target, { timeoutMs: 10_000 });
    const again = await destinations.send({ ...m, meta: { ...m.meta, attempt: 2 } }, target, { timeoutMs: 10_000 });
    expect(first).toMatchObject({ kind: 'success', receipt: { sequence: expect.any(String) } });
    expect(again.kind).toBe('success');
    const r = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: q.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 2, MessageSystemAttributeNames: ['All'] }),
    );
    expect(r.Messages?.map((x) => [x.Body, x.Attributes?.MessageGroupId, x.Attributes?.MessageDeduplicationId])).toEqual([
      ['{"n":1}', 'customer-7', '1d8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10'],
    ]);
  });

  it('SNS: published to the topic and read from a queue it delivers to, with the same attributes', async () => {
    const sns = new SNSClient({ region, endpoint: moto.endpoint, credentials });
    try {
      const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: 'payments-topic' }));
      const q = await queue('from-sns');
      await sns.send(new SubscribeCommand({ TopicArn, Protocol: 'sqs', Endpoint: q.arn, Attributes: { RawMessageDelivery: 'true' } }));
      const outcome = await destinations.send(
        message('2c8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10'),
        { type: 'SNS', topicArn: TopicArn!, ...aws() },
        { timeoutMs: 10_000 },
      );
      expect(outcome).toMatchObject({ kind: 'success', receipt: { messageId: expect.any(String) } });
      const [got] = await receive(q.url);
      expect(got!.Body).toBe('{"id":"evt_1","amount":1999}');
      expect(attr(got!, 'ce-id')).toBe('2c8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10');
      expect(JSON.parse(attr(got!, 'webhook-headers')!)).toMatchObject({
        'X-Webhook-Signature': signBody(Buffer.from(got!.Body!), 'sig-secret'),
      });
    } finally {
      sns.destroy();
    }
  });

  it('EventBridge: one entry on the bus, routed by a rule to a queue: the data, the attributes, the headers', async () => {
    const eb = new EventBridgeClient({ region, endpoint: moto.endpoint, credentials });
    try {
      await eb.send(new CreateEventBusCommand({ Name: 'payments-bus' }));
      const q = await queue('from-bus');
      await eb.send(
        new PutRuleCommand({
          Name: 'all',
          EventBusName: 'payments-bus',
          EventPattern: JSON.stringify({ source: ['/webhook-fanout/stripe'] }),
        }),
      );
      await eb.send(new PutTargetsCommand({ Rule: 'all', EventBusName: 'payments-bus', Targets: [{ Id: 'q', Arn: q.arn }] }));
      const outcome = await destinations.send(
        message('3a8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10'),
        { type: 'EventBridge', eventBusName: 'payments-bus', detailType: null, ...aws() },
        { timeoutMs: 10_000 },
      );
      expect(outcome).toMatchObject({ kind: 'success', receipt: { messageId: expect.any(String) } });
      const [got] = await receive(q.url);
      const event = JSON.parse(got!.Body!) as { source: string; 'detail-type': string; detail: Record<string, unknown> };
      expect(event).toMatchObject({ source: '/webhook-fanout/stripe', 'detail-type': 'invoice.paid' });
      expect(event.detail).toMatchObject({ id: '3a8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10', data: { id: 'evt_1', amount: 1999 } });
      expect(event.detail.headers).toMatchObject({ 'X-Webhook-Signature': expect.any(String) });
    } finally {
      eb.destroy();
    }
  });

  it('an unknown queue and a message over the limit are final, with the reason; a broker not there is retried', async () => {
    const unknown = await destinations.send(
      message('4a8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10'),
      { type: 'SQS', queueUrl: `${moto.endpoint}/123456789012/no-such-queue`, ...aws() },
      { timeoutMs: 10_000 },
    );
    expect(unknown).toMatchObject({
      kind: 'permanent',
      statusClass: '4xx',
      error: expect.stringMatching(/^SQS: .*(NonExistentQueue|QueueDoesNotExist)/),
    });
    // the queue's own limit (SQS takes up to 1 MiB now; moto too): 1 KiB here
    const q = await queue('small', { MaximumMessageSize: '1024' });
    const big = await destinations.send(
      message('5a8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10', JSON.stringify({ s: 'x'.repeat(4 * 1024) })),
      { type: 'SQS', queueUrl: q.url, ...aws() },
      { timeoutMs: 10_000 },
    );
    expect(big).toMatchObject({ kind: 'permanent', error: expect.stringMatching(/^SQS: .*(shorter than|too long|MessageTooLong)/i) });
    const down = await destinations.send(
      message('6a8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10'),
      { type: 'SQS', queueUrl: q.url, region, endpointUrl: 'http://127.0.0.1:1', roleArn: null },
      { timeoutMs: 5_000 },
    );
    expect(down).toMatchObject({ kind: 'retryable' });
  });
});
