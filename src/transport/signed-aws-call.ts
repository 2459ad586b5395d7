// One AWS call on the hot path as one signed HTTP POST: the SDK's send() spends most of a call's
// CPU in its per-call middleware, schema serde and parsing, on ingest's and the consumer's busiest
// calls (SNS PublishBatch; SQS ReceiveMessage and DeleteMessageBatch; figures: docs/benchmarks.md,
// "Figures behind the code"). AWS_TRANSPORT=sdk takes send() again (publish-calls.ts,
// queue-calls.ts). Everything that is not per call stays the SDK's, taken from the configured
// client: credentials (the default provider chain, refreshed before they expire), region, the
// endpoint (partitions, FIPS, dual stack, AWS_ENDPOINT_URL_<SERVICE> and AWS_ENDPOINT_URL) and the
// SigV4 signer itself. What this module owns is the HTTP call with the client's timeouts, the retry
// of a throttled or failed call, the SDK's clock-skew correction and a bounded answer; the
// protocol modules (sns-publish-batch.ts, sqs-calls.ts) own the body and reading the answer.
import { AWS_THROTTLING_CODES } from '../domain/aws-retried-codes.js';
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import { AppError } from '../domain/errors.js';
import { callLimits, type AwsClientsOptions } from './aws-client-config.js';

export type AwsServiceClient = SNSClient | SQSClient;

/**
 * A call that failed as a whole: the name is the service's error code, or what failed on the way.
 * Of the taxonomy: transient when worth retrying (aws_unavailable), else internal (aws_call_error:
 * refused credentials or permissions, a missing queue or topic, an answer we can not read).
 */
export class AwsCallError extends AppError {
  readonly status: number | undefined;
  readonly retryable: boolean;
  constructor(name: string, message: string, opts: { status?: number; retryable: boolean; cause?: unknown }) {
    super(opts.retryable ? 'aws_unavailable' : 'aws_call_error', message, { cause: opts.cause });
    this.name = name;
    this.status = opts.status;
    this.retryable = opts.retryable;
  }
}

export interface SignedAwsCall {
  /** One call with its retries: the text of the 200 answer; throws AwsCallError otherwise. */
  send(req: { headers: Record<string, string>; body: string; signal?: AbortSignal }): Promise<string>;
  close(): Promise<void>;
}

/** the SDK's standard retry: full jitter over 100 ms doubling per attempt */
const RETRY_BASE_MS = 100;
const RETRY_CAP_MS = 5_000;

/** Error codes that mean "try again" although the status is 4xx (throttling, a timeout of theirs). */
const RETRYABLE_CODES = new Set([...AWS_THROTTLING_CODES, 'KMSThrottling']);

/** Codes a request signed with a clock far off the server's is refused with. */
export const CLOCK_SKEW_CODES: ReadonlySet<string> = new Set([
  'RequestTimeTooSkewed',
  'RequestExpired',
  'RequestInTheFuture',
  'InvalidSignatureException',
  'SignatureDoesNotMatch',
]);
/** the SDK's threshold: a skew below it is not what failed the call */
const CLOCK_SKEW_MS = 300_000;

