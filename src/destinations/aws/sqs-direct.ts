// SQS's SendMessage as one signed POST (AWS_SQS_SEND=direct, the default, and direct-sdk-signer):
// the SDK client's send() spends about 0.5 ms of CPU per call in its middleware stack, schema
// serde, retry wrapper and handler, two thirds of a send (docs/destinations.md, "The SQS send").
// Everything that is not per call stays the SDK client's: its credentials (the pod's identity, or
// the endpoint's role, memoized and renewed), its region, its clock-skew offset. The signature is
// ours (sigv4-post.ts, node:crypto; `direct`) or the client's own SigV4 signer
// (@smithy/signature-v4, the instance send() signs with; `direct-sdk-signer`), the same bytes
// either way. This module owns the POST: an undici keep-alive agent whose every connection
// resolves through the address policy, the attempt's deadline, a bounded answer.
// sqs-send-message.ts owns the body and reading the answer, sqs-send-batch.ts a batch's.
// With AWS_SQS_BATCH=on, the sends of one queue beyond MAX_IN_FLIGHT requests in flight wait for
// one to end and go together as one SendMessageBatch (docs/destinations.md, "The SQS send").
import type { SQSClient } from '@aws-sdk/client-sqs';
import { performance } from 'node:perf_hooks';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import type { SqsTarget } from '../../delivery/destination.js';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import { createGuardedLookup } from '../../delivery/guarded-lookup.js';
import { CLOCK_SKEW_CODES, correctClockSkew, resolveCallTarget, signPost } from '../../transport/signed-aws-call.js';
import { createSigV4PostSigner } from './sigv4-post.js';
import { nextLatencyMs, sendFloorMs, takeBatch } from '../send-batching.js';
import { awsErrorCodeOf } from './aws-errors.js';
import {
  batchEnvelopeBytes,
  batchRefusalOf,
  entryBytes,
  entryWireBytes,
  parseSendMessageBatchAnswer,
  SEND_MESSAGE_BATCH_HEADERS,
  sendMessageBatchInput,
  SQS_BATCH_LIMITS,
  type BatchEntryInput,
} from './sqs-send-batch.js';
import {
  parseSendMessageAnswer,
  SEND_MESSAGE_HEADERS,
  sendMessageErrorOf,
  sendMessageUrl,
  type SendMessageAnswer,
} from './sqs-send-message.js';

/** A SendMessage answer is a few hundred bytes, a batch's ten times that; an error page from a proxy may be more: kept up to this. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The signed headers of a POST of `body` to `url`, signed at `date`. */
type Sign = (url: URL, headers: Record<string, string>, body: Buffer, date: Date) => Promise<Record<string, string>>;

/** SQS's signing name (the SDK client's `defaultSigningName`). */
const SQS_SIGNING_NAME = 'sqs';

/**
 * How many requests of one queue (and client) go at once before sends wait to share a batch
 * (AWS_SQS_BATCH=on). Below it a send is today's single SendMessage, at once: a lone or light
 * load gains nothing from waiting. Four: a queue with four requests in flight is under a burst
 * (one SQS request takes a few ms to tens of ms), and a send then waits for at most one of them to
 * end (about one request's latency, which it would mostly spend queued on a busy connection anyway)
 * and goes with up to nine others, so the requests drop by up to ten under load; more in flight
 * would leave fewer sends waiting to share, fewer would hold sends back at loads where a request
 * each costs little.
 */
export const MAX_IN_FLIGHT = 4;

/**
 * How long the sends of a queue go alone after a batch of theirs was refused authorization (a
 * provider that authorizes SendMessageBatch by its own name: batchRefusalOf). Not for the worker's
 * life: a policy that grants it later, or other credentials behind the same client (a renewed
 * role), are found again; and trying costs little, one refused request per queue every ten
 * minutes, whose entries are then sent alone (none fails for it).
 */
export const BATCH_REFUSED_MS = 10 * 60_000;

