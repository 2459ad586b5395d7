import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort, waitForPort } from '../../src/dev/ports.js';
import { isAppError } from '../../src/domain/errors.js';
import { clientConfig, type AwsClientsOptions } from '../../src/transport/aws-client-config.js';
import { createEventPublisher } from '../../src/transport/publisher.js';
import { AwsCallError } from '../../src/transport/signed-aws-call.js';
import { createSnsPublishBatch } from '../../src/transport/sns-publish-batch.js';
import { createSqsCalls } from '../../src/transport/sqs-calls.js';
import { ensureTopology } from '../../src/transport/topology.js';
import { MOTO_SERVER } from './backends.js';
import { receiveOne } from './helpers.js';
import { sleep } from '../support/wait.js';

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:webhook-fanout-events';
const entries = (n: number): Array<{ id: string; message: string }> =>
  Array.from({ length: n }, (_, i) => ({ id: `e${i}`, message: JSON.stringify({ eventId: randomUUID() }) }));

/**
 * The hot calls, ingest's PublishBatch and the consumer's ReceiveMessage and DeleteMessageBatch
 * (signed POSTs of their own, not the SDK's send), against moto with IAM authentication on: moto recomputes every request's SigV4 signature with botocore, as AWS
 * does, and refuses a request whose signature does not match.
 */
