// The one place AWS_TRANSPORT picks how SQS ReceiveMessage and DeleteMessageBatch are made
// (aws-client-config.ts says why there are two ways); publish-calls.ts does the same for SNS.
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { AwsClientsOptions } from './aws-client-config.js';
import { createSdkSqsCalls } from './sdk-sqs-calls.js';
import { createSqsCalls, type SqsCalls } from './sqs-calls.js';

export function queueCalls(deps: { sqs: SQSClient; aws: AwsClientsOptions }): SqsCalls {
  return deps.aws.transport === 'sdk' ? createSdkSqsCalls(deps) : createSqsCalls(deps);
}
