// SNS PublishBatch through the SDK client's send(): the same contract as the signed call
// (sns-publish-batch.ts), chosen by AWS_TRANSPORT=sdk (publish-calls.ts). A module of its own so
// that a process that only receives never loads the SNS client, nor one that publishes the SQS one.
import { PublishBatchCommand, type SNSClient } from '@aws-sdk/client-sns';
import { failuresOf } from './sdk-answer.js';
import { checkPublishBatch, type SnsPublishBatch } from './sns-publish-batch.js';

export function createSdkSnsPublishBatch(deps: { sns: SNSClient }): SnsPublishBatch {
  return {
    async publishBatch(topicArn, entries) {
      checkPublishBatch(entries);
      const out = await deps.sns.send(
        new PublishBatchCommand({
          TopicArn: topicArn,
          PublishBatchRequestEntries: entries.map((e) => ({
            Id: e.id,
            Message: e.message,
            // the trace context, as the signed call sends it (sns-publish-batch.ts)
            ...(e.attributes && Object.keys(e.attributes).length > 0
              ? {
                  MessageAttributes: Object.fromEntries(
                    Object.entries(e.attributes).map(([name, value]) => [name, { DataType: 'String', StringValue: value }]),
                  ),
                }
              : {}),
          })),
        }),
      );
      const failed = failuresOf(
        entries.map((e) => e.id),
        out.Successful,
        out.Failed,
        (id, f) => [id, f?.Code ?? (f ? 'Failed' : 'NoResult')] as const,
      );
      return { failed: new Map(failed) };
    },
    // the client belongs to the process that made it, which destroys it
    close: async () => {},
  };
}
