// The one place AWS_TRANSPORT picks how the hot calls are made (aws-client-config.ts says why
// there are two): the publisher and the queue consumer take what this returns.
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { AwsClientsOptions } from './aws-client-config.js';
import { createSdkSnsPublishBatch, createSdkSqsCalls } from './sdk-calls.js';
import { createSnsPublishBatch, type SnsPublishBatch } from './sns-publish-batch.js';
import { createSqsCalls, type SqsCalls } from './sqs-calls.js';

export function publishBatchCalls(deps: { sns: SNSClient; aws: AwsClientsOptions; connections: number }): SnsPublishBatch {
  return deps.aws.transport === 'sdk' ? createSdkSnsPublishBatch(deps) : createSnsPublishBatch(deps);
}

export function queueCalls(deps: { sqs: SQSClient; aws: AwsClientsOptions }): SqsCalls {
  return deps.aws.transport === 'sdk' ? createSdkSqsCalls(deps) : createSqsCalls(deps);
}
