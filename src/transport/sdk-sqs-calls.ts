// SQS ReceiveMessage and DeleteMessageBatch through the SDK client's send(): the same contract as
// the signed calls (sqs-calls.ts), chosen by AWS_TRANSPORT=sdk (queue-calls.ts). The SDK does
// everything itself here, the MD5 check of received bodies included.
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { TRACE_ATTRIBUTES } from './event-message.js';
import { failuresOf } from './sdk-answer.js';
import type { DeleteFailure, SqsCalls } from './sqs-calls.js';

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
          // the trace context ingest sent with the event (docs/tracing.md), as the signed call asks
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
