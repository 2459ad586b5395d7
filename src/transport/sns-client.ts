import { SNSClient } from '@aws-sdk/client-sns';
import { commonClientConfig, type AwsClientsOptions } from './aws-client-config.js';

/**
 * The SNS client alone, for ingest (it only publishes): the SQS client's code is not loaded.
 * Timeouts short enough that a dead endpoint fails in seconds: the SDK default has no connect or
 * request timeout, which would hang an inbound request indefinitely.
 */
export function createSnsClient(opts: AwsClientsOptions): SNSClient {
  const { config, connectionTimeout } = commonClientConfig(opts);
  return new SNSClient({
    ...config,
    requestHandler: {
      connectionTimeout,
      requestTimeout: opts.snsRequestTimeoutMs ?? 5_000,
      throwOnRequestTimeout: true,
    },
  });
}
