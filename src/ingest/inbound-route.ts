import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsync } from 'fastify';
import { internal, isAppError, transient } from '../domain/errors.js';
import { AuthRefused } from '../http/challenge.js';
import type { Metrics } from '../metrics/metrics.js';
import { SOURCE_PATTERN, type InboundCredential } from '../domain/records.js';
import { parseBasicAuth } from './basic-auth.js';
import type { CredentialVerifier } from './credential-verifier.js';
import type { ReceiveWebhook } from './receive-webhook.js';
import type { InboundTraceContext } from './trace-context.js';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { contextOf, inSpan, linkTo, SpanKind, tracingOn } from '../observability/spans.js';

const VALID_SOURCE = new RegExp(SOURCE_PATTERN);

const BASIC_CHALLENGE = { scheme: 'Basic', params: { realm: 'webhooks', charset: 'UTF-8' } } as const;

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
   * Inbound credentials are checked as soon as the headers are in, before the body is read: an
   * unauthenticated sender gets its 401 without being able to stream a body first.
   */
  verifier: CredentialVerifier;
  metrics: Metrics;
  /** what a sender's traceparent is to the request's span (INBOUND_TRACEPARENT; docs/tracing.md); default parent */
  inboundTraceContext?: InboundTraceContext;
}


/** The inbound request's server span (tracing on only): its parent or link from the sender's headers. */
function inboundSpan<T extends { eventId: string; duplicate: boolean }>(
  headers: Record<string, string | string[] | undefined>,
  source: string,
  mode: InboundTraceContext,
  fn: () => Promise<T>,
): Promise<T> {
  const link = mode === 'link' ? linkTo(headers) : undefined;
  const where = mode === 'parent' ? { parent: contextOf(headers) } : { parent: ROOT_CONTEXT, ...(link ? { links: [link] } : {}) };
  const attributes = { 'http.request.method': 'POST', 'http.route': '/api/webhooks/{source}', 'webhook.source': source };
  return inSpan('POST /api/webhooks/{source}', { kind: SpanKind.SERVER, attributes, ...where }, async (span) => {
    const result = await fn();
    span?.setAttributes({ 'http.response.status_code': 200, 'webhook.event_id': result.eventId, 'webhook.duplicate': result.duplicate });
    return result;
  });
}

/** POST /api/webhooks/{source}: Basic auth per source, the raw body stored and published. */
export function inboundWebhooks(deps: InboundWebhooksDeps): FastifyPluginAsync {
  // credentials checked before the body: what the onRequest hook found, per request
  const authenticated = new WeakMap<IncomingMessage, InboundCredential>();

  return async (inbound) => {
    // the raw bytes of every content type, untouched, for byte-for-byte storage and signing
    inbound.removeAllContentTypeParsers();
    inbound.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    inbound.addHook('onRequest', async (req) => {
      const source = (req.params as { source?: string }).source ?? '';
      let credential;
      try {
        credential = await deps.verifier.verify(source, parseBasicAuth(req.headers.authorization));
      } catch (err) {
        if (isAppError(err) && err.kind === 'transient') throw transient('database_unavailable', 'credentials could not be checked; retry later', err);
        throw err;
      }
      if (!credential) {
        // the metric label of an unknown source is not the attacker's string
        deps.metrics.inboundRequests.inc({ source: 'unauthorized', outcome: 'unauthorized' });
        // the same answer for an unknown source, a wrong user and a wrong password
        throw new AuthRefused('unauthorized', 'missing or invalid credentials for this source', BASIC_CHALLENGE, true);
      }
      authenticated.set(req.raw, credential);
    });

    inbound.post<{ Params: { source: string } }>('/api/webhooks/:source', async (req, reply) => {
      const source = req.params.source;
      const label = VALID_SOURCE.test(source) ? source : 'invalid';
      const credential = authenticated.get(req.raw);
      // the hook let the request in: its credential is there
      if (!credential) throw internal('unauthenticated_request', 'an inbound request reached the route without a verified credential');
      try {
        const receive = () =>
          deps.receiveWebhook({
            credential,
            body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
            contentType: req.headers['content-type'] ?? null,
            headers: storedHeaders(req.headers),
          });
        const result = tracingOn() ? await inboundSpan(req.headers, label, deps.inboundTraceContext ?? 'parent', receive) : await receive();
        deps.metrics.inboundRequests.inc({ source: label, outcome: result.duplicate ? 'duplicate' : 'accepted' });
        return reply.code(200).send(result);
      } catch (err) {
        const outcome = isAppError(err) ? (err.kind === 'transient' ? 'unavailable' : 'invalid') : 'error';
        deps.metrics.inboundRequests.inc({ source: label, outcome });
        throw err;
      }
    });
  };
}
