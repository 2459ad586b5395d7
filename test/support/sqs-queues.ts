import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/** Creates an SQS queue (on moto in the tests): its URL, and its ARN for an SNS subscription or an EventBridge target. */
export async function createQueue(
  sqs: SQSClient,
  name: string,
  attributes?: Record<string, string>,
): Promise<{ url: string; arn: string }> {
  const url = (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl!;
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  return { url, arn };
}

/** Every message of the queue, as a consumer reads them (each deleted once read), until it stays empty. */
export async function drainQueue(sqs: SQSClient, queueUrl: string): Promise<Message[]> {
  const all: Message[] = [];
  for (let empty = 0; empty < 2;) {
    const r = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], WaitTimeSeconds: 1 }),
    );
    const got = r.Messages ?? [];
    empty = got.length === 0 ? empty + 1 : 0;
    all.push(...got);
    if (got.length > 0) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: got.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
        }),
      );
    }
  }
  return all;
}
