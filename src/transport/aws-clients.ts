import { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { commonClientConfig, type AwsClientsOptions } from './aws-client-config.js';
import { createSqsClient } from './sqs-client.js';

export type { AwsClientsOptions } from './aws-client-config.js';

export interface AwsClients {
  sns: SNSClient;
  sqs: SQSClient;
}

/**
 * SNS and SQS clients with timeouts short enough that a dead endpoint fails in seconds: the SDK
 * default has no connect or request timeout, which would hang an inbound request indefinitely.
 * A process that only receives takes createSqsClient (sqs-client.ts) and loads no SNS code.
 */
export function createAwsClients(opts: AwsClientsOptions): AwsClients {
  const { config, connectionTimeout } = commonClientConfig(opts);
  const sns = new SNSClient({
    ...config,
    requestHandler: {
      connectionTimeout,
      requestTimeout: opts.snsRequestTimeoutMs ?? 5_000,
      throwOnRequestTimeout: true,
    },
  });
  return { sns, sqs: createSqsClient(opts) };
}