/** The attempt a send belongs to: its deadline (performance.now()) and whole time, its signal. */
export interface SqsAttempt {
  signal: AbortSignal;
  deadline: number;
  timeoutMs: number;
}

/** A send that waited for a batch and was not sent: too little of its attempt's time left (the reason). */
export interface SqsNotSent {
  notSent: string;
}

export interface SqsDirect {
  /**
   * One SendMessage of `input` (its answer), alone or as an entry of a SendMessageBatch (its
   * entry's answer); throws what classifyAwsError reads; `notSent` when it waited and its
   * attempt's time ran too short to send it.
   */
  send(client: SQSClient, to: SqsTarget, input: SendMessageInput, attempt: SqsAttempt): Promise<SendMessageAnswer | SqsNotSent>;
  close(): Promise<void>;
}

/** The SendMessage input (sendMessageInput's), the queue URL with it. */
export type SendMessageInput = BatchEntryInput & { QueueUrl: string };

/** A send waiting for a request of its queue to end (AWS_SQS_BATCH=on). */
interface Waiting {
  input: SendMessageInput;
  bytes: number;
  attempt: SqsAttempt;
  /** when it came (performance.now()) */
  came: number;
  resolve: (r: SendMessageAnswer | SqsNotSent) => void;
  reject: (err: unknown) => void;
  /** removes it from the queue when its attempt ends while it waits */
  onAbort: () => void;
}

/** One queue's requests of one client: how many are in flight, their recent latency, the sends waiting. */
interface Lane {
  inFlight: number;
  /** the recent time of a request (each POST, answered, failed or cut at its deadline alike): sets the floor of the sends that wait */
  latencyMs: number | null;
  waiting: Waiting[];
  /** until when (performance.now()) each send goes alone, at once: a batch of this queue was refused authorization */
  aloneUntil: number;
}

