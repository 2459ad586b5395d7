import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import { installProblemHandlers, problem, rawProblemResponse, sendProblem, type Problem } from '../http/problem.js';
import { DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from '../config/settings.js';
import { lazyRequestLogger } from '../http/request-logger.js';
import type { Logger } from '../observability/logger.js';
import { createClientAddressResolver, type ResolveClientAddress } from './client-address.js';
import { inboundWebhooks, type InboundWebhooksDeps } from './inbound-route.js';

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
    if ((counts.get(name) ?? 0) > 1) return problem('duplicate_header', `the ${name} header is given more than once`);
  }
  if (req.httpVersion === '1.1' && !counts.has('host')) return problem('missing_host', 'an HTTP/1.1 request must have a Host header');
  return undefined;
}

/** Errors Node's HTTP parser raises before fastify sees a request, as problem+json. */
function clientErrorProblem(err: Error & { code?: string }): Problem {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return problem('headers_too_large', 'the request line and headers exceed the size limit');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return problem('request_timeout', 'the request was not received in time');
    case 'HPE_URI_TOO_LONG':
      return problem('uri_too_long', 'the request target is too long');
    default:
      return problem('malformed_request', 'the request is not valid HTTP/1.1');
  }
}

export interface IngestAppDeps extends InboundWebhooksDeps {
  /** the admin API plugin (api/admin-api.ts); absent when ADMIN_API_ENABLED=false */
  adminApi?: FastifyPluginAsync | undefined;
  /** the web console under /console/ (console-server/console-plugin.ts); absent when CONSOLE_ENABLED=false */
  console?: FastifyPluginAsync | undefined;
  timeouts?: HttpTimeouts;
  logger: Logger;
  bodyLimitBytes: number;
  /** who the client of a request is (INGEST_TRUSTED_PROXIES); default: the TCP peer */
  resolveClientAddress?: ResolveClientAddress;
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The client's address: the TCP peer, or, from a trusted proxy, the one its forwarding headers
     * name (ingest/client-address.ts). What refusal limits count and logs name; `ip` stays the peer.
     */
    clientAddress: string;
  }
}

/**
 * The one app builder of the public HTTP server: the limits, timeouts and problem+json answers
 * of the server, then the features as sibling plugins. Built without listening, so tests drive
 * it with inject() or a real socket.
 */
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
    // and the request's own logger is made only when it logs
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: deps.bodyLimitBytes,
    routerOptions: { maxParamLength: 200 },
    // ids for log correlation; never trust a caller-supplied one blindly
    genReqId: () => crypto.randomUUID(),
    return503OnClosing: true,
    // bad URLs and over-long path parameters answer problem+json like every other error
    frameworkErrors: (err, _req, reply) => {
      return sendProblem(reply, problem(err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'uri_too_long' : 'bad_url', err.message));
    },
  });
  installProblemHandlers(app, deps.logger);
  // Expect other than 100-continue: Node would answer 417 with no body
  app.server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    const body = JSON.stringify(problem('expectation_failed', 'only Expect: 100-continue is supported'));
    res
      .writeHead(417, { 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(body), connection: 'close' })
      .end(body);
  });
  const resolveClientAddress = deps.resolveClientAddress ?? createClientAddressResolver([]);
  app.decorateRequest('clientAddress', '');
  app.addHook('onRequest', async (req, reply) => {
    const client = resolveClientAddress(req.socket.remoteAddress, req.headers);
    req.clientAddress = client.address;
    deps.metrics.clientAddresses.inc({ from: client.from });
    // a trusted proxy's header that could not be read: the proxy's own address is counted instead
    if (client.from === 'malformed' || client.from === 'conflicting')
      deps.logger.debug({ address: client.address, from: client.from }, 'forwarding headers not used');
    const p = headerProblem(req.raw);
    if (p) return sendProblem(reply, p, { connection: 'close' });
    return undefined;
  });
  // the features, as sibling plugins: the inbound route and, when enabled, the admin API and the console
  await app.register(
    inboundWebhooks({
      receiveWebhook: deps.receiveWebhook,
      verifier: deps.verifier,
      metrics: deps.metrics,
      ...(deps.inboundTraceContext ? { inboundTraceContext: deps.inboundTraceContext } : {}),
      logger: deps.logger,
      ...(deps.refusalFloorMs === undefined ? {} : { refusalFloorMs: deps.refusalFloorMs }),
      ...(deps.now === undefined ? {} : { now: deps.now }),
    }),
  );
  if (deps.adminApi) await app.register(deps.adminApi);
  if (deps.console) await app.register(deps.console);
  return app;
}
