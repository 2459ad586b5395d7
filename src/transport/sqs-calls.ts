// The queue consumer's two hot SQS calls, ReceiveMessage and DeleteMessageBatch, each one signed
// POST (signed-aws-call.ts says why): the JSON protocol's bodies and reading its answers, with the
// SDK's check that every received body matches its MD5. The consumer's rare calls (the DLQ's
// lookup and copy) stay the SDK's.
import { createHash } from 'node:crypto';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import type { AwsClientsOptions } from './aws-client-config.js';
import { TRACE_ATTRIBUTES } from './event-message.js';
import { asErrorCode, AwsCallError, createSignedAwsCall } from './signed-aws-call.js';

export interface ReceiveRequest {
  queueUrl: string;
  maxMessages: number;
  waitTimeSeconds: number;
  visibilityTimeoutSeconds?: number;
  /** aborts the long poll (stop()) */
  signal?: AbortSignal;
}

export interface DeleteEntry {
  /** unique within the call */
  id: string;
  receiptHandle: string;
}

/** An entry SQS did not delete, with its code and whether the fault was the request's. */
export interface DeleteFailure {
  id: string;
  code: string;
  senderFault: boolean;
}

export interface SqsCalls {
  /** Throws AwsCallError when the call failed (after its retries) or a body does not match its MD5. */
  receive(req: ReceiveRequest): Promise<Message[]>;
  deleteBatch(queueUrl: string, entries: readonly DeleteEntry[]): Promise<DeleteFailure[]>;
  close(): Promise<void>;
}

/** Ten messages of SQS's largest (1 MiB), JSON-escaped, with their attributes. */
const MAX_RESPONSE_BYTES = 32 << 20;

