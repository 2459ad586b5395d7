import type { FastifyInstance, FastifyBaseLogger, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AdminQueries } from '../../db/admin-queries.js';
import type { EndpointRepository } from '../../db/endpoints.js';
import type { StatsQueries } from '../../db/stats-queries.js';
import type { TenantScope } from '../../db/tenant-scope.js';
import type { BearerAuth } from '../auth/bearer-auth.js';
import type { ReplayService } from '../replay-service.js';

export interface AdminRouteDeps {
  auth: BearerAuth;
  queries: AdminQueries;
  endpoints: Pick<EndpointRepository, 'enable'>;
  replay: ReplayService;
  stats: StatsQueries;
}

export type TypedApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/**
 * What the caller may see, from its verified token (db/tenant-scope.ts): every route hands it to
 * the queries. Only reached after the route's auth hook set the principal; without one (a route
 * wired without auth, a bug) it sees nothing rather than everything.
 */
export const scopeOf = (req: { principal: { scope: TenantScope } | null }): TenantScope =>
  req.principal === null ? NO_NAMESPACE : req.principal.scope;

const NO_NAMESPACE: TenantScope = { namespaces: [] };

/** The caller named in replay logs. */
export const actorOf = (req: { principal: { subject: string } | null }): string => req.principal?.subject ?? 'unknown';

export const dateOrUndefined = (v: string | undefined): Date | undefined => (v === undefined ? undefined : new Date(v));
