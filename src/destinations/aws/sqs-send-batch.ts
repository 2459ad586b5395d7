// SQS's SendMessageBatch in its JSON protocol, as the SDK client would send it: the request's body
// and headers, each entry's size as SQS counts it, and each entry's answer read from the batch's.
// Pure: sqs-direct.ts decides which sends share a batch, signs and posts (AWS_SQS_BATCH=on).
import { hash } from 'node:crypto';
import { SendMessageAnswerError, type SendMessageAnswer, type SendMessageError } from './sqs-send-message.js';
import { asErrorCode } from '../../transport/signed-aws-call.js';

/** The headers of a SendMessageBatch besides the signature's (SendMessage's, another operation). */
export const SEND_MESSAGE_BATCH_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/x-amz-json-1.0',
  'x-amz-target': 'AmazonSQS.SendMessageBatch',
  'x-amzn-query-mode': 'true',
};

/**
 * What one SendMessageBatch carries: SQS takes at most 10 entries, and at most 1 MiB of them
 * together (the bodies and attributes, as a single message since 2025-08; moto and fauxqs enforce
 * the same 1 MiB, moto counting the bodies only). An entry larger than that alone goes alone.
 */
export const SQS_BATCH_LIMITS = { records: 10, bytes: 1024 * 1024 } as const;

/** One SendMessage input, as sendMessageInput makes it (the queue URL is the batch's). */
export interface BatchEntryInput {
  MessageBody: string;
  MessageAttributes?: Record<string, { DataType?: string; StringValue?: string }>;
  MessageDeduplicationId?: string;
  MessageGroupId?: string;
}

/** An entry's size as SQS counts it against the limits: the body, and each attribute's name, type and value, in UTF-8 bytes. */
export function entryBytes(input: BatchEntryInput): number {
  let bytes = Buffer.byteLength(input.MessageBody, 'utf8');
  for (const [name, v] of Object.entries(input.MessageAttributes ?? {})) {
    bytes += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(v.DataType ?? '', 'utf8') + Buffer.byteLength(v.StringValue ?? '', 'utf8');
  }
  return bytes;
}

/**
 * An entry's bytes in the batch's JSON body, the comma after it included, as a front end's body
 * limit counts them (nginx's `client_max_body_size`, 1 MiB by default; review7): each `"` or `\`
 * of a body is escaped there, so a full batch of JSON webhooks by SQS's count (entryBytes) is 1.3
 * to 1.5 MiB on the wire. Counted with the longest id ("9").
 */
export function entryWireBytes(input: BatchEntryInput): number {
  return Buffer.byteLength(JSON.stringify(batchEntry(input, 9)), 'utf8') + 1;
}

/** The bytes of a batch's JSON body besides its entries' (the queue URL, the brackets). */
export function batchEnvelopeBytes(queueUrl: string): number {
  return Buffer.byteLength(JSON.stringify(sendMessageBatchInput(queueUrl, [])), 'utf8');
}

/**
 * The batch's JSON input: each entry's id is its index (what the answer names it by), its body,
 * attributes and a FIFO queue's ids its own; the entries in the order given (a FIFO group's order
 * within the batch is theirs).
 */
export function sendMessageBatchInput(queueUrl: string, entries: readonly BatchEntryInput[]) {
  return { QueueUrl: queueUrl, Entries: entries.map(batchEntry) };
}

function batchEntry(e: BatchEntryInput, i: number) {
  return {
    Id: String(i),
    MessageBody: e.MessageBody,
    ...(e.MessageAttributes ? { MessageAttributes: e.MessageAttributes } : {}),
    ...(e.MessageDeduplicationId !== undefined ? { MessageDeduplicationId: e.MessageDeduplicationId } : {}),
    ...(e.MessageGroupId !== undefined ? { MessageGroupId: e.MessageGroupId } : {}),
  };
}

/** One entry's answer: what SendMessage would have answered for it, or its own failure as SendMessage's error would be. */
export type BatchEntryAnswer = { answer: SendMessageAnswer } | { error: Error };

/**
 * Each entry's answer from a 200 answer to the batch, in the entries' order (`bodies`: what each
 * sent). A successful entry's MD5OfMessageBody must be its body's (as for SendMessage); a failed
 * entry's Code is its error's name, with a sender's fault as a 4xx (final unless its code is
 * retried) and SQS's own as a 5xx (retried), so classifyAwsError reads it as SendMessage's error.
 * An entry the answer does not name failed without a status (retried: it may not be stored).
 */
