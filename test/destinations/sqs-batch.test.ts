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
  /** the ms each answer is held before it goes back (0: none), as set when its request came */
  holdMs: number;
  /** a front end that answers in XML: each JSON error answer goes back as the query protocol's XML, without x-amzn-query-error */
  xmlErrors: boolean;
  /** a front end's request body limit (nginx's client_max_body_size, 1m by default): a body over it is answered nginx's HTML 413; 0: none */
  maxBodyBytes: number;
  /** the requests answered 413 for their body's size since the last reset */
  tooLarge: number;
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
    xmlErrors: false,
    maxBodyBytes: 0,
    tooLarge: 0,
    reset() {
      proxy.calls.clear();
      proxy.batches.length = 0;
      proxy.holdMs = 0;
      proxy.xmlErrors = false;
      proxy.maxBodyBytes = 0;
      proxy.tooLarge = 0;
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
      const { holdMs, xmlErrors } = proxy;
      if (action === 'SendMessageBatch') {
        proxy.batches.push((JSON.parse(body.toString()) as { Entries: { MessageBody: string }[] }).Entries.map((x) => x.MessageBody));
      }
      if (proxy.maxBodyBytes > 0 && body.length > proxy.maxBodyBytes) {
        proxy.tooLarge += 1;
        const page =
          '<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>';
        return void res.writeHead(413, { 'content-type': 'text/html' }).end(page);
      }
      // the Host header as signed (the proxy's): the emulator checks the signature over it
      const forward = request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (ur) => {
        const out: Buffer[] = [];
        ur.on('data', (c: Buffer) => out.push(c));
        ur.on('end', () => {
          const status = ur.statusCode ?? 502;
          const xml = xmlErrors && status !== 200 ? xmlErrorOf(Buffer.concat(out)) : undefined;
          const answer = () => {
            if (xml === undefined) return res.writeHead(status, ur.headers).end(Buffer.concat(out));
            const headers = Object.fromEntries(
              Object.entries(ur.headers).filter(([k]) => !['x-amzn-query-error', 'content-length', 'content-type'].includes(k)),
            );
            res.writeHead(status, { ...headers, 'content-type': 'text/xml' }).end(xml);
          };
          if (holdMs > 0) setTimeout(answer, holdMs);
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

/** A JSON error answer (`__type`, `message`) as the query protocol's XML <ErrorResponse>; undefined when it is not one. */
function xmlErrorOf(body: Buffer): string | undefined {
  let parsed: { __type?: unknown; message?: unknown; Message?: unknown };
  try {
    parsed = JSON.parse(body.toString()) as typeof parsed;
  } catch {
    return undefined;
  }
  if (typeof parsed.__type !== 'string') return undefined;
  const escape = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const code = parsed.__type.split('#').pop()!;
  const message = typeof parsed.message === 'string' ? parsed.message : typeof parsed.Message === 'string' ? parsed.Message : '';
  return `<?xml version="1.0"?><ErrorResponse><Error><Type>Sender</Type><Code>${escape(code)}</Code><Message>${escape(message)}</Message></Error><RequestId>front-end</RequestId></ErrorResponse>`;
}

/** Waits until `done()` holds (polled every 10 ms), at most 10 s. */
async function until(done: () => boolean): Promise<void> {
  for (const start = Date.now(); !done(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() - start > 10_000) throw new Error('waited 10 s in vain');
  }
}

const requestsOf = (p: CountingProxy): number => [...p.calls.values()].reduce((a, b) => a + b, 0);

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
  /** moto: a user allowed sqs:SendMessage only (all AWS asks of a batch; moto asks sqs:SendMessageBatch too) */
  narrow?: Destinations;
  queue(name: string, attributes?: Record<string, string>): Promise<string>;
}

const emulators: Emulator[] = [];

async function startEmulator(name: Emulator['name']): Promise<Emulator> {
  const backend = name === 'moto' ? await startMotoBackend() : await startFauxqsBackend();
  const setup = { region, endpoint: backend.endpoint, credentials: { accessKeyId: 'setup', secretAccessKey: 'setup' } };
  let sender = setup.credentials;
  let reader = setup.credentials;
  let refused: typeof sender | undefined;
  let narrow: typeof sender | undefined;
  if (name === 'moto') {
    const iam = new IAMClient({ ...setup, region: 'us-east-1' });
    try {
      // AWS authorizes SendMessageBatch as sqs:SendMessage; moto checks each operation by its own name
      sender = await motoUser(iam, 'sender', ['sqs:SendMessage', 'sqs:SendMessageBatch']);
      reader = await motoUser(iam, 'reader', ['sqs:ReceiveMessage', 'sqs:DeleteMessageBatch', 'sqs:CreateQueue', 'sqs:GetQueueAttributes']);
      refused = await motoUser(iam, 'auditor', ['sqs:GetQueueAttributes', 'sqs:ListQueues']);
      narrow = await motoUser(iam, 'narrow', ['sqs:SendMessage']);
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
    ...(narrow ? { narrow: destinationsOf(narrow, 'direct') } : {}),
    queue: async (queueName, attributes) => (await createQueue(client, queueName, attributes)).url,
  };
}

beforeAll(async () => {
  emulators.push(await startEmulator('moto'), await startEmulator('fauxqs'));
}, 120_000);
afterAll(async () => {
  for (const e of emulators) {
    for (const d of [...Object.values(e.batching), e.refused, e.narrow]) await d?.close();
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

  // and moto behind a front end that answers in XML, without x-amzn-query-error: the refusal's <Code> splits the batch too (review6)
  it.each([...CASES.map(([name, send]) => [name, send, false] as const), ['moto', 'direct', true] as const])(
    "%s (%s, XML errors: %s): one entry over the queue's limit fails final with its reason, the others are stored once each",
    async (name, send, xmlErrors) => {
      const e = emulator(name);
      const queueUrl = await e.queue(`small-${send}`, { MaximumMessageSize: '1024' });
      const messages = Array.from({ length: 12 }, (_, i) =>
        signedMessage(i === 7 ? { body: Buffer.from(JSON.stringify({ s: 'x'.repeat(4 * 1024) })) } : {}),
      );
      e.proxy.reset();
      e.proxy.xmlErrors = xmlErrors;
      const outcomes = await sendAll(e.batching[send], messages, to(e, queueUrl));
      expect(outcomes[7]).toMatchObject({
        kind: 'permanent',
        statusClass: '4xx',
        error: expect.stringMatching(/^SQS: .*(shorter than|too long)/i),
      });
      expect(outcomes.filter((_, i) => i !== 7).map((o) => o.kind)).toEqual(Array(11).fill('success'));
      // the entry over the limit went in a batch (the first four went alone at once)
      expect(e.proxy.batches.some((b) => b.includes(messages[7]!.body.toString()))).toBe(true);
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

  it('moto (IAM): credentials allowed sqs:SendMessage only, 24 concurrent sends: a refused batch goes entry by entry, all stored once, none failed; the queue then sends alone', async () => {
    const e = emulator('moto');
    const queueUrl = await e.queue('narrow');
    const target = to(e, queueUrl);
    e.proxy.reset();
    const messages = Array.from({ length: 24 }, () => signedMessage());
    const outcomes = await sendAll(e.narrow!, messages, target);
    expect(outcomes.map((o) => o.kind)).toEqual(messages.map(() => 'success'));
    // moto refused a batch (it checks sqs:SendMessageBatch by name), and each message was sent alone, once
    expect(e.proxy.calls.get('SendMessageBatch') ?? 0).toBeGreaterThan(0);
    expect(e.proxy.calls.get('SendMessage')).toBe(24);
    const got = await drainQueue(e.reader, queueUrl);
    expect(got.map((m) => headersOf(m)['X-Webhook-Event-Id']).sort()).toEqual(messages.map((m) => m.meta.eventId).sort());
    const byEvent = new Map(got.map((m) => [headersOf(m)['X-Webhook-Event-Id'], m]));
    messages.forEach((m, i) => expect(byEvent.get(m.meta.eventId)!.MessageId).toBe(receiptOf(outcomes[i]!)));
    // the queue's sends now go alone: no batch is tried (and refused) again for a while
    e.proxy.reset();
    const again = Array.from({ length: 24 }, () => signedMessage());
    expect((await sendAll(e.narrow!, again, target)).map((o) => o.kind)).toEqual(again.map(() => 'success'));
    expect(e.proxy.calls.get('SendMessageBatch') ?? 0).toBe(0);
    expect(e.proxy.calls.get('SendMessage')).toBe(24);
    expect((await drainQueue(e.reader, queueUrl)).length).toBe(24);
  });

  it('fauxqs: entries of one batch with different timeouts each end at their own deadline: the long one is answered, the short one times out with its own reason', async () => {
    const e = emulator('fauxqs');
    const queueUrl = await e.queue('mixed-deadlines');
    const target = to(e, queueUrl);
    const d = e.batching.direct;
    e.proxy.reset();
    // four requests in flight, each answer held 1.3 s; A (30 s) and B (4 s) wait and then go as one
    // batch at about 1.3 s (B has 2.7 s left, over its floor of min(2 x 1.3 s, 4 s / 2) = 2 s), whose
    // answer is held 4 s: it comes at about 5.3 s, after B's deadline (4 s), long before A's (30 s)
    e.proxy.holdMs = 1_300;
    const fill = Array.from({ length: 4 }, () => signedMessage());
    const [a, b] = [signedMessage(), signedMessage()];
    const filling = fill.map((m) => d.send(m, target, { timeoutMs: 10_000 }));
    const long = d.send(a, target, { timeoutMs: 30_000 });
    const short = d.send(b, target, { timeoutMs: 4_000 });
    await until(() => requestsOf(e.proxy) === 4);
    e.proxy.holdMs = 4_000;
    const [outcomes, longOutcome, shortOutcome] = await Promise.all([Promise.all(filling), long, short]);
    expect(outcomes.map((o) => o.kind)).toEqual(['success', 'success', 'success', 'success']);
    expect(e.proxy.batches).toEqual([[a.body.toString(), b.body.toString()]]);
    // A's attempt is its own: answered, though B's deadline passed while their request was in flight
    expect(longOutcome).toMatchObject({ kind: 'success', receipt: { messageId: expect.any(String) } });
    expect(longOutcome.durationMs).toBeGreaterThan(4_500);
    // B ended at its own deadline, with its own timeout as the reason
    expect(shortOutcome).toMatchObject({ kind: 'retryable', statusClass: 'timeout', error: 'SQS: no answer within 4000 ms' });
    expect(shortOutcome.durationMs).toBeLessThan(4_500);
    // every message once (B's too: SQS took it before its attempt ended, as it would have taken B alone)
    e.proxy.holdMs = 0;
    const got = await drainQueue(e.reader, queueUrl);
    expect(got.map((m) => headersOf(m)['X-Webhook-Event-Id']).sort()).toEqual([...fill, a, b].map((m) => m.meta.eventId).sort());
    const read = got.find((m) => headersOf(m)['X-Webhook-Event-Id'] === a.meta.eventId)!;
    expect(read.MessageId).toBe(receiptOf(longOutcome));
  });

  it("fauxqs: requests that time out count in the queue's latency: a send that waits behind them then needs more time left to go", async () => {
    const e = emulator('fauxqs');
    const queueUrl = await e.queue('timing-out');
    const target = to(e, queueUrl);
    e.proxy.reset();
    // four requests in flight whose answers are held 3 s and whose attempts end at 2 s: the fifth
    // (3.4 s) waits for them, and at 2 s has 1.4 s left: under its floor once their 2 s are
    // counted (min(2 x 2 s, 3.4 s / 2) = 1.7 s), over the 1 s it was before
    e.proxy.holdMs = 3_000;
    const messages = Array.from({ length: 5 }, () => signedMessage());
    const outcomes = await Promise.all(messages.map((m, i) => e.batching.direct.send(m, target, { timeoutMs: i === 4 ? 3_400 : 2_000 })));
    expect(outcomes.slice(0, 4)).toEqual(
      Array(4).fill(expect.objectContaining({ kind: 'retryable', statusClass: 'timeout', error: 'SQS: no answer within 2000 ms' })),
    );
    expect(outcomes[4]).toMatchObject({
      kind: 'retryable',
      statusClass: 'timeout',
      error: expect.stringMatching(
        /^SQS: not sent: \d+ ms of the attempt's time left after \d+ ms waiting .* under the 1700 ms a send is given/,
      ),
    });
    // it never reached the queue: its retry will be its only copy
    expect(requestsOf(e.proxy)).toBe(4);
    e.proxy.holdMs = 0;
    const got = await drainQueue(e.reader, queueUrl);
    expect(got.some((m) => headersOf(m)['X-Webhook-Event-Id'] === messages[4]!.meta.eventId)).toBe(false);
  });

  it('fauxqs: an entry whose attempt ends while its batch waits for a credentials renewal is left out of the request: its retry is its only copy', async () => {
    const e = emulator('fauxqs');
    const { d, renewal } = renewingDestinations();
    try {
      const queueUrl = await e.queue('renewal');
      const target = to(e, queueUrl);
      e.proxy.reset();
      // four requests in flight, answers held 1.3 s; A (30 s) and B (4 s) wait and are taken as one
      // batch at about 1.3 s (B has 2.7 s left, over its 2 s floor); the credentials then take 3 s,
      // so the request could go at about 4.3 s, after B's attempt ended at 4 s
      e.proxy.holdMs = 1_300;
      const fill = Array.from({ length: 4 }, () => signedMessage());
      const [a, b] = [signedMessage(), signedMessage()];
      const filling = fill.map((m) => d.send(m, target, { timeoutMs: 10_000 }));
      await until(() => requestsOf(e.proxy) === 4);
      const long = d.send(a, target, { timeoutMs: 30_000 });
      const short = d.send(b, target, { timeoutMs: 4_000 });
      e.proxy.holdMs = 0;
      renewal.ms = 3_000;
      const [outcomes, longOutcome, shortOutcome] = await Promise.all([Promise.all(filling), long, short]);
      expect(outcomes.map((o) => o.kind)).toEqual(['success', 'success', 'success', 'success']);
      expect(longOutcome).toMatchObject({ kind: 'success', receipt: { messageId: expect.any(String) } });
      // B ended at its own deadline, with its own reason, while the credentials were awaited
      expect(shortOutcome).toMatchObject({ kind: 'retryable', statusClass: 'timeout', error: 'SQS: no answer within 4000 ms' });
      expect(shortOutcome.durationMs).toBeLessThan(4_500);
      // and was not sent: A went alone; B's retry (its next attempt) is its only copy
      expect(e.proxy.batches).toEqual([]);
      expect((await d.send(b, target, { timeoutMs: 10_000 })).kind).toBe('success');
      const got = await drainQueue(e.reader, queueUrl);
      expect(got.map((m) => headersOf(m)['X-Webhook-Event-Id']).sort()).toEqual([...fill, a, b].map((m) => m.meta.eventId).sort());
    } finally {
      await d.close();
    }
  });

  // JSON webhooks are mostly quotes, each escaped in the batch's JSON: 148 KB by SQS's count is
  // 222 KB on the wire, so 7 of them (SQS's 1 MiB) would be a 1.5 MiB request body (review7's BUG 2)
  it.each([
    ['1 MiB (nginx’s default): batches are cut by their bytes on the wire, none is refused', 1024 * 1024, false],
    ['600 KB: a batch over it is refused (HTML 413) and its entries each go alone', 600 * 1024, true],
  ])('fauxqs behind a front end whose body limit is %s; every message stored once, none failed', async (_, maxBodyBytes, refused) => {
    const e = emulator('fauxqs');
    const queueUrl = await e.queue(`front-end-${maxBodyBytes}`);
    e.proxy.reset();
    e.proxy.maxBodyBytes = maxBodyBytes;
    const messages = Array.from({ length: 12 }, () => signedMessage({ body: Buffer.from(JSON.stringify(Array(37_000).fill('a'))) }));
    const outcomes = await sendAll(e.batching.direct, messages, to(e, queueUrl));
    expect(outcomes.map((o) => o.kind)).toEqual(messages.map(() => 'success'));
    expect(e.proxy.calls.get('SendMessageBatch') ?? 0).toBeGreaterThan(0);
    expect(e.proxy.tooLarge > 0).toBe(refused);
    e.proxy.maxBodyBytes = 0;
    const got = await drainQueue(e.reader, queueUrl);
    expect(got.map((m) => headersOf(m)['X-Webhook-Event-Id']).sort()).toEqual(messages.map((m) => m.meta.eventId).sort());
  });

  it("fauxqs: a request that never went (its attempt ended while the credentials were renewed) is not counted in the queue's latency", async () => {
    const e = emulator('fauxqs');
    const { d, renewal } = renewingDestinations();
    try {
      const queueUrl = await e.queue('never-went');
      const target = to(e, queueUrl);
      e.proxy.reset();
      // the queue's requests take 2 s: its latency is 2 s
      e.proxy.holdMs = 2_000;
      const slow = await Promise.all(Array.from({ length: 4 }, () => d.send(signedMessage(), target, { timeoutMs: 10_000 })));
      expect(slow.map((o) => o.kind)).toEqual(['success', 'success', 'success', 'success']);
      // four 1 s attempts whose signing waits for a 1.5 s renewal: they never go (counted, their ~0 ms
      // would bring the latency down to about 0.5 s)
      renewal.ms = 1_500;
      const unsent = await Promise.all(Array.from({ length: 4 }, () => d.send(signedMessage(), target, { timeoutMs: 1_000 })));
      expect(unsent.map((o) => o.kind)).toEqual(['retryable', 'retryable', 'retryable', 'retryable']);
      expect(requestsOf(e.proxy)).toBe(4);
      // then four requests held 3 s and a fifth (5.8 s) waiting behind them: when the first ends the
      // latency is about 0.7 x 2 s + 0.3 x 3 s = 2.3 s, so its floor is min(2 x 2.3 s, 5.8 s / 2) = 2.9 s,
      // over the 2.8 s it has left: not sent (with the ~0 ms counted, 1.2 s and a floor of 2.5 s: sent)
      e.proxy.holdMs = 3_000;
      const messages = Array.from({ length: 5 }, () => signedMessage());
      const outcomes = await Promise.all(messages.map((m, i) => d.send(m, target, { timeoutMs: i === 4 ? 5_800 : 10_000 })));
      expect(outcomes.slice(0, 4).map((o) => o.kind)).toEqual(['success', 'success', 'success', 'success']);
      expect(outcomes[4]).toMatchObject({
        kind: 'retryable',
        error: expect.stringMatching(/^SQS: not sent: \d+ ms of the attempt's time left after \d+ ms waiting .* under the \d+ ms/),
      });
      expect(requestsOf(e.proxy)).toBe(8);
    } finally {
      await d.close();
    }
  });
});

/**
 * Batching destinations whose credentials expire within the SDK's 5 min window (each signing asks
 * for them) until `renewal.ms` is set: then a renewal that takes that long (an STS call) and gives
 * credentials for an hour (review7's BUG 1).
 */
function renewingDestinations(): { d: ReturnType<typeof createDestinations>; renewal: { ms: number } } {
  const renewal = { ms: 0 };
  const credentials = async () => {
    if (renewal.ms === 0) return { accessKeyId: 'AKID', secretAccessKey: 'secret', expiration: new Date(Date.now() + 60_000) };
    await new Promise((r) => setTimeout(r, renewal.ms));
    return { accessKeyId: 'AKID', secretAccessKey: 'secret', expiration: new Date(Date.now() + 3_600_000) };
  };
  const d = createDestinations({
    addressPolicy: createAddressPolicy(),
    awsCredentials: credentials,
    awsSqsSend: 'direct',
    awsSqsBatch: true,
  });
  return { d, renewal };
}
