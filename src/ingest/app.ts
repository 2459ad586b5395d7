import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { isAppError } from '../domain/errors.js';
import { installProblemHandlers, problem, sendProblem } from '../http/problem.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { SOURCE_PATTERN } from '../resources/schema.js';
import { parseBasicAuth } from './basic-auth.js';
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

export interface IngestAppDeps {
  receiveWebhook: ReceiveWebhook;
  metrics: Metrics;
  logger: Logger;
  bodyLimitBytes: number;
  /** extra routes (the admin API) registered on the same server */
  register?: (app: FastifyInstance) => Promise<void> | void;
}

/** The public HTTP app, built without listening so tests drive it with inject() or a real socket. */
export async function buildIngestApp(deps: IngestAppDeps): Promise<FastifyInstance> {
  const app = Fastify({
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

  await app.register(async (inbound) => {
    // the raw bytes of every content type, untouched, for byte-for-byte storage and signing
    inbound.removeAllContentTypeParsers();
    inbound.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    inbound.post<{ Params: { source: string } }>('/api/webhooks/:source', async (req, reply) => {
      const source = req.params.source;
      const label = VALID_SOURCE.test(source) ? source : 'invalid';
      try {
        const result = await deps.receiveWebhook({
          source,
          credentials: parseBasicAuth(req.headers.authorization),
          body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
          contentType: req.headers['content-type'] ?? null,
          headers: storedHeaders(req.headers),
        });
        deps.metrics.inboundRequests.inc({ source: label, outcome: result.duplicate ? 'duplicate' : 'accepted' });
        return reply.code(200).send(result);
      } catch (err) {
        if (err instanceof Unauthorized) {
          // the metric label of an unknown source is not the attacker's string
          deps.metrics.inboundRequests.inc({ source: 'unauthorized', outcome: 'unauthorized' });
          return sendProblem(reply, problem(401, 'unauthorized', err.message), {
            'www-authenticate': 'Basic realm="webhooks", charset="UTF-8"',
          });
        }
        const outcome = isAppError(err) ? (err.kind === 'transient' ? 'unavailable' : 'invalid') : 'error';
        deps.metrics.inboundRequests.inc({ source: label, outcome });
        throw err;
      }
    });
  });

  await deps.register?.(app);
  return app;
}
