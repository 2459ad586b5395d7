import {
  CreateTopicCommand,
  ListSubscriptionsByTopicCommand,
  SetSubscriptionAttributesCommand,
  SubscribeCommand,
  type SNSClient,
  type Subscription,
} from '@aws-sdk/client-sns';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  QueueDoesNotExist,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DEFAULT_TOPOLOGY } from '../config/settings.js';

export interface TopologyOptions {
  topicName?: string;
  queueName?: string;
  dlqName?: string;
  /** receives before a message moves to the DLQ; the specification fixes 5 */
  maxReceiveCount?: number;
  visibilityTimeoutSeconds?: number;
}

export interface Topology {
  topicArn: string;
  queueUrl: string;
  queueArn: string;
  dlqUrl: string;
  dlqArn: string;
}

/**
 * Creates or converges topic -> queue -> DLQ. Safe to run on every start and from several
 * processes at once: resources are looked up before being created, and attributes are set
 * separately, because CreateQueue with attributes that differ from an existing queue's fails.
 */
export async function ensureTopology(clients: { sns: SNSClient; sqs: SQSClient }, opts: TopologyOptions = {}): Promise<Topology> {
  const o = { ...DEFAULT_TOPOLOGY, ...stripUndefined(opts) };
  const { sns, sqs } = clients;

  const dlqUrl = await ensureQueue(sqs, o.dlqName);
  const dlqArn = await queueArnOf(sqs, dlqUrl);
  const queueUrl = await ensureQueue(sqs, o.queueName);
  const queueArn = await queueArnOf(sqs, queueUrl);

  const topic = await sns.send(new CreateTopicCommand({ Name: o.topicName }));
  const topicArn = required(topic.TopicArn, 'CreateTopic returned no TopicArn');

  await sqs.send(
    new SetQueueAttributesCommand({
      QueueUrl: queueUrl,
      Attributes: {
        VisibilityTimeout: String(o.visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: o.maxReceiveCount }),
        // real SQS rejects SNS deliveries unless the queue policy grants this topic SendMessage
        Policy: JSON.stringify(topicToQueuePolicy(topicArn, queueArn)),
      },
    }),
  );

  await ensureRawSqsSubscription(sns, topicArn, queueArn);
  return { topicArn, queueUrl, queueArn, dlqUrl, dlqArn };
}

export function topicToQueuePolicy(topicArn: string, queueArn: string): object {
  return {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'AllowTopicSendMessage',
        Effect: 'Allow',
        Principal: { Service: 'sns.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: queueArn,
        Condition: { ArnEquals: { 'aws:SourceArn': topicArn } },
      },
    ],
  };
}

async function ensureQueue(sqs: SQSClient, name: string): Promise<string> {
  try {
    const found = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
    return required(found.QueueUrl, `GetQueueUrl returned no url for ${name}`);
  } catch (err) {
    if (!isQueueMissing(err)) throw err;
  }
  // no attributes here: a concurrent creator with the same call gets the same queue back
  const created = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  return required(created.QueueUrl, `CreateQueue returned no url for ${name}`);
}

function isQueueMissing(err: unknown): boolean {
  if (err instanceof QueueDoesNotExist) return true;
  // emulators and the older query protocol name the error differently
  const name = err instanceof Error ? err.name : '';
  return name === 'QueueDoesNotExist' || name === 'AWS.SimpleQueueService.NonExistentQueue';
}

async function queueArnOf(sqs: SQSClient, queueUrl: string): Promise<string> {
  const res = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  return required(res.Attributes?.QueueArn, `no QueueArn for ${queueUrl}`);
}

async function ensureRawSqsSubscription(sns: SNSClient, topicArn: string, queueArn: string): Promise<void> {
  const existing = await findSubscription(sns, topicArn, queueArn);
  if (existing?.SubscriptionArn !== undefined && existing.SubscriptionArn !== 'PendingConfirmation') {
    // converge an older subscription that was created without raw delivery
    await sns.send(
      new SetSubscriptionAttributesCommand({
        SubscriptionArn: existing.SubscriptionArn,
        AttributeName: 'RawMessageDelivery',
        AttributeValue: 'true',
      }),
    );
    return;
  }
  await sns.send(
    new SubscribeCommand({
      TopicArn: topicArn,
      Protocol: 'sqs',
      Endpoint: queueArn,
      Attributes: { RawMessageDelivery: 'true' },
      ReturnSubscriptionArn: true,
    }),
  );
}

async function findSubscription(sns: SNSClient, topicArn: string, queueArn: string): Promise<Subscription | undefined> {
  let nextToken: string | undefined;
  do {
    const page = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn, NextToken: nextToken }));
    const match = page.Subscriptions?.find((s) => s.Protocol === 'sqs' && s.Endpoint === queueArn);
    if (match !== undefined) return match;
    nextToken = page.NextToken;
  } while (nextToken !== undefined && nextToken !== '');
  return undefined;
}

function required<T>(value: T | undefined, message: string): T {
  if (value === undefined) throw new Error(message);
  return value;
}

function stripUndefined<T extends object>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}