describe('PublishBatch signed as AWS checks it (moto with authentication)', () => {
  let moto: ChildProcess;
  let endpoint: string;
  let key: { accessKeyId: string; secretAccessKey: string };

  /** the first three requests are free (moto's INITIAL_NO_AUTH_ACTION_COUNT): a user, its policy, its key */
  async function iam(params: Record<string, string>): Promise<string> {
    const res = await fetch(endpoint, {
      method: 'POST',
      body: new URLSearchParams({ ...params, Version: '2010-05-08' }),
      // moto routes by the credential scope's service; the signature is not checked yet
      headers: {
        authorization:
          'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0',
      },
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`IAM ${params.Action}: ${res.status} ${text}`);
    return text;
  }

  beforeAll(async () => {
    const port = await freePort();
    endpoint = `http://127.0.0.1:${port}`;
    moto = spawn(MOTO_SERVER, ['-H', '127.0.0.1', '-p', String(port)], {
      stdio: 'ignore',
      env: { ...process.env, INITIAL_NO_AUTH_ACTION_COUNT: '3' },
    });
    await waitForPort(port, 30_000);
    await iam({ Action: 'CreateUser', UserName: 'ingest' });
    const policy = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: ['sns:*', 'sqs:*'], Resource: '*' }] };
    await iam({ Action: 'PutUserPolicy', UserName: 'ingest', PolicyName: 'transport', PolicyDocument: JSON.stringify(policy) });
    const xml = await iam({ Action: 'CreateAccessKey', UserName: 'ingest' });
    key = {
      accessKeyId: /<AccessKeyId>([^<]+)<\/AccessKeyId>/.exec(xml)?.[1] ?? '',
      secretAccessKey: /<SecretAccessKey>([^<]+)<\/SecretAccessKey>/.exec(xml)?.[1] ?? '',
    };
    expect(key.accessKeyId).toMatch(/^AKIA/);
  }, 60_000);

  afterAll(async () => {
    if (moto && moto.exitCode === null) {
      const exited = once(moto, 'exit');
      moto.kill('SIGTERM');
      await exited;
    }
  });

  function clientsWith(secretAccessKey: string): { sns: SNSClient; sqs: SQSClient; options: AwsClientsOptions } {
    const options: AwsClientsOptions = { region: 'us-east-1', endpoint, maxAttempts: 1, env: {} };
    const credentials = { accessKeyId: key.accessKeyId, secretAccessKey };
    return {
      sns: new SNSClient({ ...clientConfig(options, 'sns'), credentials }),
      sqs: new SQSClient({ ...clientConfig(options, 'sqs'), credentials }),
      options,
    };
  }

  it('with the right key the topic takes every id and the queue holds the raw message', async () => {
    const { sns, sqs, options } = clientsWith(key.secretAccessKey);
    const topology = await ensureTopology({ sns, sqs }, { topicName: 'signed', queueName: 'signed', dlqName: 'signed-dlq' });
    const publisher = createEventPublisher({ sns, aws: options, topicArn: topology.topicArn });
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    await Promise.all(ids.map((id) => publisher.publish(id)));
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const m = await receiveOne(sqs, topology.queueUrl, 1);
      if (m?.Body) seen.push((JSON.parse(m.Body) as { eventId: string }).eventId);
    }
    expect(seen.sort()).toEqual([...ids].sort());
    await publisher.close();
    sns.destroy();
    sqs.destroy();
  });

  it('receive and delete, signed with the right key: the published id comes back once, and is gone after the delete', async () => {
    const { sns, sqs, options } = clientsWith(key.secretAccessKey);
    const topology = await ensureTopology(
      { sns, sqs },
      { topicName: 'signed-q', queueName: 'signed-q', dlqName: 'signed-q-dlq', visibilityTimeoutSeconds: 1 },
    );
    const publisher = createEventPublisher({ sns, aws: options, topicArn: topology.topicArn });
    const eventId = randomUUID();
    await publisher.publish(eventId);
    const calls = createSqsCalls({ sqs, aws: options });
    const received = await calls.receive({ queueUrl: topology.queueUrl, maxMessages: 10, waitTimeSeconds: 2 });
    expect(received.map((m) => m.Body)).toEqual([JSON.stringify({ eventId })]);
    expect(received[0]?.Attributes?.ApproximateReceiveCount).toBe('1');
    const failed = await calls.deleteBatch(topology.queueUrl, [{ id: 'm0', receiptHandle: received[0]?.ReceiptHandle ?? '' }]);
    expect(failed).toEqual([]);
    // past the 1 s visibility timeout nothing comes back: it was deleted, not only hidden
    await sleep(1_200);
    expect(await calls.receive({ queueUrl: topology.queueUrl, maxMessages: 10, waitTimeSeconds: 1 })).toEqual([]);
    await calls.close();
    await publisher.close();
    sns.destroy();
    sqs.destroy();
  });

  it('a receive signed with a wrong secret fails with SignatureDoesNotMatch, naming no secret', async () => {
    const wrong = 'not-the-secret-0123456789';
    const { sqs, options } = clientsWith(wrong);
    const calls = createSqsCalls({ sqs, aws: options });
    const err = await calls.receive({ queueUrl: `${endpoint}/123456789012/signed-q`, maxMessages: 1, waitTimeSeconds: 0 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AwsCallError);
    expect((err as AwsCallError).name).toBe('SignatureDoesNotMatch');
    expect((err as Error).message).not.toContain(wrong);
    await calls.close();
    sqs.destroy();
  });

  it('with a wrong secret every caller gets a transient publish_failed naming SignatureDoesNotMatch, and no secret', async () => {
    const wrong = 'not-the-secret-0123456789';
    const { sns, options } = clientsWith(wrong);
    const publisher = createEventPublisher({ sns, aws: options, topicArn: 'arn:aws:sns:us-east-1:123456789012:signed' });
    const results = await Promise.allSettled([randomUUID(), randomUUID()].map((id) => publisher.publish(id)));
    for (const r of results) {
      expect(r.status).toBe('rejected');
      const err = (r as PromiseRejectedResult).reason as unknown;
      expect(isAppError(err) && err.kind === 'transient' && err.code === 'publish_failed').toBe(true);
      expect((err as Error).message).toMatch(/failed: SignatureDoesNotMatch$/);
      expect((err as Error).message).not.toContain(wrong);
      expect((err as Error).message).not.toContain(key.accessKeyId);
    }
    await publisher.close();
    sns.destroy();
  });
});

