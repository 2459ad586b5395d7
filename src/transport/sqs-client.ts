import { SQSClient } from '@aws-sdk/client-sqs';
import { clientConfig, type AwsClientsOptions } from './aws-client-config.js';

/**
 * The SQS client alone, for the processes that only receive (the consumer, a worker that consumes
 * the queue): the SNS client and its XML protocol code are not loaded, nor kept in the heap.
 */
export function createSqsClient(opts: AwsClientsOptions): SQSClient {
  return new SQSClient(clientConfig(opts, 'sqs'));
}
