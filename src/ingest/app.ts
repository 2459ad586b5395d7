import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { isAppError, transient } from '../domain/errors.js';
import type { InboundCredential } from '../domain/records.js';
import { installProblemHandlers, problem, rawProblemResponse, sendProblem, type Problem } from '../http/problem.js';
import { DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from '../http/timeouts.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
export type { HttpTimeouts } from '../http/timeouts.js';
import { SOURCE_PATTERN } from '../resources/schema.js';
import { parseBasicAuth } from './basic-auth.js';
import type { CredentialVerifier } from './credential-verifier.js';
import { Unauthorized, type ReceiveWebhook } from './receive-webhook.js';

const VALID_SOURCE = new RegExp(SOURCE_PATTERN);

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

// headers a request may carry at most once: a second Host is request smuggling material (RFC 9112
// 3.2 asks for 400) and a second Authorization would be silently dropped by Node (the first wins)
const SINGLE_HEADERS = ['host', 'authorization'] as const;

function headerProblem(req: IncomingMessage): Problem | undefined {
  const counts = new Map<string, number>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]?.toLowerCase() ?? '';
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  for (const name of SINGLE_HEADERS) {
    if ((counts.get(name) ?? 0) > 1) return problem(400, 'duplicate_header', `the ${name} header is given more than once`);
  }
  if (req.httpVersion === '1.1' && !counts.has('host')) return problem(400, 'missing_host', 'an HTTP/1.1 request must have a Host header');
  return undefined;
}

/** Errors Node's HTTP parser raises before fastify sees a request, as problem+json. */
function clientErrorProblem(err: Error & { code?: string }): Problem {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return problem(431, 'headers_too_large', 'the request line and headers exceed the size limit');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return problem(408, 'request_timeout', 'the request was not received in time');
    case 'HPE_URI_TOO_LONG':
      return problem(414, 'uri_too_long', 'the request target is too long');
    default:
      return problem(400, 'malformed_request', 'the request is not valid HTTP/1.1');
  }
}

export interface IngestAppDeps {
  receiveWebhook: ReceiveWebhook;
  /**
   * When given, inbound credentials are checked as soon as the headers are in, before the body
   * is read: an unauthenticated sender gets its 401 without being able to stream a body first.
   */
  verifier?: CredentialVerifier;
  timeouts?: HttpTimeouts;
  metrics: Metrics;
  logger: Logger;
  bodyLimitBytes: number;
  /** extra routes (the admin API) registered on the same server */
  register?: (app: FastifyInstance) => Promise<void> | void;
}

/** The public HTTP app, built without listening so tests drive it with inject() or a real socket. */
export async function buildIngestApp(deps: IngestAppDeps): Promise<FastifyInstance> {
  const timeouts = deps.timeouts ?? DEFAULT_HTTP_TIMEOUTS;
  const app = Fastify({
    http: {
      headersTimeout: timeouts.headersMs,
      // Node checks those deadlines on this interval (30 s by default, far coarser than the limits)
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(Math.min(timeouts.headersMs, timeouts.bodyMs) / 4))),
      // a missing Host is answered by the onRequest hook below, as problem+json (Node's answer has no body)
      requireHostHeader: false,
    },
    requestTimeout: timeouts.bodyMs,
    keepAliveTimeout: timeouts.idleMs,
    connectionTimeout: timeouts.idleMs,
    // parse errors, oversized headers and timeouts, raised below fastify: problem+json too
    clientErrorHandler: (err: Error & { code?: string }, socket: Duplex) => {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      deps.logger.debug({ code: err.code }, 'client error');
      const pending = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      // a response already under way can not be replaced by another one
      if (socket.writable && !pending?.headersSent) socket.end(rawProblemResponse(clientErrorProblem(err)));
      else socket.destroy();
    },
    loggerInstance: deps.logger as FastifyBaseLogger,
    // one log line per request would dominate the cost of ingest; metrics count them instead
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.bodyLimitBytes,
    routerOptions: { maxParamLength: 200 },
    // ids for log correlation; never trust a caller-supplied one blindly
    genReqId: () => crypto.randomUUID(),
    return503OnClosing: true,
    // bad URLs and over-long path parameters answer problem+json like every other error
    frameworkErrors: (err, _req, reply) => {
      const status = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400;
      return sendProblem(reply, problem(status, status === 414 ? 'uri_too_long' : 'bad_url', err.message));
    },
  });
  installProblemHandlers(app, deps.logger);
  // Expect other than 100-continue: Node would answer 417 with no body
  app.server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.stringify(problem(417, 'expectation_failed', 'only Expect: 100-continue is supported'));
    res
      .writeHead(417, { 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(body), connection: 'close' })
      .end(body);
  });
  app.addHook('onRequest', async (req, reply) => {
    const p = headerProblem(req.raw);
    if (p) return sendProblem(reply, p, { connection: 'close' });
    return undefined;
  });
  // credentials checked before the body: what the onRequest hook found, per request
  const authenticated = new WeakMap<IncomingMessage, InboundCredential>();
  const unauthorized = (reply: Parameters<typeof sendProblem>[0], message: string, close: boolean) => {
    // the metric label of an unknown source is not the attacker's string
    deps.metrics.inboundRequests.inc({ source: 'unauthorized', outcome: 'unauthorized' });
    return sendProblem(reply, problem(401, 'unauthorized', message), {
      'www-authenticate': 'Basic realm="webhooks", charset="UTF-8"',
      // the body was not read: closing is cheaper than reading it to keep the connection
      ...(close ? { connection: 'close' } : {}),
    });
  };

  await app.register(async (inbound) => {
    // the raw bytes of every content type, untouched, for byte-for-byte storage and signing
    inbound.removeAllContentTypeParsers();
    inbound.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    const verifier = deps.verifier;
    if (verifier) {
      inbound.addHook('onRequest', async (req, reply) => {
        const source = (req.params as { source?: string }).source ?? '';
        let credential;
        try {
          credential = await verifier.verify(source, parseBasicAuth(req.headers.authorization));
        } catch (err) {
          throw transient('database_unavailable', 'credentials could not be checked; retry later', err);
        }
        if (!credential) return unauthorized(reply, new Unauthorized().message, true);
        authenticated.set(req.raw, credential);
        return undefined;
      });
    }

    inbound.post<{ Params: { source: string } }>('/api/webhooks/:source', async (req, reply) => {
      const source = req.params.source;
      const label = VALID_SOURCE.test(source) ? source : 'invalid';
      try {
        const result = await deps.receiveWebhook({
          source,
          credentials: parseBasicAuth(req.headers.authorization),
          credential: authenticated.get(req.raw),
          body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
          contentType: req.headers['content-type'] ?? null,
          headers: storedHeaders(req.headers),
        });
        deps.metrics.inboundRequests.inc({ source: label, outcome: result.duplicate ? 'duplicate' : 'accepted' });
        return reply.code(200).send(result);
      } catch (err) {
        if (err instanceof Unauthorized) return unauthorized(reply, err.message, false);
        const outcome = isAppError(err) ? (err.kind === 'transient' ? 'unavailable' : 'invalid') : 'error';
        deps.metrics.inboundRequests.inc({ source: label, outcome });
        throw err;
      }
    });
  });

  await deps.register?.(app);
  return app;
}
