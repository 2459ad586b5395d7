import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyPluginAsync } from 'fastify';
import { internal, isAppError, transient } from '../domain/errors.js';
import { AuthRefused, RefusalsLimited } from '../http/challenge.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { SOURCE_PATTERN, type InboundCredential } from '../domain/records.js';
import type { CredentialRefusal, CredentialVerifier } from './credential-verifier.js';
import type { ReceiveWebhook } from './receive-webhook.js';
import type { InboundTraceContext } from '../config/settings.js';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { contextOf, inSpan, linkTo, SpanKind, tracingOn } from '../observability/spans.js';
import { verifySignature, type SignatureRefusal } from './signatures.js';

const VALID_SOURCE = new RegExp(SOURCE_PATTERN);

const BASIC_CHALLENGE = { scheme: 'Basic', params: { realm: 'webhooks', charset: 'UTF-8' } } as const;

/**
 * No refusal is answered sooner than this after its request came in. Whatever checks ran (one
 * bcrypt comparison for presented Basic credentials, an HMAC for a signature, none for an unknown
 * source without credentials), they are done well within it, so the time of a 401 tells nothing
 * of which sources exist or how they verify. Above bcrypt's time at cost 10-12 on a busy core.
 */
export const REFUSAL_FLOOR_MS = 250;
/**
 * Under load a bcrypt comparison can take longer than the floor (200 ms and more at cost 10 on a
 * saturated 2-core machine), and then its own time would show again. The floor rises to a quarter
 * above the slowest of the last refusals' checks, up to this.
 */
const REFUSAL_FLOOR_MAX_MS = 2_000;
const RECENT_REFUSALS = 32;
/**
 * How long a request refused unchecked (429) is held before its answer: a flood's connections then
 * cost a timer each, not a stream of requests to parse and answer (docs/benchmarks.md, "Wrong
 * passwords": at the 250 ms floor, 200 connections made about 300 requests a second).
 */
const LIMITED_HOLD_MS = 2_000;

// credentials never leave the request: not stored, not forwarded, not logged
const DROPPED_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie']);

function storedHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined || DROPPED_HEADERS.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export interface InboundWebhooksDeps {
  receiveWebhook: ReceiveWebhook;
  /**
   * Presented Basic credentials are checked as soon as the headers are in, before the body is
   * read: a wrong one gets its 401 without being able to stream a body first.
   */
  verifier: CredentialVerifier;
  metrics: Metrics;
  logger: Logger;
  /** default REFUSAL_FLOOR_MS */
  refusalFloorMs?: number;
  /** the clock signed timestamps are checked against, in ms since the epoch */
  now?: () => number;
  /** what a sender's traceparent is to the request's span (INBOUND_TRACEPARENT; docs/tracing.md); default parent */
  inboundTraceContext?: InboundTraceContext;
}

/** The inbound request's server span (tracing on only): its parent or link from the sender's headers. */
function inboundSpan<T extends { eventId: string; duplicate: boolean } | { handshake: unknown }>(
  headers: Record<string, string | string[] | undefined>,
  source: string,
  clientAddress: string,
  mode: InboundTraceContext,
  fn: () => Promise<T>,
): Promise<T> {
  const link = mode === 'link' ? linkTo(headers) : undefined;
  const where = mode === 'parent' ? { parent: contextOf(headers) } : { parent: ROOT_CONTEXT, ...(link ? { links: [link] } : {}) };
  // client.address: the sender behind the proxies we trust (semantic conventions' name), not the proxy
  const attributes = {
    'http.request.method': 'POST',
    'http.route': '/api/webhooks/{source}',
    'webhook.source': source,
    'client.address': clientAddress,
  };
  return inSpan('POST /api/webhooks/{source}', { kind: SpanKind.SERVER, attributes, ...where }, async (span) => {
    const result = await fn();
    span?.setAttribute('http.response.status_code', 200);
    if ('eventId' in result) span?.setAttributes({ 'webhook.event_id': result.eventId, 'webhook.duplicate': result.duplicate });
    else span?.setAttribute('webhook.handshake', true);
    return result;
  });
}

/** What the headers decided, kept for the handler: a credential, or a refusal that waited for the body. */
type Admitted = { credential: InboundCredential } | { refused: CredentialRefusal; credential: InboundCredential | undefined };

/**
 * POST /api/webhooks/{source}: Basic auth and/or a provider's signature per source
 * (docs/sources.md), the raw body stored and published.
 */
