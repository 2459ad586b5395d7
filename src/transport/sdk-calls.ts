// The hot SNS/SQS calls through the SDK client's send(): the same contract as the signed calls
// (sns-publish-batch.ts, sqs-calls.ts), chosen by AWS_TRANSPORT=sdk (transport-calls.ts). The
// SDK does everything itself here, the MD5 check of received bodies included.
import { PublishBatchCommand, type SNSClient } from '@aws-sdk/client-sns';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { TRACE_ATTRIBUTES } from './event-message.js';
import { checkPublishBatch, type SnsPublishBatch } from './sns-publish-batch.js';
import type { DeleteFailure, SqsCalls } from './sqs-calls.js';

/**
 * Ids the answer names neither as done nor as failed count as failed ("NoResult"), as the signed
 * calls count them: only what the service says it took is taken.
 */
function failuresOf<F extends { Id?: string | undefined }, T>(
  ids: readonly string[],
  successful: readonly { Id?: string | undefined }[] | undefined,
  failed: readonly F[] | undefined,
  toFailure: (id: string, f: F | undefined) => T,
): T[] {
  const byId = new Map((failed ?? []).flatMap((f) => (f.Id === undefined ? [] : [[f.Id, f] as const])));
  const done = new Set((successful ?? []).map((s) => s.Id));
  return ids.flatMap((id) => (byId.has(id) ? [toFailure(id, byId.get(id))] : done.has(id) ? [] : [toFailure(id, undefined)]));
}

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
            // the trace context, as the signed call sends it (docs/tracing.md)
            ...(e.attributes
              ? { MessageAttributes: Object.fromEntries(Object.entries(e.attributes).map(([k, v]) => [k, { DataType: 'String', StringValue: v }])) }
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

export function createSdkSqsCalls(deps: { sqs: SQSClient }): SqsCalls {
  return {
    async receive(req) {
      const out = await deps.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: req.queueUrl,
          MaxNumberOfMessages: req.maxMessages,
          WaitTimeSeconds: req.waitTimeSeconds,
          // SentTimestamp: how long the message waited (webhook_fanout_queue_message_age_seconds)
          MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
          // the trace context ingest sent with the event (docs/tracing.md); nothing else
          MessageAttributeNames: [...TRACE_ATTRIBUTES],
          ...(req.visibilityTimeoutSeconds !== undefined ? { VisibilityTimeout: req.visibilityTimeoutSeconds } : {}),
        }),
        req.signal ? { abortSignal: req.signal } : {},
      );
      return out.Messages ?? [];
    },
    async deleteBatch(queueUrl, entries) {
      const out = await deps.sqs.send(
        new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle })) }),
      );
      return failuresOf(
        entries.map((e) => e.id),
        out.Successful,
        out.Failed,
        (id, f): DeleteFailure => ({ id, code: f?.Code ?? (f ? 'Failed' : 'NoResult'), senderFault: f?.SenderFault === true }),
      );
    },
    close: async () => {},
  };
}
