import { PublishBatchCommand, type SNSClient } from '@aws-sdk/client-sns';
import { ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSnsClient } from '../../../src/transport/sns-client.js';
import { resolveCallTarget } from '../../../src/transport/signed-aws-call.js';
import { createSqsClient } from '../../../src/transport/sqs-client.js';

// Where the calls go on real AWS, offline: the clients as production makes them (no explicit
// endpoint), configured only through the environment as on a pod. The signed calls resolve their
// URL from the client's configuration; the SDK's send() resolves its own: both must agree, for
// each region, FIPS, dual stack and the per-service endpoint variables.
const REQUEST_CAUGHT = new Error('request caught before it was sent');

const urlOf = (req: unknown): string => {
  const r = req as { protocol: string; hostname: string; port?: number; path: string };
  return `${r.protocol}//${r.hostname}${r.port ? `:${r.port}` : ''}${r.path}`;
};
const catchRequest = { step: 'finalizeRequest', priority: 'low', name: 'catchRequest' } as const;

/** The URL the SDK's send() would call, caught after its endpoint resolution and signing. */
async function snsSdkUrl(sns: SNSClient, command: PublishBatchCommand): Promise<string> {
  let url = '';
  sns.middlewareStack.add(
    () => async (args) => {
      url = urlOf(args.request);
      throw REQUEST_CAUGHT;
    },
    catchRequest,
  );
  await expect(sns.send(command)).rejects.toBe(REQUEST_CAUGHT);
  return url;
}

async function sqsSdkUrl(sqs: SQSClient, command: ReceiveMessageCommand): Promise<string> {
  let url = '';
  sqs.middlewareStack.add(
    () => async (args) => {
      url = urlOf(args.request);
      throw REQUEST_CAUGHT;
    },
    catchRequest,
  );
  await expect(sqs.send(command)).rejects.toBe(REQUEST_CAUGHT);
  return url;
}

describe('endpoint resolution for real AWS (no AWS_ENDPOINT_URL given)', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it.each<[string, Record<string, string>, string, string]>([
    ['us-east-1', {}, 'https://sns.us-east-1.amazonaws.com/', 'https://sqs.us-east-1.amazonaws.com/'],
    ['eu-central-1', {}, 'https://sns.eu-central-1.amazonaws.com/', 'https://sqs.eu-central-1.amazonaws.com/'],
    ['cn-north-1 (another partition)', {}, 'https://sns.cn-north-1.amazonaws.com.cn/', 'https://sqs.cn-north-1.amazonaws.com.cn/'],
    [
      'us-east-1 FIPS',
      { AWS_USE_FIPS_ENDPOINT: 'true' },
      'https://sns-fips.us-east-1.amazonaws.com/',
      'https://sqs-fips.us-east-1.amazonaws.com/',
    ],
    ['us-east-1 dual stack', { AWS_USE_DUALSTACK_ENDPOINT: 'true' }, 'https://sns.us-east-1.api.aws/', 'https://sqs.us-east-1.api.aws/'],
    [
      'us-gov-west-1 FIPS and dual stack',
      { AWS_USE_FIPS_ENDPOINT: 'true', AWS_USE_DUALSTACK_ENDPOINT: 'true' },
      'https://sns-fips.us-gov-west-1.api.aws/',
      'https://sqs-fips.us-gov-west-1.api.aws/',
    ],
    [
      'AWS_ENDPOINT_URL_SNS and _SQS (a VPC endpoint each)',
      { AWS_ENDPOINT_URL_SNS: 'https://vpce-sns.example.internal', AWS_ENDPOINT_URL_SQS: 'https://vpce-sqs.example.internal:8443' },
      'https://vpce-sns.example.internal/',
      'https://vpce-sqs.example.internal:8443/',
    ],
  ])('%s', async (what, env, snsExpected, sqsExpected) => {
    const region = /^([a-z]+-[a-z-]+-\d)/.exec(what)?.[1] ?? 'us-east-1';
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY');
    for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
    const sns = createSnsClient({ region });
    const sqs = createSqsClient({ region });
    try {
      expect((await resolveCallTarget(sns)).url.href).toBe(snsExpected);
      expect((await resolveCallTarget(sqs)).url.href).toBe(sqsExpected);
      const topicArn = `arn:aws:sns:${region}:123456789012:events`;
      expect(
        await snsSdkUrl(sns, new PublishBatchCommand({ TopicArn: topicArn, PublishBatchRequestEntries: [{ Id: 'e0', Message: '{}' }] })),
      ).toBe(snsExpected);
      expect(await sqsSdkUrl(sqs, new ReceiveMessageCommand({ QueueUrl: `${sqsExpected}123456789012/events` }))).toBe(sqsExpected);
    } finally {
      sns.destroy();
      sqs.destroy();
    }
  });
});
