import type { FastifyPluginAsync } from 'fastify';
import type { AdminApiConfig } from '../config/config.js';
import { createAdminQueries } from '../db/admin-queries.js';
import type { Db } from '../db/knex.js';
import { createReplayQueries } from '../db/replay-queries.js';
import { createStatsQueries } from '../db/stats-queries.js';
import type { Repositories } from '../db/repositories.js';
import type { Logger } from '../observability/logger.js';
import { adminApi } from './admin-api.js';
import { createKeyResolver } from './auth/key-resolver.js';
import { createTokenVerifier } from './auth/token-verifier.js';
import { createReplayService } from './replay-service.js';
import { bindSignalTurn, bindStartReplay, type TemporalClientSource } from './start-replay.js';

/** What the admin API needs beyond the ingest process's own parts: its configuration and Temporal. */
export interface AdminApiWiring {
  auth: AdminApiConfig;
  /** replays start workflow runs on this client and task queue (asked for on the first replay) */
  temporal: { client: TemporalClientSource; taskQueue: string };
}

/** The admin API plugin wired from configuration: token verification, replays, queries. */
export function adminApiFromConfig(
  deps: AdminApiWiring & {
    db: Db;
    repos: Pick<Repositories, 'events' | 'endpoints' | 'ordering' | 'bulkReplays' | 'operationalEvents'>;
    logger: Logger;
  },
): FastifyPluginAsync {
  const verifyToken = createTokenVerifier({
    keys: createKeyResolver({ authUrl: deps.auth.authUrl, cacheTtlMs: deps.auth.jwksCacheTtlSeconds * 1000 }),
    issuer: deps.auth.issuer,
    audience: deps.auth.audience,
    clockToleranceMs: deps.auth.clockToleranceSeconds * 1000,
    namespacesClaim: deps.auth.namespacesClaim,
  });
  const replay = createReplayService({
    events: deps.repos.events,
    replays: createReplayQueries(deps.db),
    startReplay: bindStartReplay(deps.temporal.client, deps.temporal.taskQueue),
    ordering: deps.repos.ordering,
    signalTurn: bindSignalTurn(deps.temporal.client, deps.temporal.taskQueue),
    logger: deps.logger,
    bulkReplays: deps.repos.bulkReplays,
  });
  return adminApi({
    verifyToken,
    queries: createAdminQueries(deps.db, { source: deps.repos.operationalEvents.source }),
    endpoints: deps.repos.endpoints,
    replay,
    stats: createStatsQueries(deps.db),
    logger: deps.logger,
    authUrl: deps.auth.authUrl,
    audience: deps.auth.audience,
  });
}
