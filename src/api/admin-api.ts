import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import type { AdminQueries } from '../db/admin-queries.js';
import type { EndpointRepository } from '../db/endpoints.js';
import type { StatsQueries } from '../db/stats-queries.js';
import type { Logger } from '../observability/logger.js';
import { createBearerAuth } from './auth/bearer-auth.js';
import type { VerifyToken } from './auth/token-verifier.js';
import { openApiOptions } from './openapi.js';
import type { ReplayService } from './replay-service.js';
import { registerCallerRoutes } from './routes/caller.js';
import { registerConfigurationRoutes } from './routes/configuration.js';
import { registerDeliveryRoutes } from './routes/deliveries.js';
import { registerEventRoutes } from './routes/events.js';
import { registerStatsRoutes } from './routes/stats.js';
import { strictValidatorCompiler } from './validation.js';

export interface AdminApiDeps {
  verifyToken: VerifyToken;
  queries: AdminQueries;
  endpoints: Pick<EndpointRepository, 'enable'>;
  replay: ReplayService;
  stats: StatsQueries;
  logger: Logger;
  /** shown in the OpenAPI description: where to get a token */
  authUrl?: string;
  audience?: string;
}

/**
 * The admin API as a fastify plugin, registered beside the inbound route by the one app builder
 * (ingest/app.ts): OpenAPI at /api/openapi.json, docs at /api/docs, and the JWT-protected routes.
 */
export function adminApi(deps: AdminApiDeps): FastifyPluginAsync {
  return async (app) => {
    // before the routes, so that it sees every route registered after it in this plugin; the
    // inbound route is a sibling plugin and described by hand (openapi.ts)
    await app.register(swagger, openApiOptions({ authUrl: deps.authUrl, audience: deps.audience }));
    await app.register(swaggerUi, { routePrefix: '/api/docs' });
    app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());

    await app.register(async (scope) => {
      // TypeBox validation: an unknown query parameter is a 400, not silently dropped (a typo in a
      // filter would otherwise list everything); strict: nothing is coerced (see validation.ts)
      scope.setValidatorCompiler(strictValidatorCompiler);
      scope.decorateRequest('principal', null);
      const api = scope.withTypeProvider<TypeBoxTypeProvider>();
      const routeDeps = {
        auth: createBearerAuth({ verifyToken: deps.verifyToken, logger: deps.logger }),
        queries: deps.queries,
        endpoints: deps.endpoints,
        replay: deps.replay,
        stats: deps.stats,
      };
      registerEventRoutes(api, routeDeps);
      registerDeliveryRoutes(api, routeDeps);
      registerConfigurationRoutes(api, routeDeps);
      registerStatsRoutes(api, routeDeps);
      registerCallerRoutes(api, routeDeps);
    });
  };
}
