import {
  CreateAccessKeyCommand,
  CreateRoleCommand,
  CreateUserCommand,
  IAMClient,
  PutRolePolicyCommand,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import { CreateEventBusCommand, EventBridgeClient, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient, type Message as SqsMessage } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import type { EndpointDestination } from '../../src/domain/records.js';
import { createDestinations } from '../../src/destinations/index.js';
import { addEndpoint, addEvent, deliveryOf, startFanoutHarness, uniqueSource, type FanoutHarness } from '../fanout/support/harness.js';
import { createQueue, drainQueue } from '../support/sqs-queues.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { sleep } from '../support/wait.js';
import { startMotoBackend, type Backend } from '../transport/backends.js';
import { AWS_SQS_SENDS } from '../../src/config/settings.js';
import { signedMessage, verifySignature } from './broker-messages.js';

// SQS, SNS and EventBridge endpoints delivered by the real worker (Temporal, Postgres, the deliver
// activity) to moto with its IAM checks on: a role refused by its policy ends the delivery FAILED
// at once with AWS's reason, unknown keys are refused; moto unreachable for 30 s loses no SQS
// event and stores none twice.

const region = 'eu-west-1';
const ACCOUNT = '123456789012';
let moto: Backend;
let proxy: TcpProxy;
let harness: FanoutHarness;
/** the worker's identity (the pod's, in production): may publish, read back and assume the roles */
let worker: { accessKeyId: string; secretAccessKey: string };
let reader: SQSClient;
const queues: Record<'payments' | 'outage' | 'fromTopic' | 'fromBus' | 'sends' | 'sendsFifo' | 'small', string> = {
  payments: '',
  outage: '',
  fromTopic: '',
  fromBus: '',
  sends: '',
  sendsFifo: '',
  small: '',
};
let topicArn = '';
const BUS = 'payments';

const policy = (actions: string[]): string =>
  JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: actions, Resource: '*' }] });
