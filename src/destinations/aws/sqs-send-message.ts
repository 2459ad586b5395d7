// SQS's SendMessage in its JSON protocol (awsJson1_0, query-compatible), as the SDK client sends
// it: the request's body and headers, what its answer says, and an error answer as the SDK's error
// would carry it (its code as the name, the status, the service's words), for classifyAwsError.
// Pure: sqs-direct.ts signs and posts; the SDK path (AWS_SQS_SEND=sdk) does not use this module.
import { hash } from 'node:crypto';
import type { Message } from '../../delivery/message.js';
import type { SqsTarget } from '../../delivery/destination.js';
import { asErrorCode } from '../../transport/signed-aws-call.js';
import { awsMessageOf } from './aws-message.js';

/** A FIFO queue's or topic's group when the endpoint is not ordered: one group, the order of the sends. */
export const UNORDERED_GROUP = 'webhook-fanout';

export const isFifo = (name: string): boolean => name.endsWith('.fifo');

/** The headers of a SendMessage besides the signature's: the protocol, the operation, the query-compatible errors. */
export const SEND_MESSAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/x-amz-json-1.0',
  'x-amz-target': 'AmazonSQS.SendMessage',
  'x-amzn-query-mode': 'true',
};

/** The SendMessage input, the same for both paths: the body, the attributes, a FIFO queue's ids. */
export function sendMessageInput(message: Message, to: Pick<SqsTarget, 'queueUrl'>) {
  const { text, attributes } = awsMessageOf(message);
  return {
    QueueUrl: to.queueUrl,
    MessageBody: text,
    MessageAttributes: attributes,
    ...(isFifo(to.queueUrl)
      ? { MessageDeduplicationId: message.deduplicationId, MessageGroupId: message.orderingKey ?? UNORDERED_GROUP }
      : {}),
  };
}

/**
 * Where the SDK client sends a SendMessage: the endpoint's URL when the endpoint names one (a VPC
 * endpoint, an emulator), else the queue URL's origin (the SDK's useQueueUrlAsEndpoint, on by
 * default: the queue URL's host wins over the region's).
 */
export function sendMessageUrl(to: Pick<SqsTarget, 'queueUrl' | 'endpointUrl'>): URL {
  if (to.endpointUrl !== null) {
    const url = new URL(to.endpointUrl);
    // the SDK keeps a custom endpoint's path, and posts to "/" when it has none
    return new URL(`${url.origin}${url.pathname === '' ? '/' : url.pathname}`);
  }
  return new URL(`${new URL(to.queueUrl).origin}/`);
}

export interface SendMessageAnswer {
  messageId: string | undefined;
  sequence: string | undefined;
}

/** An answer that does not say the message was taken: not the service's error, so without a status (retried). */
export class SendMessageAnswerError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

/**
 * A 200 answer's message id and sequence number. Its MD5OfMessageBody must be the body's, as the
 * SDK checks: a mismatch means the queue holds other bytes than were sent, and the attempt fails
 * (retried; a FIFO queue's deduplication id keeps a second copy out).
 */
export function parseSendMessageAnswer(text: string, body: string): SendMessageAnswer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SendMessageAnswerError('InvalidAnswer', 'the answer to SendMessage is not JSON');
  }
  const r = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const md5 = str(r.MD5OfMessageBody);
  if (md5 !== undefined && md5 !== hash('md5', body, 'hex')) {
    throw new SendMessageAnswerError('InvalidChecksumError', `the MD5 of the body SQS took (${md5}) is not the body's`);
  }
  return { messageId: str(r.MessageId), sequence: str(r.SequenceNumber) };
}

/** An error answer as the SDK's service error: what classifyAwsError reads (aws-errors.ts). */
export interface SendMessageError extends Error {
  /** clockSkewCorrected: refused for a clock off the service's, which the client has corrected since (sqs-direct.ts) */
  $metadata: { httpStatusCode: number; clockSkewCorrected?: boolean };
  /** an answer that is not JSON (XML from an emulator's or a proxy's front end, HTML): classifyAwsError reads its <Code> */
  $responseBodyText?: string;
}

/**
 * An error answer (any status but 200) as the SDK's error: the JSON `__type`'s name (after its
 * namespace's `#`, the SDK's error name), else the query-compatible header's code
 * (`x-amzn-query-error: Code;Sender`), with the JSON's message; a body that is not JSON is kept as
 * text, from which classifyAwsError takes an XML <Code> and <Message>.
 */
export function sendMessageErrorOf(status: number, text: string, queryErrorHeader: string | undefined): SendMessageError {
  const fromHeader = asErrorCode(queryErrorHeader?.split(';')[0]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    const err = new Error(`HTTP ${status}`) as SendMessageError;
    err.name = fromHeader ?? `HTTP${status}`;
    err.$metadata = { httpStatusCode: status };
    err.$responseBodyText = text;
    return err;
  }
  const r = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const type = typeof r.__type === 'string' ? r.__type : typeof r.code === 'string' ? r.code : undefined;
  const message = typeof r.message === 'string' ? r.message : typeof r.Message === 'string' ? r.Message : `HTTP ${status}`;
  const err = new Error(message) as SendMessageError;
  err.name = asErrorCode(type?.split('#').pop()) ?? fromHeader ?? `HTTP${status}`;
  err.$metadata = { httpStatusCode: status };
  return err;
}
