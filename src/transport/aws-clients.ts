import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { AwsClientsOptions } from './aws-client-config.js';
import { createSnsClient } from './sns-client.js';
import { createSqsClient } from './sqs-client.js';

export type { AwsClientsOptions } from './aws-client-config.js';

export interface AwsClients {
  sns: SNSClient;
  sqs: SQSClient;
}

/**
 * Both clients, for what sets up or runs the whole topology (setup-transport, dev mode). A
 * process that only publishes (ingest) or only receives (consumer, worker) takes createSnsClient
 * or createSqsClient and loads none of the other's code.
 */
export function createAwsClients(opts: AwsClientsOptions): AwsClients {
  return { sns: createSnsClient(opts), sqs: createSqsClient(opts) };
}
