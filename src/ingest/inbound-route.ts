import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsync } from 'fastify';
import { internal, isAppError, transient } from '../domain/errors.js';
import { AuthRefused } from '../http/challenge.js';
import type { Metrics } from '../metrics/metrics.js';
import { SOURCE_PATTERN, type InboundCredential } from '../domain/records.js';
import { parseBasicAuth } from './basic-auth.js';
import type { CredentialVerifier } from './credential-verifier.js';
import type { ReceiveWebhook } from './receive-webhook.js';

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
        const result = await deps.receiveWebhook({
          credential,
          body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
          contentType: req.headers['content-type'] ?? null,
          headers: storedHeaders(req.headers),
        });
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
