import { CreateAccessKeyCommand, CreateUserCommand, IAMClient, PutUserPolicyCommand } from '@aws-sdk/client-iam';
import { SQSClient, type Message as SqsMessage } from '@aws-sdk/client-sqs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Destinations, SqsTarget } from '../../src/delivery/destination.js';
import type { Message } from '../../src/delivery/message.js';
import type { DeliveryOutcome } from '../../src/delivery/types.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { createDestinations } from '../../src/destinations/index.js';
import { createQueue, drainQueue } from '../support/sqs-queues.js';
import { startFauxqsBackend, startMotoBackend, type Backend } from '../transport/backends.js';
import { signedMessage, verifySignature } from './broker-messages.js';

// AWS_SQS_BATCH=on: concurrent sends to one queue beyond the requests in flight go as
// SendMessageBatch (destinations/aws/sqs-direct.ts), against moto with its IAM checks on and
// fauxqs, each behind a counting proxy (the requests that reached the emulator, by operation), every
// message read back with the SDK's own SQS client: once each, its attributes, its signature.

const region = 'eu-west-1';
type Send = 'direct' | 'direct-sdk-signer';

/** An HTTP proxy in front of an emulator: counts the requests by operation and the entries of each batch; may hold each answer. */
interface CountingProxy {
  endpoint: string;
  /** requests by operation (SendMessage, SendMessageBatch, ...) since the last reset */
  calls: Map<string, number>;
  /** the bodies of each SendMessageBatch's entries, in their order */
  batches: string[][];
  /** the ms each answer is held before it goes back (0: none) */
  holdMs: number;
  reset(): void;
  close(): Promise<void>;
}

async function startCountingProxy(upstream: string): Promise<CountingProxy> {
  const up = new URL(upstream);
  const proxy: CountingProxy = {
    endpoint: '',
    calls: new Map(),
    batches: [],
    holdMs: 0,
    reset() {
      proxy.calls.clear();
      proxy.batches.length = 0;
      proxy.holdMs = 0;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const action = String(req.headers['x-amz-target'] ?? 'query').replace('AmazonSQS.', '');
      proxy.calls.set(action, (proxy.calls.get(action) ?? 0) + 1);
      if (action === 'SendMessageBatch') {
        proxy.batches.push((JSON.parse(body.toString()) as { Entries: { MessageBody: string }[] }).Entries.map((x) => x.MessageBody));
      }
      // the Host header as signed (the proxy's): the emulator checks the signature over it
      const forward = request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
        const out: Buffer[] = [];
        ur.on('data', (c: Buffer) => out.push(c));
        ur.on('end', () => {
          const answer = () => res.writeHead(ur.statusCode ?? 502, ur.headers).end(Buffer.concat(out));
          if (proxy.holdMs > 0) setTimeout(answer, proxy.holdMs);
          else answer();
        });
      });
      forward.on('error', () => res.destroy());
      res.on('error', () => undefined);
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

const policy = (actions: string[]): string =>
  JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: actions, Resource: '*' }] });

/** A moto user with `actions` allowed: its keys. */
async function motoUser(iam: IAMClient, name: string, actions: string[]): Promise<{ accessKeyId: string; secretAccessKey: string }> {
  await iam.send(new CreateUserCommand({ UserName: name }));
  await iam.send(new PutUserPolicyCommand({ UserName: name, PolicyName: 'sqs', PolicyDocument: policy(actions) }));
  const key = (await iam.send(new CreateAccessKeyCommand({ UserName: name }))).AccessKey!;
  return { accessKeyId: key.AccessKeyId!, secretAccessKey: key.SecretAccessKey! };
}

interface Emulator {
  name: 'moto' | 'fauxqs';
  backend: Backend;
  proxy: CountingProxy;
  /** reads the queues back (the SDK's own client, straight to the emulator) */
  reader: SQSClient;
  /** the destinations that batch, by way of signing, with credentials that may send */
  batching: Record<Send, Destinations>;
  /** moto: a user that may read queues but not send to them */
  refused?: Destinations;
  queue(name: string, attributes?: Record<string, string>): Promise<string>;
}

