import type { SNSClient } from '@aws-sdk/client-sns';
import type { AwsClientsOptions } from './aws-client-config.js';
import { createBatchingSnsPublisher, type EventPublisher } from './batching-publisher.js';
import { publishBatchCalls } from './publish-calls.js';
import { DEFAULT_PUBLISH_MAX_IN_FLIGHT } from '../config/settings.js';

export type { EventPublisher } from './batching-publisher.js';

/**
 * The publisher ingest, dev mode, the tests and the bench use: event ids batched into PublishBatch
 * calls (batching-publisher.ts), each call made as AWS_TRANSPORT says (publish-calls.ts: one
 * signed POST, or the SDK's send) with the credentials, endpoint and signer of the configured SNS
 * client. close() after the last publish.
 */
export function createEventPublisher(deps: {
  sns: SNSClient;
  aws: AwsClientsOptions;
  topicArn: string;
  maxInFlight?: number;
}): EventPublisher & { flush(): Promise<void>; close(): Promise<void> } {
  const maxInFlight = deps.maxInFlight ?? DEFAULT_PUBLISH_MAX_IN_FLIGHT;
  const calls = publishBatchCalls({ sns: deps.sns, aws: deps.aws, connections: maxInFlight });
  const publisher = createBatchingSnsPublisher({ calls, topicArn: deps.topicArn, maxInFlight });
  return {
    publish: (eventId, trace) => publisher.publish(eventId, trace),
    flush: () => publisher.flush(),
    async close() {
      await publisher.flush();
      await calls.close();
    },
  };
}
