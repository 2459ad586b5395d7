import type { FastifyInstance, FastifyBaseLogger, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AdminQueries } from '../../db/admin-queries.js';
import type { EndpointRepository } from '../../db/endpoints.js';
import type { EventRepository } from '../../db/events.js';
import type { StatsQueries } from '../../db/stats-queries.js';
import type { BearerAuth } from '../auth/bearer-auth.js';
import type { ReplayService } from '../replay-service.js';

export interface AdminRouteDeps {
  auth: BearerAuth;
  queries: AdminQueries;
  events: Pick<EventRepository, 'get'>;
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

/** The caller named in replay logs. */
export const actorOf = (req: { principal: { subject: string } | null }): string => req.principal?.subject ?? 'unknown';

export const dateOrUndefined = (v: string | undefined): Date | undefined => (v === undefined ? undefined : new Date(v));