export function parseSendMessageBatchAnswer(text: string, bodies: readonly string[]): BatchEntryAnswer[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    const err = new SendMessageAnswerError('InvalidAnswer', 'the answer to SendMessageBatch is not JSON');
    return bodies.map(() => ({ error: err }));
  }
  const r = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const list = (v: unknown): Record<string, unknown>[] =>
    Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => typeof x === 'object' && x !== null) : [];
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const byId = new Map<string, BatchEntryAnswer>();
  for (const s of list(r.Successful)) {
    const id = str(s.Id);
    const body = id === undefined ? undefined : bodies[Number(id)];
    if (id === undefined || body === undefined) continue;
    const md5 = str(s.MD5OfMessageBody);
    byId.set(
      id,
      md5 !== undefined && md5 !== hash('md5', body, 'hex')
        ? { error: new SendMessageAnswerError('InvalidChecksumError', `the MD5 of the body SQS took (${md5}) is not the body's`) }
        : { answer: { messageId: str(s.MessageId), sequence: str(s.SequenceNumber) } },
    );
  }
  for (const f of list(r.Failed)) {
    const id = str(f.Id);
    if (id === undefined || bodies[Number(id)] === undefined) continue;
    const err = new Error(str(f.Message) ?? 'the entry was not sent') as SendMessageError;
    err.name = asErrorCode(str(f.Code)) ?? 'BatchEntryFailed';
    err.$metadata = { httpStatusCode: f.SenderFault === true ? 400 : 500 };
    byId.set(id, { error: err });
  }
  return bodies.map(
    (_, i) =>
      byId.get(String(i)) ?? { error: new SendMessageAnswerError('NoEntryAnswer', `the answer to SendMessageBatch names no entry ${i}`) },
  );
}

/**
 * What to do with a batch refused whole, by the refusal's code (the code classifyAwsError reads:
 * awsErrorCodeOf, a JSON `__type`, the query-compatible header or an XML <Code> alike):
 * - `split`: it may be one entry's fault (a message over the queue's limit: moto checks every entry
 *   before storing any; an attribute or body SQS finds invalid; the batch over its total; a front
 *   end's HTTP 413, its request body over the front end's limit, review7): its entries are sent
 *   again one by one, so only the entry at fault fails.
 * - `alone`: refused authorization. AWS authorizes SendMessageBatch as `sqs:SendMessage`, but a
 *   provider that checks it by its own name (moto with IAM on) refuses a batch to credentials
 *   allowed `sqs:SendMessage` only, each of whose messages alone it would take: its entries are
 *   sent alone, and the queue's sends stop batching for a while (sqs-direct.ts). Where each alone
 *   is refused too (credentials that may not send at all), that costs one request per entry.
 * - `every`: any other refusal (authentication, throttling, an unknown queue) is every entry's:
 *   each alone would be refused the same.
 */
export type BatchRefusal = 'split' | 'alone' | 'every';

const SPLIT_ON: ReadonlySet<string> = new Set([
  'MessageTooLong',
  'BatchRequestTooLong',
  'InvalidParameterValue',
  'InvalidParameterValueException',
  'InvalidMessageContents',
  'InvalidAttributeValue',
  'InvalidAttributeName',
  // a front end's refusal of the request's body (an HTML page: awsErrorCodeOf's HTTP<status>)
  'HTTP413',
  'RequestEntityTooLarge',
]);

const ALONE_ON: ReadonlySet<string> = new Set(['AccessDenied', 'AccessDeniedException', 'NotAuthorized']);

/** The query protocol's long form of SQS's codes (`x-amzn-query-error: AWS.SimpleQueueService.BatchRequestTooLong;Sender`). */
const QUERY_CODE_PREFIX = 'AWS.SimpleQueueService.';

export function batchRefusalOf(code: string): BatchRefusal {
  const short = code.startsWith(QUERY_CODE_PREFIX) ? code.slice(QUERY_CODE_PREFIX.length) : code;
  if (SPLIT_ON.has(short)) return 'split';
  if (ALONE_ON.has(short)) return 'alone';
  return 'every';
}
