// SNS PublishBatch for ingest's hot path, as one signed POST (signed-aws-call.ts says why): the
// query-protocol form that goes out and reading the XML that comes back.
import type { SNSClient } from '@aws-sdk/client-sns';
import { internal } from '../domain/errors.js';
import type { AwsClientsOptions } from './aws-client-config.js';
import { asErrorCode, createSignedAwsCall } from './signed-aws-call.js';

/** SNS PublishBatch takes at most 10 entries. */
export const MAX_PUBLISH_BATCH = 10;

export interface PublishBatchEntry {
  /** unique within the call */
  id: string;
  message: string;
  /**
   * String message attributes: the W3C trace context (traceparent, tracestate). With raw message
   * delivery SNS hands them to SQS as the message's attributes, where the consumer reads them.
   */
  attributes?: Readonly<Record<string, string>>;
}

/** A call SNS answered: the entries it did not accept, by id, with SNS's code. */
export interface PublishBatchResult {
  failed: Map<string, string>;
}

export interface SnsPublishBatch {
  /** Throws AwsCallError when the call itself failed (after its retries). */
  publishBatch(topicArn: string, entries: readonly PublishBatchEntry[]): Promise<PublishBatchResult>;
  close(): Promise<void>;
}

/** Ten entries' ids come to about 2 KB: an answer past 1 MiB is not SNS's. */
const MAX_RESPONSE_BYTES = 1 << 20;

export function createSnsPublishBatch(deps: {
  /** the configured client: its credentials, region, endpoint and signer are used, not its send() */
  sns: SNSClient;
  /** the options the client was made with: timeouts and attempts */
  aws: AwsClientsOptions;
  /** connections kept to SNS: the publisher's calls in flight */
  connections: number;
  /** for tests: waits between attempts */
  sleep?: (ms: number) => Promise<void>;
}): SnsPublishBatch {
  const call = createSignedAwsCall({
    client: deps.sns,
    service: 'sns',
    aws: deps.aws,
    connections: deps.connections,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    errorCode: (text) => parseErrorCode(text),
    ...(deps.sleep ? { sleep: deps.sleep } : {}),
  });
  return {
    async publishBatch(topicArn, entries) {
      checkPublishBatch(entries);
      const text = await call.send({
        headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
        body: publishBatchBody(topicArn, entries),
      });
      return {
        failed: parsePublishBatchResult(
          text,
          entries.map((e) => e.id),
        ),
      };
    },
    close: () => call.close(),
  };
}

/** What SNS would refuse as a whole: a bug of the caller, whichever transport makes the call. */
export function checkPublishBatch(entries: readonly PublishBatchEntry[]): void {
  if (entries.length === 0 || entries.length > MAX_PUBLISH_BATCH || new Set(entries.map((e) => e.id)).size !== entries.length) {
    throw internal('invalid_publish_batch', `a PublishBatch takes 1 to ${MAX_PUBLISH_BATCH} entries with distinct ids`);
  }
}

// ---- the query protocol: what goes out and what comes back (pure, unit-tested) ----

/** RFC 3986 form encoding, as the SDK's query serializer does (encodeURIComponent leaves !'()* alone). */
function encode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function publishBatchBody(topicArn: string, entries: readonly PublishBatchEntry[]): string {
  let body = `Action=PublishBatch&Version=2010-03-31&TopicArn=${encode(topicArn)}`;
  entries.forEach((e, i) => {
    const member = `PublishBatchRequestEntries.member.${i + 1}`;
    body += `&${member}.Id=${encode(e.id)}&${member}.Message=${encode(e.message)}`;
    Object.entries(e.attributes ?? {}).forEach(([name, value], j) => {
      const attr = `${member}.MessageAttributes.entry.${j + 1}`;
      body += `&${attr}.Name=${encode(name)}&${attr}.Value.DataType=String&${attr}.Value.StringValue=${encode(value)}`;
    });
  });
  return body;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeXmlText(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref.startsWith('#x') || ref.startsWith('#X')) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(parseInt(ref.slice(1), 10));
    return ENTITIES[ref] ?? whole;
  });
}

/** one compiled pattern per tag, not a new one per element on every call */
const ELEMENT_PATTERNS = new Map<string, RegExp>();

/** The text of each `<tag>` directly inside `xml` (no attributes on SNS's elements but the root's). */
function elements(xml: string, tag: string): string[] {
  const out: string[] = [];
  let re = ELEMENT_PATTERNS.get(tag);
  if (re === undefined) {
    re = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, 'g');
    ELEMENT_PATTERNS.set(tag, re);
  }
  re.lastIndex = 0; // shared and global: each scan starts at the beginning
  for (let m = re.exec(xml); m; m = re.exec(xml)) out.push(m[1] ?? '');
  return out;
}

function field(xml: string, tag: string): string | undefined {
  const text = elements(xml, tag)[0];
  return text === undefined ? undefined : decodeXmlText(text.trim());
}

/**
 * The entries SNS did not accept, by id, with its code. An id the answer names neither as
 * successful nor as failed counts as failed ("NoResult"): a 200 on the inbound path means the
 * topic took the event, so only an id SNS says it took is taken.
 */
export function parsePublishBatchResult(xml: string, ids: readonly string[]): Map<string, string> {
  const failed = new Map<string, string>();
  for (const section of elements(xml, 'Failed')) {
    for (const member of elements(section, 'member')) {
      const id = field(member, 'Id');
      if (id !== undefined) failed.set(id, field(member, 'Code') ?? 'Failed');
    }
  }
  const succeeded = new Set<string>();
  for (const section of elements(xml, 'Successful')) {
    for (const member of elements(section, 'member')) {
      const id = field(member, 'Id');
      if (id !== undefined) succeeded.add(id);
    }
  }
  const result = new Map<string, string>();
  for (const id of ids) {
    const code = failed.get(id);
    if (code !== undefined) result.set(id, code);
    else if (!succeeded.has(id)) result.set(id, 'NoResult');
  }
  return result;
}

/** SNS's code in an error answer (`<ErrorResponse><Error><Code>`), if it is one. */
export function parseErrorCode(xml: string): string | undefined {
  const error = elements(xml, 'Error')[0];
  return asErrorCode(error === undefined ? undefined : field(error, 'Code'));
}