const emulators: Emulator[] = [];

async function startEmulator(name: Emulator['name']): Promise<Emulator> {
  const backend = name === 'moto' ? await startMotoBackend() : await startFauxqsBackend();
  const setup = { region, endpoint: backend.endpoint, credentials: { accessKeyId: 'setup', secretAccessKey: 'setup' } };
  let sender = setup.credentials;
  let reader = setup.credentials;
  let refused: typeof sender | undefined;
  if (name === 'moto') {
    const iam = new IAMClient({ ...setup, region: 'us-east-1' });
    try {
      // AWS authorizes SendMessageBatch as sqs:SendMessage; moto checks each operation by its own name
      sender = await motoUser(iam, 'sender', ['sqs:SendMessage', 'sqs:SendMessageBatch']);
      reader = await motoUser(iam, 'reader', ['sqs:ReceiveMessage', 'sqs:DeleteMessageBatch', 'sqs:CreateQueue', 'sqs:GetQueueAttributes']);
      refused = await motoUser(iam, 'auditor', ['sqs:GetQueueAttributes', 'sqs:ListQueues']);
    } finally {
      iam.destroy();
    }
    // from now on moto checks every request's signature and the policy of its principal
    const on = await fetch(`${backend.endpoint}/moto-api/reset-auth`, { method: 'POST', body: '0' });
    if (!on.ok) throw new Error(`moto did not turn its IAM checks on: ${on.status} ${await on.text()}`);
  }
  const proxy = await startCountingProxy(backend.endpoint);
  const client = new SQSClient({ region, endpoint: backend.endpoint, credentials: reader });
  const destinationsOf = (credentials: typeof sender, send: Send) =>
    createDestinations({ addressPolicy: createAddressPolicy(), awsCredentials: credentials, awsSqsSend: send, awsSqsBatch: true });
  return {
    name,
    backend,
    proxy,
    reader: client,
    batching: { direct: destinationsOf(sender, 'direct'), 'direct-sdk-signer': destinationsOf(sender, 'direct-sdk-signer') },
    ...(refused ? { refused: destinationsOf(refused, 'direct') } : {}),
    queue: async (queueName, attributes) => (await createQueue(client, queueName, attributes)).url,
  };
}

beforeAll(async () => {
  emulators.push(await startEmulator('moto'), await startEmulator('fauxqs'));
}, 120_000);
afterAll(async () => {
  for (const e of emulators) {
    for (const d of [...Object.values(e.batching), e.refused]) await d?.close();
    e.reader.destroy();
    await e.proxy.close();
    await e.backend.stop();
  }
});

const emulator = (name: Emulator['name']): Emulator => emulators.find((e) => e.name === name)!;
const to = (e: Emulator, queueUrl: string): SqsTarget => ({ type: 'SQS', queueUrl, region, endpointUrl: e.proxy.endpoint, roleArn: null });
const headersOf = (m: SqsMessage): Record<string, string> =>
  JSON.parse(m.MessageAttributes?.['webhook-headers']?.StringValue ?? '{}') as Record<string, string>;
const sendAll = (d: Destinations, messages: Message[], target: SqsTarget, timeoutMs = 20_000): Promise<DeliveryOutcome[]> =>
  Promise.all(messages.map((m) => d.send(m, target, { timeoutMs })));
const receiptOf = (o: DeliveryOutcome): string | undefined => (o.kind === 'success' ? o.receipt?.messageId : undefined);

const CASES = [
  ['moto', 'direct'],
  ['moto', 'direct-sdk-signer'],
  ['fauxqs', 'direct'],
] as const;