export function createSqsCalls(deps: {
  /** the configured client: its credentials, region, endpoint and signer are used, not its send() */
  sqs: SQSClient;
  /** the options the client was made with: timeouts and attempts */
  aws: AwsClientsOptions;
  /** connections kept to SQS: a long poll and the deletes beside it */
  connections?: number;
}): SqsCalls {
  const call = createSignedAwsCall({
    client: deps.sqs,
    service: 'sqs',
    aws: deps.aws,
    connections: deps.connections ?? 4,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    errorCode: (text, headers) => parseJsonErrorCode(text, headers['x-amzn-query-error']),
  });
  const send = (target: string, payload: object, signal?: AbortSignal): Promise<string> =>
    call.send({
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${target}`, 'x-amzn-query-mode': 'true' },
      body: JSON.stringify(payload),
      ...(signal ? { signal } : {}),
    });
  return {
    async receive(req) {
      const text = await send(
        'ReceiveMessage',
        {
          QueueUrl: req.queueUrl,
          MaxNumberOfMessages: req.maxMessages,
          WaitTimeSeconds: req.waitTimeSeconds,
          // SentTimestamp: how long the message waited (webhook_fanout_queue_message_age_seconds)
          MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
          // the trace context ingest sent with the event (docs/tracing.md); nothing else
          MessageAttributeNames: [...TRACE_ATTRIBUTES],
          ...(req.visibilityTimeoutSeconds !== undefined ? { VisibilityTimeout: req.visibilityTimeoutSeconds } : {}),
        },
        req.signal,
      );
      return parseReceiveAnswer(text);
    },
    async deleteBatch(queueUrl, entries) {
      const text = await send('DeleteMessageBatch', {
        QueueUrl: queueUrl,
        Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle })),
      });
      return parseDeleteAnswer(
        text,
        entries.map((e) => e.id),
      );
    },
    close: () => call.close(),
  };
}

// ---- the JSON protocol: what comes back (pure, unit-tested) ----

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function parseJson(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = text.trim() === '' ? {} : JSON.parse(text);
  } catch (err) {
    throw new AwsCallError('InvalidAnswer', 'sqs: the answer is not JSON', { retryable: false, cause: err });
  }
  if (!isRecord(parsed)) throw new AwsCallError('InvalidAnswer', 'sqs: the answer is not a JSON object', { retryable: false });
  return parsed;
}

/**
 * The received messages. As the SDK does, a body that does not match its MD5 fails the whole
 * receive: its messages come back after the visibility timeout, and no corrupted id is handled.
 */
export function parseReceiveAnswer(text: string): Message[] {
  const raw = parseJson(text).Messages;
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new AwsCallError('InvalidAnswer', 'sqs: Messages is not a list', { retryable: false });
  const messages: Message[] = [];
  const mismatched: string[] = [];
  for (const m of raw) {
    if (!isRecord(m)) continue;
    const body = str(m.Body) ?? '';
    const md5 = str(m.MD5OfBody);
    if (md5 !== undefined && md5 !== createHash('md5').update(body).digest('hex')) mismatched.push(str(m.MessageId) ?? '?');
    const attributes = isRecord(m.Attributes)
      ? Object.fromEntries(Object.entries(m.Attributes).filter((e): e is [string, string] => typeof e[1] === 'string'))
      : undefined;
    // String attributes only (what ingest sends); a binary one is not ours
    const messageAttributes = isRecord(m.MessageAttributes)
      ? Object.fromEntries(
          Object.entries(m.MessageAttributes).flatMap(([name, v]) =>
            isRecord(v) && typeof v.StringValue === 'string'
              ? [[name, { DataType: str(v.DataType) ?? 'String', StringValue: v.StringValue }]]
              : [],
          ),
        )
      : undefined;
    messages.push({
      ...(str(m.MessageId) !== undefined ? { MessageId: str(m.MessageId) } : {}),
      ...(str(m.ReceiptHandle) !== undefined ? { ReceiptHandle: str(m.ReceiptHandle) } : {}),
      Body: body,
      ...(md5 !== undefined ? { MD5OfBody: md5 } : {}),
      ...(attributes ? { Attributes: attributes } : {}),
      ...(messageAttributes && Object.keys(messageAttributes).length > 0 ? { MessageAttributes: messageAttributes } : {}),
    });
  }
  if (mismatched.length > 0) {
    throw new AwsCallError('InvalidChecksum', `sqs: invalid MD5 checksum on messages ${mismatched.join(', ')}`, { retryable: false });
  }
  return messages;
}

/** The entries SQS did not delete; an id it names neither way counts as not deleted ("NoResult"). */
export function parseDeleteAnswer(text: string, ids: readonly string[]): DeleteFailure[] {
  const answer = parseJson(text);
  const failed = new Map<string, DeleteFailure>();
  for (const f of Array.isArray(answer.Failed) ? answer.Failed : []) {
    const id = isRecord(f) ? str(f.Id) : undefined;
    if (id !== undefined && isRecord(f))
      failed.set(id, { id, code: asErrorCode(str(f.Code)) ?? 'Failed', senderFault: f.SenderFault === true });
  }
  const done = new Set((Array.isArray(answer.Successful) ? answer.Successful : []).map((s) => (isRecord(s) ? str(s.Id) : undefined)));
  return ids.flatMap((id) => failed.get(id) ?? (done.has(id) ? [] : [{ id, code: 'NoResult', senderFault: false }]));
}

/**
 * SQS's code in an error answer: the query-compatible header (`x-amzn-query-error: Code;Sender`),
 * else the JSON `__type` (after its namespace's `#`), else an XML `<Code>`: what a front end that
 * refuses the request before SQS answers with (moto's authentication does).
 */
export function parseJsonErrorCode(text: string, queryErrorHeader?: string | string[]): string | undefined {
  const header = Array.isArray(queryErrorHeader) ? queryErrorHeader[0] : queryErrorHeader;
  const fromHeader = asErrorCode(header?.split(';')[0]);
  if (fromHeader !== undefined) return fromHeader;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return asErrorCode(/<Code>([^<]{1,100})<\/Code>/.exec(text)?.[1]);
  }
  const type = isRecord(parsed) ? (str(parsed.__type) ?? str(parsed.code)) : undefined;
  return asErrorCode(type?.split('#').pop());
}