/** A real HTTP server that answers each call with the next scripted answer. */
type Answer = { status: number; body: string; headers?: Record<string, string> };

async function scriptedServer(answers: Array<Answer | 'hang'>): Promise<{
  endpoint: string;
  requests: Array<{ headers: http.IncomingHttpHeaders; body: string }>;
  close(): Promise<void>;
}> {
  const requests: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      requests.push({ headers: req.headers, body });
      const answer = answers[Math.min(requests.length, answers.length) - 1] ?? { status: 500, body: '' };
      if (answer === 'hang') return;
      res.writeHead(answer.status, { 'content-type': 'text/xml', ...answer.headers }).end(answer.body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const error = (code: string): string =>
  `<ErrorResponse><Error><Type>Sender</Type><Code>${code}</Code><Message>m</Message></Error></ErrorResponse>`;
const taken = (ids: string[], failed: Record<string, string> = {}): string =>
  `<PublishBatchResponse><PublishBatchResult><Failed>${Object.entries(failed)
    .map(([id, code]) => `<member><Code>${code}</Code><Id>${id}</Id><SenderFault>true</SenderFault></member>`)
    .join(
      '',
    )}</Failed><Successful>${ids.map((id) => `<member><Id>${id}</Id><MessageId>m</MessageId></member>`).join('')}</Successful></PublishBatchResult></PublishBatchResponse>`;

describe('signed calls: what is retried, what is not, what a caller learns', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function callsTo(answers: Parameters<typeof scriptedServer>[0], extra: Partial<AwsClientsOptions> = {}) {
    const server = await scriptedServer(answers);
    cleanups.push(() => server.close());
    const options: AwsClientsOptions = { region: 'us-east-1', endpoint: server.endpoint, env: {}, ...extra };
    const sns = new SNSClient(clientConfig(options, 'sns'));
    cleanups.push(() => sns.destroy());
    const slept: number[] = [];
    const calls = createSnsPublishBatch({ sns, aws: options, connections: 2, sleep: async (ms) => void slept.push(ms) });
    cleanups.push(() => calls.close());
    return { server, calls, slept, sns, options };
  }

  /** the consumer's SQS calls against a scripted server */
  async function sqsCallsTo(answers: Parameters<typeof scriptedServer>[0]) {
    const server = await scriptedServer(answers);
    cleanups.push(() => server.close());
    const options: AwsClientsOptions = { region: 'us-east-1', endpoint: server.endpoint, env: {} };
    const sqs = new SQSClient(clientConfig(options, 'sqs'));
    cleanups.push(() => sqs.destroy());
    const calls = createSqsCalls({ sqs, aws: options });
    cleanups.push(() => calls.close());
    return { server, calls };
  }

  it('sends one signed form POST: SigV4 for sns in the region, the entries in order', async () => {
    const { server, calls } = await callsTo([{ status: 200, body: taken(['e0', 'e1']) }]);
    const sent = entries(2);
    expect(await calls.publishBatch(TOPIC, sent)).toEqual({ failed: new Map() });
    const [req] = server.requests;
    expect(req?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=test\/\d{8}\/us-east-1\/sns\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
    );
    expect(req?.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
    expect(req?.headers['content-type']).toBe('application/x-www-form-urlencoded; charset=utf-8');
    const form = new URLSearchParams(req?.body);
    expect(form.get('Action')).toBe('PublishBatch');
    expect(form.get('TopicArn')).toBe(TOPIC);
    expect(form.get('PublishBatchRequestEntries.member.2.Message')).toBe(sent[1]?.message);
  });

  it.each<[string, Array<{ status: number; body: string }>, number]>([
    [
      'a 503 is retried',
      [
        { status: 503, body: error('ServiceUnavailable') },
        { status: 200, body: taken(['e0']) },
      ],
      2,
    ],
    [
      'a 500 without a body is retried',
      [
        { status: 500, body: '' },
        { status: 200, body: taken(['e0']) },
      ],
      2,
    ],
    [
      'throttling (400 Throttling) is retried',
      [
        { status: 400, body: error('Throttling') },
        { status: 200, body: taken(['e0']) },
      ],
      2,
    ],
    [
      'a 429 is retried',
      [
        { status: 429, body: '' },
        { status: 200, body: taken(['e0']) },
      ],
      2,
    ],
  ])('%s, then the call succeeds', async (_what, answers, requests) => {
    const { server, calls, slept } = await callsTo(answers);
    expect((await calls.publishBatch(TOPIC, entries(1))).failed.size).toBe(0);
    expect(server.requests).toHaveLength(requests);
    // the SDK's full jitter: the first wait at most 100 ms
    expect(slept).toHaveLength(1);
    expect(slept[0]).toBeLessThanOrEqual(100);
  });

  it.each<[string, { status: number; body: string }, string]>([
    ['the topic does not exist', { status: 404, body: error('NotFound') }, 'NotFound'],
    ['the key may not publish', { status: 403, body: error('AuthorizationError') }, 'AuthorizationError'],
    ['the request is malformed', { status: 400, body: error('InvalidParameter') }, 'InvalidParameter'],
    ['a 4xx without a code', { status: 400, body: 'no xml' }, 'HTTP 400'],
    ['a bad signature while the clocks agree', { status: 403, body: error('SignatureDoesNotMatch') }, 'SignatureDoesNotMatch'],
  ])('%s: not retried; the error names the code', async (_what, answer, code) => {
    const { server, calls } = await callsTo([answer, { status: 200, body: taken(['e0']) }]);
    const err = await calls.publishBatch(TOPIC, entries(1)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AwsCallError);
    expect((err as AwsCallError).name).toBe(code);
    expect((err as AwsCallError).status).toBe(answer.status);
    expect(server.requests).toHaveLength(1);
  });

  it("a clock far off the server's: the offset is learnt from its Date, and the retry is signed with the server's time", async () => {
    const serverNow = Date.now() + 3_600_000; // the node's clock is an hour behind
    const { server, calls, sns } = await callsTo([
      { status: 403, body: error('RequestTimeTooSkewed'), headers: { date: new Date(serverNow).toUTCString() } },
      { status: 200, body: taken(['e0']) },
    ]);
    expect((await calls.publishBatch(TOPIC, entries(1))).failed.size).toBe(0);
    expect(server.requests).toHaveLength(2);
    const signedAt = (h: http.IncomingHttpHeaders): number => {
      const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(String(h['x-amz-date']));
      return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) : NaN;
    };
    expect(Math.abs(signedAt(server.requests[0]!.headers) - Date.now())).toBeLessThan(60_000);
    expect(Math.abs(signedAt(server.requests[1]!.headers) - serverNow)).toBeLessThan(60_000);
    // shared with the SDK client, as its own calls would have set it
    expect(Math.abs(sns.config.systemClockOffset - 3_600_000)).toBeLessThan(60_000);
  });

  it.each<[string, Answer, string, number]>([
    [
      'SQS: a missing queue (query-compatible header) is not retried',
      {
        status: 400,
        body: '{"__type":"com.amazonaws.sqs#QueueDoesNotExist"}',
        headers: { 'x-amzn-query-error': 'AWS.SimpleQueueService.NonExistentQueue;Sender' },
      },
      'AWS.SimpleQueueService.NonExistentQueue',
      1,
    ],
    [
      'SQS: throttling (JSON __type) is retried',
      { status: 400, body: '{"__type":"com.amazonaws.sqs#RequestThrottled"}' },
      'RequestThrottled',
      2,
    ],
  ])('%s', async (_what, answer, code, requests) => {
    const { server, calls } = await sqsCallsTo([answer]);
    await expect(calls.receive({ queueUrl: `${server.endpoint}/1/q`, maxMessages: 1, waitTimeSeconds: 0 })).rejects.toMatchObject({
      name: code,
      status: 400,
    });
    expect(server.requests).toHaveLength(requests);
    const sent = server.requests[0];
    expect(sent?.headers['x-amz-target']).toBe('AmazonSQS.ReceiveMessage');
    expect(sent?.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(sent?.headers.authorization).toMatch(/\/us-east-1\/sqs\/aws4_request, /);
    expect(JSON.parse(sent?.body ?? '{}')).toMatchObject({
      QueueUrl: `${server.endpoint}/1/q`,
      MaxNumberOfMessages: 1,
      WaitTimeSeconds: 0,
    });
  });

  it('SQS: aborting a long poll ends it at once and is not retried', async () => {
    const { server, calls } = await sqsCallsTo(['hang']);
    const abort = new AbortController();
    const receiving = calls.receive({ queueUrl: `${server.endpoint}/1/q`, maxMessages: 10, waitTimeSeconds: 20, signal: abort.signal });
    // aborted once the poll is at the server (a fixed delay raced the request on a loaded machine)
    await vi.waitFor(() => expect(server.requests).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const t0 = Date.now();
    abort.abort();
    await expect(receiving).rejects.toMatchObject({ name: 'Aborted' });
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(server.requests).toHaveLength(1);
  });

  it('gives up after maxAttempts calls that all fail', async () => {
    const { server, calls } = await callsTo([{ status: 503, body: error('ServiceUnavailable') }], { maxAttempts: 3 });
    await expect(calls.publishBatch(TOPIC, entries(1))).rejects.toMatchObject({ name: 'ServiceUnavailable', status: 503 });
    expect(server.requests).toHaveLength(3);
  });

  it('a server that never answers fails the call after the request timeout, each attempt', async () => {
    const { server, calls } = await callsTo(['hang'], { snsRequestTimeoutMs: 300, maxAttempts: 2 });
    const t0 = Date.now();
    await expect(calls.publishBatch(TOPIC, entries(1))).rejects.toMatchObject({ name: 'RequestTimeout' });
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(2);
  });

  it('an answer over 1 MiB is not read to the end and fails the call', async () => {
    const { calls } = await callsTo([{ status: 200, body: `<PublishBatchResponse>${'x'.repeat(2 << 20)}</PublishBatchResponse>` }], {
      maxAttempts: 1,
    });
    await expect(calls.publishBatch(TOPIC, entries(1))).rejects.toMatchObject({ name: 'NetworkError' });
  });

  it('refuses a batch SNS would refuse: none, more than ten, or ids that repeat', async () => {
    const { server, calls } = await callsTo([{ status: 200, body: taken(['e0']) }]);
    for (const bad of [[], entries(11), [...entries(1), ...entries(1)]]) {
      await expect(calls.publishBatch(TOPIC, bad)).rejects.toMatchObject({ kind: 'internal', code: 'invalid_publish_batch' });
    }
    expect(server.requests).toHaveLength(0);
  });

  it('through the publisher: the caller whose entry SNS refused, or did not name, is rejected; the others resolve', async () => {
    const server = await scriptedServer([{ status: 200, body: taken(['e0', 'e2'], { e1: 'InvalidParameter' }) }]);
    cleanups.push(() => server.close());
    const options: AwsClientsOptions = { region: 'us-east-1', endpoint: server.endpoint, env: {} };
    const sns = new SNSClient(clientConfig(options, 'sns'));
    cleanups.push(() => sns.destroy());
    const publisher = createEventPublisher({ sns, aws: options, topicArn: TOPIC, maxInFlight: 1 });
    cleanups.push(() => publisher.close());
    const ids = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const results = await Promise.allSettled(ids.map((id) => publisher.publish(id)));
    expect(server.requests).toHaveLength(1); // one call for the four
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    expect(((results[1] as PromiseRejectedResult).reason as Error).message).toBe(`publishing event ${ids[1]} failed: InvalidParameter`);
    expect(((results[3] as PromiseRejectedResult).reason as Error).message).toBe(`publishing event ${ids[3]} failed: NoResult`);
  });
});