export function createSqsDirect(deps: {
  addressPolicy: AddressPolicy;
  /** `own`: our SigV4 (sigv4-post.ts); `sdk`: the client's @smithy/signature-v4 signer (AWS_SQS_SEND=direct-sdk-signer) */
  signer: 'own' | 'sdk';
  /** AWS_SQS_BATCH: concurrent sends of one queue beyond MAX_IN_FLIGHT share a SendMessageBatch */
  batch?: boolean;
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
  const keyOf = (to: SqsTarget): string => `${to.endpointUrl ?? ''} ${to.queueUrl}`;
  const urlOf = (to: SqsTarget): URL => {
    const key = keyOf(to);
    let url = urls.get(key);
    if (!url) {
      url = sendMessageUrl(to);
      urls.set(key, url);
    }
    return url;
  };

  /**
   * One signed POST of `input` (its JSON) with `headers`: the answer's text when 200, else throws
   * the SDK's error shape. Its time goes into `lane`'s latency whatever the end, once it went (review6): a queue
   * whose requests fail slowly or time out raises the floor of the sends that wait, as a slow
   * answer does; each POST of a split batch is one request's time.
   */
  const post = async (
    client: SQSClient,
    url: URL,
    headers: Readonly<Record<string, string>>,
    input: unknown,
    signal: AbortSignal,
    lane: Lane | undefined,
  ) => {
    const sign = await signerOf(client);
    // the bytes once: hashed for the signature and sent, not encoded twice
    const body = Buffer.from(JSON.stringify(input), 'utf8');
    const signedOffset = client.config.systemClockOffset || 0;
    // the SDK's clock-skew correction: signed with the server's time as last learnt (below)
    const signed = await sign(url, headers, body, new Date(Date.now() + signedOffset));
    const started = performance.now();
    // a request that never went (its signal ended while it was signed, the agent closed) took no
    // time of the queue's: counted, its ~0 ms would lower the floor just as the queue stalls (review7)
    let went = !signal.aborted;
    let res: Dispatcher.ResponseData;
    let text: string;
    try {
      // the agent's own request(): the origin and path given, not parsed from a URL again per send
      res = await agent.request({ origin: url.origin, path: url.pathname, method: 'POST', headers: signed, body, signal });
      text = await readBounded(res, MAX_ANSWER_BYTES);
    } catch (err) {
      if (isAgentClosed(err)) went = false;
      throw err;
    } finally {
      if (lane && went) lane.latencyMs = nextLatencyMs(lane.latencyMs, performance.now() - started);
    }
    if (res.statusCode === 200) return text;
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
  };

  const sendOne = async (
    client: SQSClient,
    url: URL,
    input: SendMessageInput,
    signal: AbortSignal,
    lane: Lane | undefined,
  ): Promise<SendMessageAnswer> =>
    parseSendMessageAnswer(await post(client, url, SEND_MESSAGE_HEADERS, input, signal, lane), input.MessageBody);

  // AWS_SQS_BATCH=on: the lanes of each client, by queue
  const lanes = new WeakMap<SQSClient, Map<string, Lane>>();
  const laneOf = (client: SQSClient, key: string): Lane => {
    let byQueue = lanes.get(client);
    if (!byQueue) lanes.set(client, (byQueue = new Map()));
    let lane = byQueue.get(key);
    if (!lane) byQueue.set(key, (lane = { inFlight: 0, latencyMs: null, waiting: [], aloneUntil: 0 }));
    return lane;
  };
  const sendsAlone = (lane: Lane): boolean => lane.aloneUntil > performance.now();

  /** A request of the lane (a split batch's run of them counts as one), counted in flight. */
  const inLane = async <T>(lane: Lane, request: () => Promise<T>): Promise<T> => {
    lane.inFlight += 1;
    try {
      return await request();
    } finally {
      lane.inFlight -= 1;
    }
  };

  /**
   * Whether a waiting send still has time enough to go (sendFloorMs, Kafka's rule, review K3): one
   * sent with a few ms left times out while SQS stores it, and its retry stores a second copy. One
   * without is answered `notSent` (its attempt fails unsent, retried).
   */
  const sendable = (lane: Lane, w: Waiting, now: number): boolean => {
    const left = w.attempt.deadline - now;
    const floor = sendFloorMs(w.attempt.timeoutMs, lane.latencyMs);
    if (left >= floor) return true;
    // settled: its attempt's end no longer takes it out of the queue
    w.attempt.signal.removeEventListener('abort', w.onAbort);
    w.resolve({
      notSent:
        `not sent: ${Math.max(0, Math.round(left))} ms of the attempt's time left after ${Math.round(now - w.came)} ms ` +
        `waiting for the queue's requests in flight, under the ${Math.round(floor)} ms a send is given ` +
        `(sent now, it would time out while stored, and its retry would store it again)`,
    });
    return false;
  };

  /** The lane's waiting sends go, a request at a time, while fewer than MAX_IN_FLIGHT are in flight. */
  const pump = (client: SQSClient, url: URL, queueUrl: string, lane: Lane): void => {
    if (sendsAlone(lane)) {
      // batches refused here: each waiting send goes at once, alone, as without AWS_SQS_BATCH
      const now = performance.now();
      const live = lane.waiting.filter((w) => sendable(lane, w, now));
      lane.waiting = [];
      for (const w of live) {
        w.attempt.signal.removeEventListener('abort', w.onAbort);
        void inLane(lane, () => sendOne(client, url, w.input, w.attempt.signal, lane))
          .then(w.resolve, w.reject)
          .finally(() => pump(client, url, queueUrl, lane));
      }
      return;
    }
    while (lane.inFlight < MAX_IN_FLIGHT && lane.waiting.length > 0) {
      const now = performance.now();
      const live = lane.waiting.filter((w) => sendable(lane, w, now));
      const batch = takeBatch(live, (w) => w.bytes, {
        records: SQS_BATCH_LIMITS.records,
        bytes: SQS_BATCH_LIMITS.bytes - batchEnvelopeBytes(queueUrl),
      });
      lane.waiting = live.slice(batch.length);
      if (batch.length === 0) return;
      for (const w of batch) w.attempt.signal.removeEventListener('abort', w.onAbort);
      void inLane(lane, () => sendWaiting(client, url, queueUrl, lane, batch))
        // a failure of our own making reaches every entry still unsettled (a settled one ignores it), never the process
        .catch((err: unknown) => batch.forEach((w) => w.reject(err)))
        .finally(() => pump(client, url, queueUrl, lane));
    }
  };

  /**
   * The waiting sends `pump` took: the client's credentials first, then those that still may go
   * (their attempts not ended, over their floor), one alone (SendMessage) or several as one
   * SendMessageBatch; each settles with its own answer.
   */
  const sendWaiting = async (client: SQSClient, url: URL, queueUrl: string, lane: Lane, taken: Waiting[]): Promise<void> => {
    // each entry's own end listens from now: it settles at its attempt's deadline with its reason,
    // also while the credentials are awaited or its batch's request is in flight
    const ends = taken.map((w) => {
      const end = () => w.reject(w.attempt.signal.reason);
      if (w.attempt.signal.aborted) end();
      w.attempt.signal.addEventListener('abort', end, { once: true });
      return () => w.attempt.signal.removeEventListener('abort', end);
    });
    try {
      // What goes is decided once the credentials are in hand, then the body is built and signed
      // (review7): signing awaits them, and a renewal (a role's or the pod's, an STS call) may take
      // seconds; an entry whose attempt ended meanwhile would still be in the body (a batch's
      // request is cut only when every entry has ended, below), stored by SQS and again by its
      // retry. (undici's connect, up to its timeout, still follows: a single send is cut there, a
      // batch's entry is not, docs/destinations.md.)
      await signerOf(client);
      await client.config.credentials();
      const now = performance.now();
      const batch = taken.filter((w) => !w.attempt.signal.aborted && sendable(lane, w, now));
      if (batch.length === 1) {
        const [w] = batch as [Waiting];
        await sendOne(client, url, w.input, w.attempt.signal, lane).then(w.resolve, w.reject);
      } else if (batch.length > 1) {
        await sendBatch(client, url, queueUrl, lane, batch);
      }
    } finally {
      ends.forEach((off) => off());
    }
  };

  /** Several waiting sends as one SendMessageBatch (their ends listened to by sendWaiting). */
  const sendBatch = async (client: SQSClient, url: URL, queueUrl: string, lane: Lane, batch: Waiting[]): Promise<void> => {
    // No entry fails for another's deadline (review6): the entries of one queue may belong to
    // endpoints with different timeouts (1 to 120 s), and even one endpoint's differ by how long
    // each waited. So the request is not cut at its earliest entry's deadline: each entry ends at
    // its own attempt's deadline, with its own reason (its attempt's timeout), and the request
    // lasts until every entry's attempt has ended. The deadline rule then holds for the request
    // as sent: each entry went only with its own floor of time left (sendable), and the request
    // has all of it. Simpler and sounder than grouping entries by timeout (lanes per timeout) or by
    // deadlines within a floor of the first's: a request cut at its earliest deadline still fails
    // entries with later ones for it, and since SQS may have stored them, their retries would be
    // second copies; an entry ending at its own deadline is what its single SendMessage would do.
    // (each entry's own end listens first, sendWaiting's: it settles with its attempt's reason before the request is cut)
    const request = whenAllAborted(batch.map((w) => w.attempt.signal));
    let text: string;
    try {
      text = await post(
        client,
        url,
        SEND_MESSAGE_BATCH_HEADERS,
        sendMessageBatchInput(
          queueUrl,
          batch.map((w) => w.input),
        ),
        request.signal,
        lane,
      );
    } catch (err) {
      const refusal = batchRefusalOf(awsErrorCodeOf(err));
      // refused for what may be one entry's fault (a message over the queue's limit): each alone,
      // one after the other in this request's place, and only while its attempt has time enough
      if (refusal === 'split' && !request.signal.aborted) {
        for (const w of batch) {
          if (w.attempt.signal.aborted) w.reject(w.attempt.signal.reason);
          else if (sendable(lane, w, performance.now()))
            await sendOne(client, url, w.input, w.attempt.signal, lane).then(w.resolve, w.reject);
        }
        return;
      }
      // refused authorization, by a provider that may authorize SendMessageBatch by its own name:
      // the queue's sends go alone for a while (the ones waiting now too), these entries each alone
      // at once, as without AWS_SQS_BATCH (concurrent single sends, as a burst's are then)
      // (these entries came before the sends waiting now: they go first, review7)
      if (refusal === 'alone' && !request.signal.aborted) {
        lane.aloneUntil = performance.now() + BATCH_REFUSED_MS;
        const now = performance.now();
        const own = batch.map((w) => {
          if (w.attempt.signal.aborted) return w.reject(w.attempt.signal.reason);
          if (!sendable(lane, w, now)) return;
          return sendOne(client, url, w.input, w.attempt.signal, lane).then(w.resolve, w.reject);
        });
        pump(client, url, queueUrl, lane);
        await Promise.all(own);
        return;
      }
      // any other failure of the request (authentication, throttling, the network) is every entry's
      for (const w of batch) w.reject(err);
      return;
    } finally {
      request.release();
    }
    const answers = parseSendMessageBatchAnswer(
      text,
      batch.map((w) => w.input.MessageBody),
    );
    batch.forEach((w, i) => {
      const a = answers[i]!;
      if ('answer' in a) w.resolve(a.answer);
      else w.reject(a.error);
    });
  };

  return {
    async send(client, to, input, attempt) {
      const url = urlOf(to);
      if (!deps.batch) return sendOne(client, url, input, attempt.signal, undefined);
      const lane = laneOf(client, keyOf(to));
      // under MAX_IN_FLIGHT, with none waiting before it (their order kept), or while the queue's
      // batches are refused: today's single SendMessage, at once
      if ((lane.inFlight < MAX_IN_FLIGHT && lane.waiting.length === 0) || sendsAlone(lane)) {
        try {
          return await inLane(lane, () => sendOne(client, url, input, attempt.signal, lane));
        } finally {
          pump(client, url, to.queueUrl, lane);
        }
      }
      return new Promise<SendMessageAnswer | SqsNotSent>((resolve, reject) => {
        const w: Waiting = {
          input,
          // its size in the batch as SQS counts it and on the wire (JSON-escaped), whichever is more: a batch stays within 1 MiB of both
          bytes: Math.max(entryBytes(input), entryWireBytes(input)),
          attempt,
          came: performance.now(),
          resolve,
          reject,
          onAbort: () => {
            lane.waiting = lane.waiting.filter((x) => x !== w);
            reject(attempt.signal.reason);
          },
        };
        if (attempt.signal.aborted) return reject(attempt.signal.reason);
        attempt.signal.addEventListener('abort', w.onAbort, { once: true });
        lane.waiting.push(w);
      });
    },
    close: () => agent.close(),
  };
}

/**
 * A signal that aborts once every one of `signals` has (a batch's request, when no entry's attempt
 * waits for its answer any more); `release` takes its listeners off the signals.
 */
function whenAllAborted(signals: readonly AbortSignal[]): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  let left = signals.length;
  const ended = () => {
    left -= 1;
    if (left === 0) controller.abort(new DOMException("every entry's attempt ended", 'AbortError'));
  };
  for (const s of signals) {
    if (s.aborted) ended();
    else s.addEventListener('abort', ended, { once: true });
  }
  return { signal: controller.signal, release: () => signals.forEach((s) => s.removeEventListener('abort', ended)) };
}

/** undici's refusal of a request on a closed agent (close() while sends waited): the request never went. */
function isAgentClosed(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'UND_ERR_CLOSED' || code === 'UND_ERR_DESTROYED';
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
