// SNS PublishBatch as one signed HTTP POST, for ingest's hot path (issue 12). Through the SDK a
// PublishBatch of eight ids cost about 350 µs of CPU (its per-call middleware, schema serde and
// XML parsing): a quarter of ingest's busy time, and ingest is bound by its one thread's CPU. The
// same call here costs about 90 µs. Everything that is not per call stays the SDK's, from the
// client ingest already configures: credentials (the default provider chain, refreshed before
// they expire), region, the endpoint (partitions, FIPS, dual stack, AWS_ENDPOINT_URL) and the
// SigV4 signer itself. What this module owns is the query-protocol body, the HTTP call with its
// timeouts, the retry of a throttled or failed call, and reading the answer.
import type { SNSClient } from '@aws-sdk/client-sns';
import { Agent, request } from 'undici';
import { internal } from '../domain/errors.js';
import { callLimits, type AwsClientsOptions } from './aws-client-config.js';

/** SNS PublishBatch takes at most 10 entries. */
export const MAX_PUBLISH_BATCH = 10;

export interface PublishBatchEntry {
  /** unique within the call */
  id: string;
  message: string;
}

/** A call SNS answered: the entries it did not accept, by id, with SNS's code. */
export interface PublishBatchResult {
  failed: Map<string, string>;
}

export interface SnsPublishBatch {
  /** Throws SnsCallError when the call itself failed (after its retries). */
  publishBatch(topicArn: string, entries: readonly PublishBatchEntry[]): Promise<PublishBatchResult>;
  close(): Promise<void>;
}

/** A PublishBatch call that failed as a whole: the name is SNS's error code, or what failed on the way. */
export class SnsCallError extends Error {
  readonly status: number | undefined;
  readonly retryable: boolean;
  constructor(name: string, message: string, opts: { status?: number; retryable: boolean; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = name;
    this.status = opts.status;
    this.retryable = opts.retryable;
  }
}

/** An answer larger than this is not SNS's (ten entries' ids come to about 2 KB). */
const MAX_RESPONSE_BYTES = 1 << 20;
/** the SDK's standard retry: full jitter over 100 ms doubling per attempt */
const RETRY_BASE_MS = 100;
const RETRY_CAP_MS = 5_000;

/** SNS error codes that mean "try again" although the status is 4xx (throttling). */
const RETRYABLE_CODES = new Set([
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottledException',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'KMSThrottling',
  'KMSThrottlingException',
  'RequestTimeout',
  'RequestTimeoutException',
]);

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
  const limits = callLimits(deps.aws, 'sns');
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const agent = new Agent({ connections: Math.max(1, deps.connections), connect: { timeout: limits.connectionTimeoutMs } });
  // resolved on the first call, then kept: neither the region nor the endpoint changes in a process
  let target: Promise<{ url: URL; sign: Signer }> | undefined;

  async function once(topicArn: string, entries: readonly PublishBatchEntry[]): Promise<PublishBatchResult> {
    target ??= resolveTarget(deps.sns).catch((err: unknown) => {
      target = undefined;
      throw err;
    });
    const { url, sign } = await target;
    const body = publishBatchBody(topicArn, entries);
    // the SDK's clock-skew correction: sign with the server's time as last learnt (below)
    const signed = await sign(new Date(Date.now() + (deps.sns.config.systemClockOffset || 0)), {
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: url.pathname,
      query: {},
      headers: { host: url.host, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body,
    });
    let status: number;
    let text: string;
    let serverDate: string | undefined;
    try {
      const res = await request(url, {
        method: 'POST',
        headers: signed.headers,
        body,
        dispatcher: agent,
        signal: AbortSignal.timeout(limits.requestTimeoutMs),
      });
      status = res.statusCode;
      serverDate = typeof res.headers.date === 'string' ? res.headers.date : undefined;
      text = await readBounded(res.body);
    } catch (err) {
      const name = err instanceof Error && err.name === 'TimeoutError' ? 'RequestTimeout' : 'NetworkError';
      throw new SnsCallError(name, `SNS PublishBatch: ${name}`, { retryable: true, cause: err });
    }
    if (status !== 200) {
      const code = parseErrorCode(text) ?? `HTTP ${status}`;
      const clockCorrected = CLOCK_SKEW_CODES.has(code) && correctClockSkew(deps.sns, serverDate);
      throw new SnsCallError(code, `SNS PublishBatch: ${code} (HTTP ${status})`, {
        status,
        retryable: status >= 500 || status === 429 || RETRYABLE_CODES.has(code) || clockCorrected,
      });
    }
    return { failed: parsePublishBatchResult(text, entries.map((e) => e.id)) };
  }

  return {
    async publishBatch(topicArn, entries) {
      if (entries.length === 0 || entries.length > MAX_PUBLISH_BATCH || new Set(entries.map((e) => e.id)).size !== entries.length) {
        throw internal('invalid_publish_batch', `a PublishBatch takes 1 to ${MAX_PUBLISH_BATCH} entries with distinct ids`);
      }
      for (let attempt = 1; ; attempt++) {
        try {
          return await once(topicArn, entries);
        } catch (err) {
          if (attempt >= limits.maxAttempts || !(err instanceof SnsCallError) || !err.retryable) throw err;
          await sleep(Math.random() * Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** (attempt - 1)));
        }
      }
    },
    close: () => agent.close(),
  };
}

