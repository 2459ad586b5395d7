import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { AdminApiConfig, ConsoleConfig } from '../config/config.js';
import type { ConsoleAuthFlow } from '../config/settings.js';
import { problem, sendProblem } from '../http/problem.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { parseCspReport } from './csp-report.js';
import { CONSOLE_CALLBACK_PATH, CONSOLE_PREFIX, CONSOLE_SCOPE } from './paths.js';
import { cacheControlFor, consoleSecurityHeaders, CSP_REPORT_PATH, isAppRoute, REVALIDATE } from './security-headers.js';

/** `npm run build` writes the console here (Vite, from src/console/); the same path from src/ and dist/ */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../dist/console/', import.meta.url));

/** GET /console/config.json: what the single-page app needs at run time (docs/console.md). */
export interface ConsoleRuntimeConfig {
  authUrl: string;
  audience: string;
  clientId: string;
  flow: ConsoleAuthFlow;
  /** prefix of the OpenAPI document's paths (which start with /api/); empty: this origin */
  apiBase: string;
  scope: string;
  callbackPath: string;
}

export interface ConsoleDeps {
  config: ConsoleConfig;
  auth: Pick<AdminApiConfig, 'authUrl' | 'audience'>;
  /** the built console (index.html and assets/); default DEFAULT_CONSOLE_DIR */
  dir?: string;
  metrics: Pick<Metrics, 'consoleCspViolations'>;
  logger: Logger;
}

const CSP_REPORT_BODY_LIMIT = 16 * 1024;
// violations are all counted, but a page in a loop (or a caller) must not flood the log
const CSP_LOG_PER_MINUTE = 20;

export function consoleRuntimeConfig(deps: Pick<ConsoleDeps, 'config' | 'auth'>): ConsoleRuntimeConfig {
  return {
    authUrl: deps.auth.authUrl,
    audience: deps.auth.audience,
    clientId: deps.config.clientId,
    flow: deps.config.authFlow,
    apiBase: '',
    scope: CONSOLE_SCOPE,
    callbackPath: CONSOLE_CALLBACK_PATH,
  };
}

/**
 * The web console on the public port, under /console/: its built files (hashed assets cached for
 * a year, index.html revalidated), index.html for every page of the app so that each has a URL,
 * its runtime configuration as a file (no inline script anywhere), and the endpoint its
 * Content-Security-Policy reports to. Every answer under the prefix carries the security headers.
 */
export function consolePlugin(deps: ConsoleDeps): FastifyPluginAsync {
  const dir = deps.dir ?? DEFAULT_CONSOLE_DIR;
  const headers = consoleSecurityHeaders(deps.auth.authUrl);
  const runtimeConfig = JSON.stringify(consoleRuntimeConfig(deps));
  let logged = { minute: 0, count: 0 };

  return async (app) => {
    const built = existsSync(path.join(dir, 'index.html'));
    if (!built) deps.logger.warn({ dir }, 'console enabled but not built: its pages answer 503 until `npm run build` writes them');

    await app.register(
      async (scope) => {
        scope.addHook('onRequest', async (_req, reply) => {
          reply.headers(headers);
        });

        const sendIndex = (reply: FastifyReply) =>
          reply.header('cache-control', REVALIDATE).sendFile('index.html', { cacheControl: false });

        scope.get('/', { schema: { hide: true } }, async (req, reply) => {
          // the app's links are under /console/; /console alone is sent there
          if ((req.url.split('?')[0] ?? '') === CONSOLE_PREFIX) return reply.redirect(`${CONSOLE_PREFIX}/`, 302);
          if (!built) return notBuilt(reply);
          return sendIndex(reply);
        });

        scope.get('/config.json', { schema: { hide: true } }, async (_req, reply) =>
          reply.header('cache-control', 'no-store').type('application/json').send(runtimeConfig),
        );

        // legacy report-uri bodies and the Reporting API's; anything else is JSON or refused (415)
        const parseJson = (_req: unknown, body: string, done: (err: Error | null, value?: unknown) => void) => {
          try {
            done(null, JSON.parse(body));
          } catch {
            done(Object.assign(new Error('the report is not JSON'), { statusCode: 400 }));
          }
        };
        scope.addContentTypeParser(['application/csp-report', 'application/reports+json'], { parseAs: 'string' }, parseJson);
        scope.post(
          CSP_REPORT_PATH.slice(CONSOLE_PREFIX.length),
          { bodyLimit: CSP_REPORT_BODY_LIMIT, schema: { hide: true } },
          async (req, reply) => {
            const violations = parseCspReport(req.body);
            const minute = Math.floor(Date.now() / 60_000);
            if (logged.minute !== minute) logged = { minute, count: 0 };
            for (const v of violations) {
              deps.metrics.consoleCspViolations.inc({ directive: v.directive });
              if (logged.count++ < CSP_LOG_PER_MINUTE) deps.logger.warn({ csp: v }, 'console: Content-Security-Policy violation reported');
            }
            return reply.code(204).send();
          },
        );

        if (built) {
          await scope.register(fastifyStatic, {
            root: dir,
            prefix: '/',
            // index.html only through sendIndex (its own cache policy); no listing, no dotfiles
            index: false,
            dotfiles: 'deny',
            cacheControl: false,
            setHeaders: (reply, file) => {
              reply.header('cache-control', cacheControlFor(path.relative(dir, file).split(path.sep).join('/')));
            },
          });
        }

        // a page of the app (no file extension) is index.html: every page has a URL of its own
        scope.setNotFoundHandler(async (req, reply) => {
          const pathname = req.url.split('?')[0] ?? '';
          const under = pathname.startsWith(`${CONSOLE_PREFIX}/`) ? pathname.slice(CONSOLE_PREFIX.length + 1) : undefined;
          if ((req.method === 'GET' || req.method === 'HEAD') && under !== undefined && isAppRoute(under)) {
            return built ? sendIndex(reply) : notBuilt(reply);
          }
          return sendProblem(reply, problem('not_found', `no route for ${req.method} ${pathname}`.slice(0, 200)));
        });
      },
      { prefix: CONSOLE_PREFIX },
    );
  };
}

function notBuilt(reply: FastifyReply): FastifyReply {
  return sendProblem(reply, problem('console_not_built', 'the console is enabled but its files were not built (npm run build)'));
}
