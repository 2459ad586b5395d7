// SQS's SendMessage as one signed POST (AWS_SQS_SEND=direct, the default, and direct-sdk-signer):
// the SDK client's send() spends about 0.5 ms of CPU per call in its middleware stack, schema
// serde, retry wrapper and handler, two thirds of a send (docs/destinations.md, "The SQS send").
// Everything that is not per call stays the SDK client's: its credentials (the pod's identity, or
// the endpoint's role, memoized and renewed), its region, its clock-skew offset. The signature is
// ours (sigv4-post.ts, node:crypto; `direct`) or the client's own SigV4 signer
// (@smithy/signature-v4, the instance send() signs with; `direct-sdk-signer`), the same bytes
// either way. This module owns the POST: an undici keep-alive agent whose every connection
// resolves through the address policy, the attempt's deadline, a bounded answer.
// sqs-send-message.ts owns the body and reading the answer.
import type { SQSClient } from '@aws-sdk/client-sqs';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import type { SqsTarget } from '../../delivery/destination.js';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import { createGuardedLookup } from '../../delivery/guarded-lookup.js';
import { CLOCK_SKEW_CODES, correctClockSkew, resolveCallTarget, signPost } from '../../transport/signed-aws-call.js';
import { createSigV4PostSigner } from './sigv4-post.js';
import {
  parseSendMessageAnswer,
  SEND_MESSAGE_HEADERS,
  sendMessageErrorOf,
  sendMessageUrl,
  type SendMessageAnswer,
} from './sqs-send-message.js';

/** A SendMessage answer is a few hundred bytes; an error page from a proxy may be more: kept up to this. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The signed headers of a POST of `body` to `url`, signed at `date`. */
type Sign = (url: URL, headers: Record<string, string>, body: Buffer, date: Date) => Promise<Record<string, string>>;

/** SQS's signing name (the SDK client's `defaultSigningName`). */
const SQS_SIGNING_NAME = 'sqs';

export interface SqsDirect {
  /** One SendMessage of `body` (the JSON input): its answer, or throws what classifyAwsError reads. */
  send(client: SQSClient, to: SqsTarget, input: { MessageBody: string }, signal: AbortSignal): Promise<SendMessageAnswer>;
  close(): Promise<void>;
}

export function createSqsDirect(deps: {
  addressPolicy: AddressPolicy;
  /** `own`: our SigV4 (sigv4-post.ts); `sdk`: the client's @smithy/signature-v4 signer (AWS_SQS_SEND=direct-sdk-signer) */
  signer: 'own' | 'sdk';
  connectionTimeoutMs?: number;
}): SqsDirect {
  const agent = new Agent({
    keepAliveTimeout: 4_000,
    // every new connection resolves through the policy: an endpoint never reaches a cloud-metadata address
    connect: buildConnector({ lookup: createGuardedLookup(deps.addressPolicy), timeout: deps.connectionTimeoutMs ?? 3_000 }),
  });
  // the signer of each client, resolved once (its credentials provider is asked on each signing, memoized there)
  const signers = new WeakMap<SQSClient, Promise<Sign>>();
  const signerOf = (client: SQSClient): Promise<Sign> => {
    let s = signers.get(client);
    if (!s) {
      s = (deps.signer === 'own' ? ownSigner(client) : sdkSigner(client)).catch((err: unknown) => {
        signers.delete(client);
        throw err;
      });
      signers.set(client, s);
    }
    return s;
  };
  // the URL of each (queue, endpoint)
  const urls = new Map<string, URL>();
  const urlOf = (to: SqsTarget): URL => {
    const key = `${to.endpointUrl ?? ''} ${to.queueUrl}`;
    let url = urls.get(key);
    if (!url) {
      url = sendMessageUrl(to);
      urls.set(key, url);
    }
    return url;
  };

  return {
    async send(client, to, input, signal) {
      const url = urlOf(to);
      const sign = await signerOf(client);
      // the bytes once: hashed for the signature and sent, not encoded twice
      const body = Buffer.from(JSON.stringify(input), 'utf8');
      const signedOffset = client.config.systemClockOffset || 0;
      // the SDK's clock-skew correction: signed with the server's time as last learnt (below)
      const headers = await sign(url, SEND_MESSAGE_HEADERS, body, new Date(Date.now() + signedOffset));
      // the agent's own request(): the origin and path given, not parsed from a URL again per send
      const res = await agent.request({ origin: url.origin, path: url.pathname, method: 'POST', headers, body, signal });
      const text = await readBounded(res, MAX_ANSWER_BYTES);
      if (res.statusCode === 200) return parseSendMessageAnswer(text, input.MessageBody);
      const queryError = res.headers['x-amzn-query-error'];
      const err = sendMessageErrorOf(res.statusCode, text, Array.isArray(queryError) ? queryError[0] : queryError);
      // the SDK's clock-skew correction: the next attempt signs with the server's time (shared with
      // send()); the refusal is then retried, as the SDK marks it (clockSkewCorrected), also when a
      // concurrent call's answer corrected the clock this one was signed with
      const date = res.headers.date;
      if (CLOCK_SKEW_CODES.has(err.name)) {
        const corrected = correctClockSkew(client, typeof date === 'string' ? date : undefined);
        if (corrected || (client.config.systemClockOffset || 0) !== signedOffset) err.$metadata.clockSkewCorrected = true;
      }
      throw err;
    },
    close: () => agent.close(),
  };
}

/** Our SigV4 (sigv4-post.ts) with the client's region and credentials provider (the same the SDK's signer asks). */
async function ownSigner(client: SQSClient): Promise<Sign> {
  const signer = createSigV4PostSigner({ region: await client.config.region(), service: SQS_SIGNING_NAME });
  const credentials = client.config.credentials;
  return async (url, headers, body, date) => signer(await credentials(), url, headers, body, date);
}

/** The SDK client's own signer (@smithy/signature-v4), as the transport's signed calls sign. */
async function sdkSigner(client: SQSClient): Promise<Sign> {
  const { sign } = await resolveCallTarget(client);
  // the SDK's signer hashes a string body (this path is the comparison's, AWS_SQS_SEND=direct-sdk-signer)
  return (url, headers, body, date) => signPost(sign, url, headers, body.toString('utf8'), date);
}

/** The answer's text, at most `max` bytes of it (the rest is read and dropped: the connection stays reusable). */
async function readBounded(res: Dispatcher.ResponseData, max: number): Promise<string> {
  // an answer that says its length within the bound is read at once (undici ends the body at that length)
  const length = Number(res.headers['content-length']);
  if (Number.isInteger(length) && length >= 0 && length <= max) return res.body.text();
  const body: AsyncIterable<Buffer> = res.body;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < max) chunks.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}