/** Codes SNS answers a request signed with a clock far off its own with. */
const CLOCK_SKEW_CODES = new Set(['RequestTimeTooSkewed', 'RequestExpired', 'RequestInTheFuture', 'InvalidSignatureException', 'SignatureDoesNotMatch']);
/** the SDK's threshold: a skew below it is not what failed the call */
const CLOCK_SKEW_MS = 300_000;

/**
 * When the server's Date is far from the time the call was signed with, the client's clock offset
 * (the SDK's `systemClockOffset`, shared with the client) becomes the server's, and the call is
 * worth another attempt. A node whose clock drifted still publishes, as it did through the SDK.
 */
function correctClockSkew(sns: SNSClient, serverDate: string | undefined): boolean {
  const serverTime = serverDate === undefined ? NaN : Date.parse(serverDate);
  if (Number.isNaN(serverTime)) return false;
  const offset = sns.config.systemClockOffset || 0;
  if (Math.abs(serverTime - (Date.now() + offset)) < CLOCK_SKEW_MS) return false;
  sns.config.systemClockOffset = serverTime - Date.now();
  return true;
}

interface SignableRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: string;
}
type Signer = (signingDate: Date, req: SignableRequest) => Promise<{ headers: Record<string, string> }>;

/** The endpoint and signer the client would use for this call, from its resolved configuration. */
async function resolveTarget(sns: SNSClient): Promise<{ url: URL; sign: Signer }> {
  const cfg = sns.config;
  // the SDK's order: the client's endpoint, else AWS_ENDPOINT_URL_SNS / AWS_ENDPOINT_URL and the
  // shared config file's (unless ignored), else the rules for region, FIPS and dual stack
  const explicit = cfg.endpoint ? await cfg.endpoint() : undefined;
  const custom = explicit
    ? `${explicit.protocol}//${explicit.hostname}${explicit.port ? `:${explicit.port}` : ''}${explicit.path}`
    : cfg.ignoreConfiguredEndpointUrls
      ? undefined
      : await cfg.serviceConfiguredEndpoint?.();
  const endpoint = cfg.endpointProvider({
    Region: await cfg.region(),
    UseFIPS: await cfg.useFipsEndpoint(),
    UseDualStack: await cfg.useDualstackEndpoint(),
    ...(custom ? { Endpoint: custom } : {}),
  });
  const signer = await cfg.signer();
  return {
    url: new URL(endpoint.url.href),
    sign: async (signingDate, req) => {
      const signed = await signer.sign(req, { signingDate });
      return { headers: signed.headers };
    },
  };
}

async function readBounded(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) throw new Error(`answer over ${MAX_RESPONSE_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
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

/** The text of each `<tag>` directly inside `xml` (no attributes on SNS's elements but the root's). */
function elements(xml: string, tag: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, 'g');
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
  const code = error === undefined ? undefined : field(error, 'Code');
  // a code is an identifier; anything else is not SNS's answer and is not repeated into logs
  return code !== undefined && /^[A-Za-z][\w.]{0,99}$/.test(code) ? code : undefined;
}