const TRUST = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${ACCOUNT}:user/worker` }, Action: 'sts:AssumeRole' }],
});

/**
 * Everything a test needs in moto, made before its IAM checks are on: the queues, an SNS topic and
 * an EventBridge bus each delivering to a queue of their own (how their messages are read back),
 * the worker's user, two roles.
 */
async function seedMoto(): Promise<void> {
  const setup = { region, endpoint: moto.endpoint, credentials: { accessKeyId: 'setup', secretAccessKey: 'setup' } };
  const iam = new IAMClient({ ...setup, region: 'us-east-1' });
  const sqs = new SQSClient(setup);
  const sns = new SNSClient(setup);
  const eb = new EventBridgeClient(setup);
  try {
    queues.payments = (await createQueue(sqs, 'payments')).url;
    // FIFO: the event id de-duplicates, so a publish whose answer the outage cut is not a second message
    queues.outage = (await createQueue(sqs, 'outage.fifo', { FifoQueue: 'true' })).url;
    // the two ways of sending to SQS (AWS_SQS_SEND), each checked under IAM below
    queues.sends = (await createQueue(sqs, 'sends')).url;
    queues.sendsFifo = (await createQueue(sqs, 'sends.fifo', { FifoQueue: 'true' })).url;
    queues.small = (await createQueue(sqs, 'small', { MaximumMessageSize: '1024' })).url;
    const fromTopic = await createQueue(sqs, 'from-topic');
    queues.fromTopic = fromTopic.url;
    topicArn = (await sns.send(new CreateTopicCommand({ Name: 'payments' }))).TopicArn!;
    // SNS's JSON envelope (no raw delivery): its MessageId is what Publish answered
    await sns.send(new SubscribeCommand({ TopicArn: topicArn, Protocol: 'sqs', Endpoint: fromTopic.arn }));
    const fromBus = await createQueue(sqs, 'from-bus');
    queues.fromBus = fromBus.url;
    await eb.send(new CreateEventBusCommand({ Name: BUS }));
    await eb.send(
      new PutRuleCommand({ Name: 'all', EventBusName: BUS, EventPattern: JSON.stringify({ source: [{ prefix: '/webhook-fanout/' }] }) }),
    );
    await eb.send(new PutTargetsCommand({ Rule: 'all', EventBusName: BUS, Targets: [{ Id: 'q', Arn: fromBus.arn }] }));
    await iam.send(new CreateUserCommand({ UserName: 'worker' }));
    await iam.send(
      new PutUserPolicyCommand({
        UserName: 'worker',
        PolicyName: 'publish-and-read',
        PolicyDocument: policy(['sqs:SendMessage', 'sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:DeleteMessageBatch', 'sts:AssumeRole']),
      }),
    );
    const key = (await iam.send(new CreateAccessKeyCommand({ UserName: 'worker' }))).AccessKey!;
    worker = { accessKeyId: key.AccessKeyId!, secretAccessKey: key.SecretAccessKey! };
    for (const [role, actions] of [
      ['publisher', ['sqs:SendMessage', 'sns:Publish', 'events:PutEvents']],
      // may look at queues, topics and buses, not publish to them
      [
        'auditor',
        [
          'sqs:GetQueueAttributes',
          'sqs:ListQueues',
          'sns:ListTopics',
          'sns:GetTopicAttributes',
          'events:ListRules',
          'events:DescribeEventBus',
        ],
      ],
    ] as const) {
      await iam.send(new CreateRoleCommand({ RoleName: role, AssumeRolePolicyDocument: TRUST }));
      await iam.send(new PutRolePolicyCommand({ RoleName: role, PolicyName: 'aws', PolicyDocument: policy([...actions]) }));
    }
  } finally {
    iam.destroy();
    sqs.destroy();
    sns.destroy();
    eb.destroy();
  }
  // from now on moto checks every request's signature and the policies of its principal
  const on = await fetch(`${moto.endpoint}/moto-api/reset-auth`, { method: 'POST', body: '0' });
  if (!on.ok) throw new Error(`moto did not turn its IAM checks on: ${on.status} ${await on.text()}`);
}

/** The event id a message carries (its X-Webhook-Event-Id, in the webhook-headers attribute). */
const eventIdOf = (m: SqsMessage): string | undefined =>
  (JSON.parse(m.MessageAttributes?.['webhook-headers']?.StringValue ?? '{}') as Record<string, string>)['X-Webhook-Event-Id'];

type AwsType = 'SQS' | 'SNS' | 'EventBridge';

/** The messages each type's endpoints published, as their consumers read them: [the id the service gave it, the event id]. */
async function published(type: AwsType): Promise<[string | undefined, string | undefined][]> {
  if (type === 'SQS') return (await drainQueue(reader, queues.payments)).map((m) => [m.MessageId, eventIdOf(m)]);
  if (type === 'SNS') {
    return (await drainQueue(reader, queues.fromTopic)).map((m) => {
      const envelope = JSON.parse(m.Body ?? '{}') as { MessageId?: string; MessageAttributes?: Record<string, { Value: string }> };
      const headers = JSON.parse(envelope.MessageAttributes?.['webhook-headers']?.Value ?? '{}') as Record<string, string>;
      return [envelope.MessageId, headers['X-Webhook-Event-Id']];
    });
  }
  return (await drainQueue(reader, queues.fromBus)).map((m) => {
    const event = JSON.parse(m.Body ?? '{}') as { id?: string; detail?: { headers?: Record<string, string> } };
    return [event.id, event.detail?.headers?.['X-Webhook-Event-Id']];
  });
}

/** An endpoint's destination of each AWS type, on moto, as `roleArn` (null: the worker's own identity). */
const awsTo = (type: AwsType, roleArn: string | null = null): Extract<EndpointDestination, { type: AwsType }> => {
  const on = { region, endpointUrl: moto.endpoint, roleArn };
  if (type === 'SQS') return { type, queueUrl: queues.payments, ...on };
  if (type === 'SNS') return { type, topicArn, ...on };
  return { type, eventBusName: BUS, detailType: null, ...on };
};

/** What each type's refused publish names: the service, and the IAM action the role lacks. */
const REFUSED: Record<AwsType, { service: string; action: string }> = {
  SQS: { service: 'SQS', action: 'sqs:SendMessage' },
  SNS: { service: 'SNS', action: 'sns:Publish' },
  EventBridge: { service: 'EventBridge', action: 'events:PutEvents' },
};

const sqsTo = (
  queueUrl: string,
  over: { endpointUrl?: string; roleArn?: string | null } = {},
): Extract<EndpointDestination, { type: 'SQS' }> => ({
  type: 'SQS',
  queueUrl,
  region,
  endpointUrl: over.endpointUrl ?? moto.endpoint,
  roleArn: over.roleArn ?? null,
});

interface AttemptRow {
  attempt: number;
  outcome: string;
  error: string | null;
  receipt: { messageId?: string } | null;
}
const attemptsOf = (deliveryId: string): Promise<AttemptRow[]> =>
  harness.database.db('webhook_delivery_attempt').where({ delivery_id: deliveryId }).orderBy('attempt');

beforeAll(async () => {
  moto = await startMotoBackend();
  await seedMoto();
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(moto.endpoint).port) });
  reader = new SQSClient({ region, endpoint: moto.endpoint, credentials: worker });
  // retries over the outage every 0.5 to 4 s: a dozen attempts in 30 s
  harness = await startFanoutHarness({
    awsCredentials: worker,
    backoff: { initialIntervalMs: 500, backoffCoefficient: 2, maximumIntervalMs: 4_000 },
  });
}, 120_000);
afterAll(async () => {
  await harness?.close();
  reader?.destroy();
  await proxy?.close();
  await moto?.stop();
});

describe('SQS, SNS and EventBridge endpoints through the worker, moto checking IAM', () => {
  it.each(['SQS', 'SNS', 'EventBridge'] as const)(
    "%s: a role whose policy does not allow the publish: FAILED at the first attempt with AWS's reason; a role that may publishes",
    async (type) => {
      const source = uniqueSource('iam');
      const url = type === 'SQS' ? queues.payments : type === 'SNS' ? topicArn : `eventbridge://${region}/${BUS}`;
      const refused = await addEndpoint(harness.repos, {
        source,
        name: 'refused',
        url,
        maxAttempts: 5,
        destination: awsTo(type, `arn:aws:iam::${ACCOUNT}:role/auditor`),
      });
      const allowed = await addEndpoint(harness.repos, {
        source,
        name: 'allowed',
        url,
        maxAttempts: 5,
        destination: awsTo(type, `arn:aws:iam::${ACCOUNT}:role/publisher`),
      });
      const eventId = await addEvent(harness.repos, { source });
      await harness.runFanout(eventId);

      const { service, action } = REFUSED[type];
      const failed = await deliveryOf(harness.repos, eventId, refused);
      expect(failed).toMatchObject({
        status: 'FAILED',
        attempts: 1,
        lastError: expect.stringMatching(new RegExp(`^${service}: AccessDenied`)),
      });
      expect(failed.lastError).toContain(action);
      expect(await attemptsOf(failed.id)).toEqual([
        expect.objectContaining({ attempt: 1, outcome: 'FAILED', error: failed.lastError, receipt: null }),
      ]);

      const delivered = await deliveryOf(harness.repos, eventId, allowed);
      expect(delivered).toMatchObject({ status: 'SUCCESS', attempts: 1 });
      const [attempt] = await attemptsOf(delivered.id);
      // read back with the SDK: the one message is the allowed endpoint's, the id the attempt log recorded
      expect(await published(type)).toEqual([[attempt?.receipt?.messageId, eventId]]);
    },
  );

  it.each(['SQS', 'SNS', 'EventBridge'] as const)(
    '%s: credentials moto does not know: refused at once, final, the secret never in the outcome',
    async (type) => {
      const stranger = createDestinations({
        addressPolicy: createAddressPolicy(),
        awsCredentials: { accessKeyId: 'AKIAUNKNOWNUNKNOWN00', secretAccessKey: 'not-a-secret-moto-knows' },
      });
      try {
        const outcome = await stranger.send(signedMessage(), awsTo(type), { timeoutMs: 10_000 });
        expect(outcome).toMatchObject({
          kind: 'permanent',
          status: 403,
          statusClass: '4xx',
          error: expect.stringMatching(new RegExp(`^${REFUSED[type].service}: (InvalidClientTokenId|UnrecognizedClientException): `)),
        });
        expect(JSON.stringify(outcome)).not.toContain('not-a-secret-moto-knows');
      } finally {
        await stranger.close();
      }
      expect(await published(type)).toEqual([]);
    },
  );

  it('moto unreachable for 30 s mid-run: every delivery retried until SUCCESS, every event in the queue once', async () => {
    const source = uniqueSource('outage');
    const via = `http://127.0.0.1:${proxy.port}`;
    const endpointId = await addEndpoint(harness.repos, {
      source,
      url: queues.outage,
      maxAttempts: 30,
      destination: sqsTo(queues.outage, { endpointUrl: via }),
    });
    const before = await Promise.all(Array.from({ length: 4 }, () => addEvent(harness.repos, { source })));
    await Promise.all(before.map((id) => harness.runFanout(id)));

    proxy.cut();
    const during = await Promise.all(Array.from({ length: 6 }, () => addEvent(harness.repos, { source })));
    for (const id of during) await harness.start(id);
    await sleep(30_000);
    // nothing got through meanwhile, and the deliveries kept trying
    const waiting = await Promise.all(during.map((id) => deliveryOf(harness.repos, id, endpointId)));
    expect(waiting.map((d) => d.status)).not.toContain('SUCCESS');
    expect(waiting.every((d) => d.attempts >= 2 && d.lastError !== null && /^SQS: /.test(d.lastError))).toBe(true);
    proxy.restore();
    await Promise.all(during.map((id) => harness.client.workflow.getHandle(id).result()));

    const all = [...before, ...during];
    const deliveries = await Promise.all(all.map((id) => deliveryOf(harness.repos, id, endpointId)));
    expect(deliveries.map((d) => d.status)).toEqual(all.map(() => 'SUCCESS'));
    for (const d of deliveries) {
      // one SUCCESS each, after the retried attempts of the outage
      const outcomes = (await attemptsOf(d.id)).map((a) => a.outcome);
      expect(outcomes.filter((o) => o === 'SUCCESS')).toHaveLength(1);
      expect(outcomes.at(-1)).toBe('SUCCESS');
    }
    const messages = await drainQueue(reader, queues.outage);
    expect(messages.map(eventIdOf).sort()).toEqual([...all].sort());
  }, 180_000);
});

