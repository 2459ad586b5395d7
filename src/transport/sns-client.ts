import { SNSClient } from '@aws-sdk/client-sns';
import { clientConfig, type AwsClientsOptions } from './aws-client-config.js';

/** The SNS client alone, for ingest (it only publishes): the SQS client's code is not loaded. */
export function createSnsClient(opts: AwsClientsOptions): SNSClient {
  return new SNSClient(clientConfig(opts, 'sns'));
}
