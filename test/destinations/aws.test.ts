import { CreateEventBusCommand, EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type Message as SqsMessage,
} from '@aws-sdk/client-sqs';
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { cloudEventAttributes } from '../../src/delivery/body-format.js';
import type { Destinations } from '../../src/delivery/destination.js';
import { composeMessage, type Message } from '../../src/delivery/message.js';
import { signBody } from '../../src/delivery/signature.js';
import { createDestinations } from '../../src/destinations/index.js';
import { AWS_SQS_SENDS } from '../../src/config/settings.js';
import { startMotoBackend, type Backend } from '../transport/backends.js';

// SQS, SNS and EventBridge destinations against moto, each message read back with the SDK's own
// client: the body, the CloudEvents attributes, the signature, the receipt; errors classified.
const region = 'eu-west-1';
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const ACCOUNT = '123456789012';
let moto: Backend;
let destinations: Destinations;
/** the destinations with each way of sending to SQS (AWS_SQS_SEND: our signature, the SDK's signer, the SDK's send()) */
const SQS_SENDS = AWS_SQS_SENDS;
const bySend = {} as Record<(typeof SQS_SENDS)[number], Destinations>;
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
  for (const send of SQS_SENDS) {
    bySend[send] = createDestinations({ addressPolicy: createAddressPolicy(), awsCredentials: credentials, awsSqsSend: send });
  }
}, 60_000);
afterAll(async () => {
  await destinations?.close();
  for (const d of Object.values(bySend)) await d.close();
  sqs?.destroy();
  await moto?.stop();
});

describe('AWS destinations against moto', () => {
  const aws = () => ({ region, endpointUrl: moto.endpoint, roleArn: null });

  it.each(SQS_SENDS)(
    'SQS (%s): the body, the CloudEvents attributes and the signature as message attributes, the message id as receipt',
    async (send) => {
      const destinations = bySend[send];
      const q = await queue(`payments-${send}`);
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
    },
  );

  it.each(SQS_SENDS)(
    'SQS FIFO (%s): the event id de-duplicates (a retry is not a second message), the ordering key groups',
    async (send) => {
      const destinations = bySend[send];
      const q = await queue(`payments-${send}.fifo`, { FifoQueue: 'true' });
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
    },
  );

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

  it.each(SQS_SENDS)(
    'SQS (%s): an unknown queue and a message over the limit are final, with the reason; a broker not there is retried',
    async (send) => {
      const destinations = bySend[send];
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
      const q = await queue(`small-${send}`, { MaximumMessageSize: '1024' });
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
    },
  );
});

/** What a front end answers (SQS's own errors, a proxy's page) per queue name: a real HTTP server in moto's place. */
const ANSWERS: Record<string, { status: number; headers?: Record<string, string>; body: string } | 'never'> = {
  throttled: {
    status: 400,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-query-error': 'RequestThrottled;Sender' },
    body: '{"__type":"com.amazonaws.sqs#RequestThrottled","message":"Request is throttled."}',
  },
  unavailable: {
    status: 503,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-query-error': 'ServiceUnavailable;Server' },
    body: '{"__type":"com.amazonaws.sqs#ServiceUnavailable","message":"The request has failed due to a temporary failure of the server."}',
  },
  'proxy-502': { status: 502, headers: { 'content-type': 'text/html' }, body: '<html><body><h1>502 Bad Gateway</h1></body></html>' },
  'proxy-denied': {
    status: 403,
    headers: { 'content-type': 'text/xml' },
    body: '<?xml version="1.0"?><ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Access to this endpoint is denied by its policy</Message></Error></ErrorResponse>',
  },
  // the service took other bytes than were sent: the body's MD5 is not the one the answer gives
  'md5-mismatch': {
    status: 200,
    headers: { 'content-type': 'application/x-amz-json-1.0' },
    body: '{"MessageId":"m-1","MD5OfMessageBody":"00000000000000000000000000000000"}',
  },
  silent: 'never',
};