describe('AWS_SQS_BATCH=on: concurrent sends to one queue share SendMessageBatch requests', () => {
  it.each(CASES)(
    '%s (%s): 24 concurrent sends arrive once each, with their attributes and signature, in fewer requests',
    async (name, send) => {
      const e = emulator(name);
      const queueUrl = await e.queue(`burst-${send}`);
      const messages = Array.from({ length: 24 }, () => signedMessage());
      e.proxy.reset();
      const outcomes = await sendAll(e.batching[send], messages, to(e, queueUrl));
      expect(outcomes.map((o) => o.kind)).toEqual(messages.map(() => 'success'));
      const got = await drainQueue(e.reader, queueUrl);
      // each message once, its receipt the id SQS gave it, its attributes and signature its own
      expect(got.map((m) => headersOf(m)['X-Webhook-Event-Id']).sort()).toEqual(messages.map((m) => m.meta.eventId).sort());
      const byEvent = new Map(got.map((m) => [headersOf(m)['X-Webhook-Event-Id'], m]));
      messages.forEach((m, i) => {
        const read = byEvent.get(m.meta.eventId)!;
        expect(read.MessageId).toBe(receiptOf(outcomes[i]!));
        expect(read.Body).toBe(m.body.toString());
        expect(read.MessageAttributes?.['ce-id']?.StringValue).toBe(m.meta.eventId);
        expect(() => verifySignature(read.Body!, headersOf(read))).not.toThrow();
      });
      // four at once as single sends, the others waited and went in batches of at most 10
      const batches = e.proxy.calls.get('SendMessageBatch') ?? 0;
      const singles = e.proxy.calls.get('SendMessage') ?? 0;
      expect(batches).toBeGreaterThan(0);
      expect(e.proxy.batches.every((b) => b.length >= 2 && b.length <= 10)).toBe(true);
      expect(singles + e.proxy.batches.reduce((a, b) => a + b.length, 0)).toBe(24);
      expect(singles + batches).toBeLessThan(24);
    },
  );

  it.each(CASES)(
    "%s (%s): one entry over the queue's limit fails final with its reason, the others are stored once each",
    async (name, send) => {
      const e = emulator(name);
      const queueUrl = await e.queue(`small-${send}`, { MaximumMessageSize: '1024' });
      const messages = Array.from({ length: 12 }, (_, i) =>
        signedMessage(i === 7 ? { body: Buffer.from(JSON.stringify({ s: 'x'.repeat(4 * 1024) })) } : {}),
      );
      e.proxy.reset();
      const outcomes = await sendAll(e.batching[send], messages, to(e, queueUrl));
      expect(outcomes[7]).toMatchObject({
        kind: 'permanent',
        statusClass: '4xx',
        error: expect.stringMatching(/^SQS: .*(shorter than|too long)/i),
      });
      expect(outcomes.filter((_, i) => i !== 7).map((o) => o.kind)).toEqual(Array(11).fill('success'));
      expect(e.proxy.calls.get('SendMessageBatch') ?? 0).toBeGreaterThan(0);
      const got = await drainQueue(e.reader, queueUrl);
      expect(got.map((m) => headersOf(m)['X-Webhook-Event-Id']).sort()).toEqual(
        messages
          .filter((_, i) => i !== 7)
          .map((m) => m.meta.eventId)
          .sort(),
      );
    },
  );

  it.each(CASES)(
    "%s (%s): a FIFO queue's group keeps the order of each batch's entries, the order the sends came in",
    async (name, send) => {
      const e = emulator(name);
      const queueUrl = await e.queue(`ordered-${send}.fifo`, { FifoQueue: 'true' });
      const messages = Array.from({ length: 20 }, (_, n) => signedMessage({ orderingKey: 'customer-7', body: Buffer.from(`{"n":${n}}`) }));
      e.proxy.reset();
      const outcomes = await sendAll(e.batching[send], messages, to(e, queueUrl));
      expect(outcomes.map((o) => o.kind)).toEqual(messages.map(() => 'success'));
      const got = (await drainQueue(e.reader, queueUrl)).map((m) => m.Body!);
      expect(got.map((b) => (JSON.parse(b) as { n: number }).n).sort((a, b) => a - b)).toEqual(messages.map((_, n) => n));
      // each batch carried its entries in the order their sends came, and the group holds them in
      // that order; batches in flight together (as concurrent single sends) are not ordered between
      // them: an ordered endpoint has one send per key at a time (docs/ordering.md)
      expect(e.proxy.batches.length).toBeGreaterThan(0);
      for (const batch of e.proxy.batches) {
        const ns = batch.map((b) => (JSON.parse(b) as { n: number }).n);
        expect(ns).toEqual([...ns].sort((a, b) => a - b));
        expect(batch.map((b) => got.indexOf(b))).toEqual(batch.map((b) => got.indexOf(b)).sort((a, b) => a - b));
      }
    },
  );

  it("fauxqs: a send that waited until too little of its attempt's time was left fails unsent, retried, with the reason", async () => {
    const e = emulator('fauxqs');
    const queueUrl = await e.queue('slow');
    e.proxy.reset();
    // each answer held 1.3 s: a 2 s attempt that waits for one has 0.7 s left, under the 1 s a send is given
    e.proxy.holdMs = 1_300;
    const messages = Array.from({ length: 5 }, () => signedMessage());
    const outcomes = await sendAll(e.batching.direct, messages, to(e, queueUrl), 2_000);
    expect(outcomes.slice(0, 4).map((o) => o.kind)).toEqual(['success', 'success', 'success', 'success']);
    expect(outcomes[4]).toMatchObject({
      kind: 'retryable',
      statusClass: 'timeout',
      error: expect.stringMatching(/^SQS: not sent: \d+ ms of the attempt's time left after \d+ ms waiting/),
    });
    // it never reached the queue: its retry is its only copy
    expect([...e.proxy.calls.values()].reduce((a, b) => a + b, 0)).toBe(4);
    e.proxy.holdMs = 0;
    const got = await drainQueue(e.reader, queueUrl);
    expect(got.map((m) => headersOf(m)['X-Webhook-Event-Id']).sort()).toEqual(
      messages
        .slice(0, 4)
        .map((m) => m.meta.eventId)
        .sort(),
    );
  });

  it('fauxqs: a send whose attempt ends while it waits is taken out of the queue, a timeout, never sent', async () => {
    const e = emulator('fauxqs');
    const queueUrl = await e.queue('gave-up');
    e.proxy.reset();
    e.proxy.holdMs = 1_300;
    const target = to(e, queueUrl);
    const messages = Array.from({ length: 5 }, () => signedMessage());
    const outcomes = await Promise.all(messages.map((m, i) => e.batching.direct.send(m, target, { timeoutMs: i === 4 ? 500 : 5_000 })));
    expect(outcomes.slice(0, 4).map((o) => o.kind)).toEqual(['success', 'success', 'success', 'success']);
    expect(outcomes[4]).toMatchObject({ kind: 'retryable', statusClass: 'timeout', error: 'SQS: no answer within 500 ms' });
    expect([...e.proxy.calls.values()].reduce((a, b) => a + b, 0)).toBe(4);
    e.proxy.holdMs = 0;
    expect((await drainQueue(e.reader, queueUrl)).length).toBe(4);
  });

  it('moto (IAM): credentials not allowed to send fail every entry of a batch, final, with AWS’s reason', async () => {
    const e = emulator('moto');
    const queueUrl = await e.queue('refused');
    e.proxy.reset();
    const outcomes = await sendAll(
      e.refused!,
      Array.from({ length: 12 }, () => signedMessage()),
      to(e, queueUrl),
    );
    expect(e.proxy.calls.get('SendMessageBatch') ?? 0).toBeGreaterThan(0);
    for (const o of outcomes) {
      expect(o).toMatchObject({
        kind: 'permanent',
        statusClass: '4xx',
        error: expect.stringMatching(/^SQS: AccessDenied: .*not authorized to perform: sqs:SendMessage/),
      });
    }
    expect(await drainQueue(e.reader, queueUrl)).toEqual([]);
  });
});
