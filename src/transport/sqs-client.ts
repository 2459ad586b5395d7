import { SQSClient } from '@aws-sdk/client-sqs';
import { commonClientConfig, type AwsClientsOptions } from './aws-client-config.js';

/**
 * The SQS client alone, for the processes that only receive (the consumer, a worker that consumes
 * the queue): the SNS client and its XML protocol code are not loaded (about 2 MB of V8 heap).
 * Timeouts short enough that a dead endpoint fails in seconds: the SDK default has none.
 */
export function createSqsClient(opts: AwsClientsOptions): SQSClient {
  const { config, connectionTimeout } = commonClientConfig(opts);
  return new SQSClient({
    ...config,
    requestHandler: {
      connectionTimeout,
      requestTimeout: opts.sqsRequestTimeoutMs ?? 30_000,
      throwOnRequestTimeout: true,
    },
  });
}