describe('SQS: what a front end answers, classified the same by both ways of sending', () => {
  let server: Server;
  let endpoint: string;
  const seen: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        let queue = '';
        try {
          queue = (JSON.parse(body) as { QueueUrl: string }).QueueUrl.split('/').pop() ?? '';
        } catch {
          // not SQS's JSON (SNS's form): no answer
        }
        const answer = ANSWERS[queue];
        if (answer === 'never' || answer === undefined) return; // no answer: the attempt's deadline ends it
        res.writeHead(answer.status, answer.headers).end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const send = (how: (typeof SQS_SENDS)[number], queue: string, timeoutMs = 5_000) =>
    bySend[how].send(
      message('7a8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10'),
      { type: 'SQS', queueUrl: `${endpoint}/${ACCOUNT}/${queue}`, region, endpointUrl: endpoint, roleArn: null },
      { timeoutMs },
    );

  it.each(
    SQS_SENDS.flatMap(
      (how) =>
        [
          [how, 'throttled', { kind: 'retryable', status: 400, statusClass: '4xx', error: 'SQS: RequestThrottled: Request is throttled.' }],
          [
            how,
            'unavailable',
            {
              kind: 'retryable',
              status: 503,
              statusClass: '5xx',
              error: 'SQS: ServiceUnavailable: The request has failed due to a temporary failure of the server.',
            },
          ],
          // a proxy's page: its status and its own words, the same both ways
          [how, 'proxy-502', { kind: 'retryable', status: 502, statusClass: '5xx', error: 'SQS: HTTP502: 502 Bad Gateway' }],
          [
            how,
            'proxy-denied',
            {
              kind: 'permanent',
              status: 403,
              statusClass: '4xx',
              error: 'SQS: AccessDenied: Access to this endpoint is denied by its policy',
            },
          ],
          [how, 'md5-mismatch', { kind: 'retryable', status: null, error: expect.stringMatching(/^SQS: .*(MD5|Checksum)/i) }],
        ] as const,
    ),
  )('%s: %s', async (how, queue, outcome) => {
    expect(await send(how, queue)).toEqual(expect.objectContaining(outcome));
  });

  it.each(SQS_SENDS)("%s: no answer within the attempt's deadline: retried, a timeout", async (how) => {
    const started = Date.now();
    expect(await send(how, 'silent', 500)).toMatchObject({
      kind: 'retryable',
      statusClass: 'timeout',
      error: 'SQS: no answer within 500 ms',
    });
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it.each(SQS_SENDS)("%s: the same request: JSON 1.0, SendMessage, signed with the client's key for SQS in its region", async (how) => {
    seen.length = 0;
    await send(how, 'throttled');
    const [req] = seen;
    expect(req?.headers).toMatchObject({
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'AmazonSQS.SendMessage',
      'x-amzn-query-mode': 'true',
      authorization: expect.stringMatching(new RegExp(`^AWS4-HMAC-SHA256 Credential=test/\\d{8}/${region}/sqs/aws4_request, `)),
    });
    // the way it went: the SDK names itself, the direct POST does not
    expect(req?.headers['user-agent'] ?? '').toMatch(how === 'sdk' ? /aws-sdk-js/ : /^(?!.*aws-sdk-js)/);
    expect(JSON.parse(req!.body)).toEqual({
      QueueUrl: `${endpoint}/${ACCOUNT}/throttled`,
      MessageBody: '{"id":"evt_1","amount":1999}',
      MessageAttributes: expect.objectContaining({ 'ce-id': { DataType: 'String', StringValue: '7a8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10' } }),
    });
  });

  it.each(SQS_SENDS.flatMap((how) => [[how, 'an IP literal'] as const, [how, 'a name'] as const]))(
    '%s: an endpoint at an address the outbound policy refuses (%s): never connected to',
    async (how, host) => {
      const guarded = createDestinations({
        addressPolicy: createAddressPolicy({ deny: ['127.0.0.0/8', '::1/128'] }),
        awsCredentials: credentials,
        awsSqsSend: how,
      });
      try {
        seen.length = 0;
        const at = host === 'a name' ? endpoint.replace('127.0.0.1', 'localhost') : endpoint;
        const outcome = await guarded.send(
          message('8a8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10'),
          { type: 'SQS', queueUrl: `${at}/${ACCOUNT}/throttled`, region, endpointUrl: at, roleArn: null },
          { timeoutMs: 5_000 },
        );
        // final, as for every destination (address_blocked): the configuration must change
        expect(outcome).toMatchObject({
          kind: 'permanent',
          status: null,
          statusClass: 'blocked',
          error: expect.stringMatching(
            /^SQS: address_blocked: address (127\.0\.0\.1|::1)( \(resolved from localhost\))? is blocked by the outbound address policy/,
          ),
        });
        expect(seen).toEqual([]);
      } finally {
        await guarded.close();
      }
    },
  );

  it.each(['SNS', 'EventBridge'] as const)(
    '%s: an endpointUrl at an IP address the outbound policy refuses: never connected to',
    async (type) => {
      const guarded = createDestinations({ addressPolicy: createAddressPolicy({ deny: ['127.0.0.0/8'] }), awsCredentials: credentials });
      try {
        seen.length = 0;
        const on = { region, endpointUrl: endpoint, roleArn: null };
        const outcome = await guarded.send(
          message('9a8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10'),
          type === 'SNS'
            ? { type, topicArn: `arn:aws:sns:${region}:${ACCOUNT}:payments`, ...on }
            : { type, eventBusName: 'payments', detailType: null, ...on },
          { timeoutMs: 2_000 },
        );
        expect(outcome).toMatchObject({
          kind: 'permanent',
          status: null,
          statusClass: 'blocked',
          error: expect.stringMatching(
            new RegExp(`^${type}: address_blocked: address 127\\.0\\.0\\.1 is blocked by the outbound address policy`),
          ),
        });
        expect(seen).toEqual([]);
      } finally {
        await guarded.close();
      }
    },
  );
});

describe('SQS: a worker whose clock is off from the service', () => {
  // SQS refuses a request signed more than 5 minutes off its clock, saying its time in the Date
  // header; the client learns the offset (the SDK's systemClockOffset, kept by both ways of
  // sending) and the delivery's next attempt is signed right. So the refusal is retried, not final.
  const SKEW_MS = 60 * 60_000;
  let server: Server;
  let endpoint: string;
  const signedAt: number[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        const serverNow = Date.now() + SKEW_MS;
        const amzDate = String(req.headers['x-amz-date'] ?? '');
        const signed = Date.parse(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
        signedAt.push(signed - serverNow);
        if (!(Math.abs(signed - serverNow) < 5 * 60_000)) {
          res
            .writeHead(403, {
              'content-type': 'application/x-amz-json-1.0',
              'x-amzn-query-error': 'InvalidSignatureException;Sender',
              date: new Date(serverNow).toUTCString(),
            })
            .end(
              `{"__type":"com.amazon.coral.service#InvalidSignatureException","message":"Signature expired: ${amzDate} is now earlier than the server's time minus 5 min."}`,
            );
          return;
        }
        const { MessageBody } = JSON.parse(body) as { MessageBody: string };
        const md5 = createHash('md5').update(MessageBody, 'utf8').digest('hex');
        res
          .writeHead(200, { 'content-type': 'application/x-amz-json-1.0', date: new Date(serverNow).toUTCString() })
          .end(JSON.stringify({ MessageId: 'm-skew', MD5OfMessageBody: md5 }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it.each(SQS_SENDS)(
    '%s: the refusal of a request signed an hour off is retried, and the next attempt is signed with the service time',
    async (how) => {
      const skewed = createDestinations({ addressPolicy: createAddressPolicy(), awsCredentials: credentials, awsSqsSend: how });
      try {
        signedAt.length = 0;
        const to = { type: 'SQS', queueUrl: `${endpoint}/${ACCOUNT}/skewed`, region, endpointUrl: endpoint, roleArn: null } as const;
        // three attempts at once, signed with the same wrong clock: each is retried, not only the one whose answer corrected it
        const first = await Promise.all(
          ['1', '2', '3'].map((n) => skewed.send(message(`b${n}8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10`), to, { timeoutMs: 5_000 })),
        );
        for (const outcome of first) {
          expect(outcome).toMatchObject({
            kind: 'retryable',
            status: 403,
            error: expect.stringMatching(/^SQS: InvalidSignatureException: /),
          });
        }
        const next = await skewed.send(message('c18f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10'), to, { timeoutMs: 5_000 });
        expect(next).toMatchObject({ kind: 'success', receipt: { messageId: 'm-skew' } });
        expect(Math.abs(signedAt.at(-1)!)).toBeLessThan(60_000);
      } finally {
        await skewed.close();
      }
    },
  );
});
