// The one place AWS_TRANSPORT picks how SNS PublishBatch is made (aws-client-config.ts says why
// there are two ways); queue-calls.ts does the same for SQS, apart so each process loads one client.
import type { SNSClient } from '@aws-sdk/client-sns';
import type { AwsClientsOptions } from './aws-client-config.js';
import { createSdkSnsPublishBatch } from './sdk-sns-calls.js';
import { createSnsPublishBatch, type SnsPublishBatch } from './sns-publish-batch.js';

export function publishBatchCalls(deps: { sns: SNSClient; aws: AwsClientsOptions; connections: number }): SnsPublishBatch {
  return deps.aws.transport === 'sdk' ? createSdkSnsPublishBatch(deps) : createSnsPublishBatch(deps);
}