export function inboundWebhooks(deps: InboundWebhooksDeps): FastifyPluginAsync {
  const admitted = new WeakMap<IncomingMessage, Admitted>();
  const floorMs = deps.refusalFloorMs ?? REFUSAL_FLOOR_MS;
  const now = deps.now ?? Date.now;
  // how long the checks of the last refusals took, before any waiting (a ring)
  const recentChecksMs: number[] = [];
  let next = 0;
  const floorFor = (checksMs: number): number => {
    recentChecksMs[next] = checksMs;
    next = (next + 1) % RECENT_REFUSALS;
    if (floorMs === 0) return 0;
    return Math.min(REFUSAL_FLOOR_MAX_MS, Math.max(floorMs, 1.25 * Math.max(...recentChecksMs)));
  };

  /** Logs and counts why, then answers the same 401 for every reason, no sooner than the floor. */
  const refuse = async (
    startedAt: number,
    reason: CredentialRefusal | SignatureRefusal,
    credential: InboundCredential | undefined,
    beforeBody: boolean,
    address: string,
  ): Promise<never> => {
    // the metric label of an unknown source is not the attacker's string
    const source = credential?.source ?? 'unknown';
    deps.metrics.inboundRequests.inc({ source: 'unauthorized', outcome: 'unauthorized' });
    deps.metrics.inboundRefused.inc({ source, reason });
    // the client's address behind the proxies we trust (client-address.ts): whom the refusal counts against
    deps.logger.info({ source, reason, address }, 'inbound request refused');
    const checksMs = performance.now() - startedAt;
    const wait = floorFor(checksMs) - checksMs;
    if (wait > 0) await sleep(wait);
    throw new AuthRefused('unauthorized', 'missing or invalid credentials or signature for this source', BASIC_CHALLENGE, beforeBody);
  };

  /**
   * Credentials over the refusal limits (refusal-limiter.ts): counted as refused (reason
   * rate_limited), then 429 with Retry-After LIMITED_HOLD_MS after the request came in, which
   * paces a client that keeps its connections busy (200 connections: at most 100 requests a second
   * to answer). Most were not compared; one that named an existing source's username was, and its
   * 429 comes at the same time as the others'. It does not move the floor of the 401s.
   */
  const limit = async (
    startedAt: number,
    credential: InboundCredential | undefined,
    retryAfterSeconds: number,
    address: string,
  ): Promise<never> => {
    const source = credential?.source ?? 'unknown';
    deps.metrics.inboundRequests.inc({ source: 'unauthorized', outcome: 'rate_limited' });
    deps.metrics.inboundRefused.inc({ source, reason: 'rate_limited' });
    deps.logger.debug({ source, reason: 'rate_limited', address }, 'inbound request refused');
    const wait = floorMs > 0 ? Math.max(floorMs, LIMITED_HOLD_MS) - (performance.now() - startedAt) : 0;
    if (wait > 0) await sleep(wait);
    throw new RefusalsLimited(retryAfterSeconds);
  };

  return async (inbound) => {
    // the raw bytes of every content type, untouched, for byte-for-byte storage and signing
    inbound.removeAllContentTypeParsers();
    inbound.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    inbound.addHook('onRequest', async (req) => {
      const at = performance.now();
      const source = (req.params as { source?: string }).source ?? '';
      let outcome;
      try {
        outcome = await deps.verifier.verify(source, req.headers.authorization, req.clientAddress);
      } catch (err) {
        if (isAppError(err) && err.kind === 'transient')
          throw transient('database_unavailable', 'credentials could not be checked; retry later', err);
        throw err;
      }
      if (outcome.ok) admitted.set(req.raw, { credential: outcome.credential });
      else if (outcome.reason === 'rate_limited') await limit(at, outcome.credential, outcome.retryAfterSeconds, req.clientAddress);
      else if (outcome.beforeBody) await refuse(at, outcome.reason, outcome.credential, true, req.clientAddress);
      else admitted.set(req.raw, { refused: outcome.reason, credential: outcome.credential });
    });

    inbound.post<{ Params: { source: string } }>('/api/webhooks/:source', async (req, reply) => {
      const source = req.params.source;
      const label = VALID_SOURCE.test(source) ? source : 'invalid';
      const entry = admitted.get(req.raw);
      // the hook let the request in: its outcome is there
      if (!entry) throw internal('unauthenticated_request', 'an inbound request reached the route without a verified credential');
      // from here, what is left to decide: the floor counts from the body's end, not the sender's pace
      const bodyAt = performance.now();
      if ('refused' in entry) return refuse(bodyAt, entry.refused, entry.credential, false, req.clientAddress);
      const { credential } = entry;
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (credential.verification) {
        // on the raw bytes, before anything is parsed or stored
        const checked = verifySignature(credential.verification, body, req.headers, Math.floor(now() / 1000));
        if (!checked.ok) return refuse(bodyAt, checked.reason, credential, false, req.clientAddress);
      }
      try {
        const receive = () =>
          deps.receiveWebhook({
            credential,
            body,
            contentType: req.headers['content-type'] ?? null,
            headers: storedHeaders(req.headers),
          });
        const result = tracingOn()
          ? await inboundSpan(req.headers, label, req.clientAddress, deps.inboundTraceContext ?? 'parent', receive)
          : await receive();
        if ('handshake' in result) {
          deps.metrics.inboundRequests.inc({ source: label, outcome: 'handshake' });
          return reply.code(200).send(result.handshake.answer);
        }
        const outcome = result.duplicate ? 'duplicate' : 'accepted';
        deps.metrics.inboundRequests.inc({ source: label, outcome });
        // up to the answer: receipt, insert and publish (the sender's wait, less its network)
        deps.metrics.inboundDuration.observe({ outcome }, reply.elapsedTime / 1000);
        return reply.code(200).send(result);
      } catch (err) {
        const outcome = isAppError(err) ? (err.kind === 'transient' ? 'unavailable' : 'invalid') : 'error';
        deps.metrics.inboundRequests.inc({ source: label, outcome });
        deps.metrics.inboundDuration.observe({ outcome }, reply.elapsedTime / 1000);
        throw err;
      }
    });
  };
}