export function createSignedAwsCall(deps: {
  /** the configured client: its credentials, region, endpoint and signer are used, not its send() */
  client: AwsServiceClient;
  service: 'sns' | 'sqs';
  /** the options the client was made with: timeouts and attempts */
  aws: AwsClientsOptions;
  /** connections kept to the service: the calls in flight at once */
  connections: number;
  /** an answer longer than this fails the call unread (the protocol knows its largest) */
  maxResponseBytes: number;
  /** the service's code in an error answer, if it carries one */
  errorCode: (text: string, headers: IncomingHttpHeaders) => string | undefined;
  /** for tests: waits between attempts */
  sleep?: (ms: number) => Promise<void>;
}): SignedAwsCall {
  const { client, service } = deps;
  const limits = callLimits(deps.aws, service);
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  // node's own HTTP client, as the SDK's handler uses: the consumer loads no other HTTP client
  // (another one raised its resting memory)
  const agentOptions = { keepAlive: true, maxSockets: Math.max(1, deps.connections) };
  const agents = { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) };
  // resolved on the first call, then kept: neither the region nor the endpoint changes in a process
  let target: Promise<{ url: URL; sign: Signer }> | undefined;

  async function once(req: { headers: Record<string, string>; body: string; signal?: AbortSignal }): Promise<string> {
    target ??= resolveCallTarget(client).catch((err: unknown) => {
      target = undefined;
      throw err;
    });
    const { url, sign } = await target;
    // the SDK's clock-skew correction: sign with the server's time as last learnt (below)
    const signedHeaders = await signPost(sign, url, req.headers, req.body, new Date(Date.now() + (client.config.systemClockOffset || 0)));
    const timeout = AbortSignal.timeout(limits.requestTimeoutMs);
    let status: number;
    let text: string;
    let headers: IncomingHttpHeaders;
    try {
      const res = await post(url, signedHeaders, req.body, {
        agent: url.protocol === 'https:' ? agents['https:'] : agents['http:'],
        signal: req.signal ? AbortSignal.any([req.signal, timeout]) : timeout,
        connectTimeoutMs: limits.connectionTimeoutMs,
      });
      status = res.statusCode ?? 0;
      headers = res.headers;
      text = await readBounded(res, deps.maxResponseBytes);
    } catch (err) {
      if (req.signal?.aborted) throw new AwsCallError('Aborted', `${service}: the call was aborted`, { retryable: false, cause: err });
      const name = timeout.aborted ? 'RequestTimeout' : 'NetworkError';
      throw new AwsCallError(name, `${service}: ${name}`, { retryable: true, cause: err });
    }
    if (status !== 200) {
      const code = deps.errorCode(text, headers) ?? `HTTP ${status}`;
      const date = headers.date;
      const clockCorrected = CLOCK_SKEW_CODES.has(code) && correctClockSkew(client, typeof date === 'string' ? date : undefined);
      throw new AwsCallError(code, `${service}: ${code} (HTTP ${status})`, {
        status,
        retryable: status >= 500 || status === 429 || RETRYABLE_CODES.has(code) || clockCorrected,
      });
    }
    return text;
  }

  return {
    async send(req) {
      for (let attempt = 1; ; attempt++) {
        try {
          return await once(req);
        } catch (err) {
          if (attempt >= limits.maxAttempts || !(err instanceof AwsCallError) || !err.retryable || req.signal?.aborted) throw err;
          await sleep(Math.random() * Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** (attempt - 1)));
        }
      }
    },
    close: async () => {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

/** A code is an identifier; anything else is not the service's answer and is not repeated into logs. */
export function asErrorCode(text: string | undefined): string | undefined {
  const code = text?.trim();
  return code !== undefined && /^[A-Za-z][\w.]{0,99}$/.test(code) ? code : undefined;
}

/**
 * When the server's Date is far from the time the call was signed with, the client's clock offset
 * (the SDK's `systemClockOffset`, shared with the client) becomes the server's, and the call is
 * worth another attempt. A node whose clock drifted still reaches AWS, as it did through the SDK.
 */
export function correctClockSkew(client: AwsServiceClient, serverDate: string | undefined): boolean {
  const serverTime = serverDate === undefined ? NaN : Date.parse(serverDate);
  if (Number.isNaN(serverTime)) return false;
  const offset = client.config.systemClockOffset || 0;
  if (Math.abs(serverTime - (Date.now() + offset)) < CLOCK_SKEW_MS) return false;
  client.config.systemClockOffset = serverTime - Date.now();
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

/**
 * A POST of `body` to `url` signed at `signingDate` (the server's time as the client last learnt
 * it: now plus the SDK's clock-skew offset): the signed request's headers. The transport's calls
 * and the SQS destination's direct send (AWS_SQS_SEND=direct-sdk-signer) sign the same way.
 */
export async function signPost(
  sign: Signer,
  url: URL,
  headers: Record<string, string>,
  body: string,
  signingDate: Date,
): Promise<Record<string, string>> {
  const signed = await sign(signingDate, {
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    path: url.pathname,
    query: {},
    headers: { host: url.host, ...headers },
    body,
  });
  return signed.headers;
}

/** The endpoint and signer the client would use for a call, from its resolved configuration. */
export async function resolveCallTarget(client: AwsServiceClient): Promise<{ url: URL; sign: Signer }> {
  const cfg = client.config;
  // the SDK's order: the client's endpoint, else AWS_ENDPOINT_URL_<SERVICE> / AWS_ENDPOINT_URL and
  // the shared config file's (unless ignored), else the rules for region, FIPS and dual stack
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

/** One POST: resolves with the answer's head; a connection not made within connectTimeoutMs fails it. */
function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  opts: { agent: http.Agent; signal: AbortSignal; connectTimeoutMs: number },
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: opts.agent,
        signal: opts.signal,
      },
      resolve,
    );
    req.on('error', reject);
    req.on('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => req.destroy(new Error(`no connection within ${opts.connectTimeoutMs} ms`)), opts.connectTimeoutMs);
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    req.end(body);
  });
}

async function readBounded(body: AsyncIterable<Buffer>, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) throw new Error(`answer over ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