describe("SQS sent directly (signed by us and by the SDK's signer) and through the SDK (AWS_SQS_SEND), moto checking every signature and policy", () => {
  const SENDS = AWS_SQS_SENDS;
  const destinationsOf = (awsSqsSend: (typeof SENDS)[number], credentials = worker) =>
    createDestinations({ addressPolicy: createAddressPolicy(), awsCredentials: credentials, awsSqsSend });
  const publisher = `arn:aws:iam::${ACCOUNT}:role/publisher`;

  it.each(SENDS)('%s: with the role that may publish: delivered, read back with the attributes, the message id as receipt', async (how) => {
    const destinations = destinationsOf(how);
    try {
      const m = signedMessage();
      const outcome = await destinations.send(m, sqsTo(queues.sends, { roleArn: publisher }), { timeoutMs: 10_000 });
      expect(outcome).toMatchObject({ kind: 'success', status: 200, receipt: { messageId: expect.any(String) } });
      const [got, ...more] = await drainQueue(reader, queues.sends);
      expect(more).toEqual([]);
      expect(got?.MessageId).toBe(outcome.kind === 'success' ? outcome.receipt?.messageId : 'no receipt');
      expect(got?.Body).toBe(m.body.toString('utf8'));
      expect(Object.fromEntries(Object.entries(got?.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]))).toEqual({
        'ce-specversion': '1.0',
        'ce-id': m.attributes.id,
        'ce-source': m.attributes.source,
        'ce-type': m.attributes.type,
        'ce-time': m.attributes.time,
        'content-type': 'application/json',
        'webhook-headers': JSON.stringify(m.headers),
      });
      // the consumer verifies the body with the headers the message carries
      expect(
        verifySignature(got!.Body!, JSON.parse(got!.MessageAttributes!['webhook-headers']!.StringValue!) as Record<string, string>),
      ).toBeTruthy();
    } finally {
      await destinations.close();
    }
  });

  it.each(SENDS)(
    '%s: a FIFO queue: the event id de-duplicates, the ordering key groups, the sequence number in the receipt',
    async (how) => {
      const destinations = destinationsOf(how);
      try {
        const m = signedMessage({ orderingKey: 'customer-7' });
        const first = await destinations.send(m, sqsTo(queues.sendsFifo), { timeoutMs: 10_000 });
        const again = await destinations.send(m, sqsTo(queues.sendsFifo), { timeoutMs: 10_000 });
        expect(first).toMatchObject({ kind: 'success', receipt: { messageId: expect.any(String), sequence: expect.any(String) } });
        expect(again.kind).toBe('success');
        const r = await reader.send(
          new ReceiveMessageCommand({
            QueueUrl: queues.sendsFifo,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        expect(r.Messages?.map((x) => [x.MessageId, x.Attributes?.MessageGroupId, x.Attributes?.MessageDeduplicationId])).toEqual([
          [first.kind === 'success' ? first.receipt?.messageId : 'no receipt', 'customer-7', m.attributes.id],
        ]);
        // read is not done: deleted, so the group's next message (the other way's test) is not held behind it
        await reader.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queues.sendsFifo,
            Entries: (r.Messages ?? []).map((x, i) => ({ Id: String(i), ReceiptHandle: x.ReceiptHandle! })),
          }),
        );
      } finally {
        await destinations.close();
      }
    },
  );

  it.each(SENDS)(
    "%s: refused by the role's policy, refused credentials, an unknown queue, a message over the limit: final, with AWS's reason",
    async (how) => {
      const destinations = destinationsOf(how);
      const stranger = destinationsOf(how, { accessKeyId: 'AKIAUNKNOWNUNKNOWN00', secretAccessKey: 'not-a-secret-moto-knows' });
      try {
        const denied = await destinations.send(signedMessage(), sqsTo(queues.sends, { roleArn: `arn:aws:iam::${ACCOUNT}:role/auditor` }), {
          timeoutMs: 10_000,
        });
        expect(denied).toMatchObject({
          kind: 'permanent',
          status: 403,
          statusClass: '4xx',
          error: expect.stringMatching(/^SQS: AccessDenied: .*sqs:SendMessage/),
        });
        const unknownKey = await stranger.send(signedMessage(), sqsTo(queues.sends), { timeoutMs: 10_000 });
        expect(unknownKey).toMatchObject({ kind: 'permanent', status: 403, error: expect.stringMatching(/^SQS: InvalidClientTokenId: /) });
        expect(JSON.stringify(unknownKey)).not.toContain('not-a-secret-moto-knows');
        const unknownQueue = await destinations.send(signedMessage(), sqsTo(`${moto.endpoint}/${ACCOUNT}/no-such-queue`), {
          timeoutMs: 10_000,
        });
        expect(unknownQueue).toMatchObject({
          kind: 'permanent',
          status: 400,
          error: 'SQS: QueueDoesNotExist: The specified queue does not exist.',
        });
        const big = await destinations.send(
          signedMessage({ body: Buffer.from(JSON.stringify({ s: 'x'.repeat(4096) })) }),
          sqsTo(queues.small),
          {
            timeoutMs: 10_000,
          },
        );
        expect(big).toMatchObject({
          kind: 'permanent',
          status: 400,
          error: expect.stringMatching(/^SQS: InvalidParameterValue: .*shorter than 1024 bytes/),
        });
      } finally {
        await destinations.close();
        await stranger.close();
      }
      expect(await drainQueue(reader, queues.sends)).toEqual([]);
      expect(await drainQueue(reader, queues.small)).toEqual([]);
    },
  );
});
