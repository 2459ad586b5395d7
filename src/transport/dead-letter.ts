import { GetQueueAttributesCommand, GetQueueUrlCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { describeError } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';

/** The URL of the DLQ the queue's RedrivePolicy names; undefined: it names none. */
export async function deadLetterQueueUrl(sqs: SQSClient, queueUrl: string): Promise<string | undefined> {
  const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['RedrivePolicy'] }));
  const policy = attrs.Attributes?.RedrivePolicy;
  const arn = policy ? (JSON.parse(policy) as { deadLetterTargetArn?: unknown }).deadLetterTargetArn : undefined;
  const name = typeof arn === 'string' ? arn.split(':').pop() : undefined;
  if (!name) return undefined;
  return (await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl;
}

/**
 * Moves a message straight to the queue's dead-letter queue, for the messages no redelivery can
 * help (not an event message, or a permanent or internal error): five receives of a poison
 * message only delay it by five visibility timeouts. The DLQ is the one the queue's RedrivePolicy
 * names, looked up once; the copy keeps the body and says why and which message it was.
 * Resolves false when the DLQ can not be found or written: the caller then leaves the message to
 * the redrive policy, which still gets it there after maxReceiveCount receives.
 */
export function createDeadLetterer(deps: { sqs: SQSClient; queueUrl: string; logger: Logger }) {
  const { sqs, queueUrl, logger } = deps;
  let dlqUrl: Promise<string | undefined> | undefined;
  const lookUp = () => deadLetterQueueUrl(sqs, queueUrl);

  return async function deadLetter(message: Message, reason: string): Promise<boolean> {
    try {
      dlqUrl ??= lookUp();
      const url = await dlqUrl;
      if (url === undefined) {
        logger.warn({ queueUrl }, 'the queue has no dead-letter queue in its RedrivePolicy; leaving the message to redelivery');
        return false;
      }
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: url,
          MessageBody: message.Body ?? '',
          MessageAttributes: {
            'webhook-fanout-reason': { DataType: 'String', StringValue: reason.slice(0, 256) },
            'webhook-fanout-message-id': { DataType: 'String', StringValue: message.MessageId ?? 'unknown' },
          },
        }),
      );
      return true;
    } catch (err) {
      dlqUrl = undefined; // look it up again next time
      logger.warn({ err: describeError(err) }, 'moving a message to the dead-letter queue failed; leaving it to redelivery');
      return false;
    }
  };
}
