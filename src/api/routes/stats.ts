import { permanent } from '../../domain/errors.js';
import { READ } from '../auth/permissions.js';
import { AttentionSchema, authErrors, described, STATS_LIMITS, TimeseriesQuery, TimeseriesSchema } from '../route-schemas.js';
import { planStatsRange } from '../stats-range.js';
import { attentionView, timeseriesView } from '../stats-view.js';
import { scopeOf, type AdminRouteDeps, type TypedApp } from './deps.js';

const security = [{ bearerAuth: [] }];

/** Read-only aggregates for the console's overview: charts over time, and what needs a person now. */
export function registerStatsRoutes(app: TypedApp, deps: AdminRouteDeps): void {
  app.get(
    '/api/stats/timeseries',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['stats'],
        summary: 'Events, delivery outcomes, failure rate and latency per endpoint, per time bucket',
        description:
          `Requires read:webhooks. Over what the token sees (a tenant: its namespaces' endpoints and the events it sees). The range is rounded out to whole buckets (multiples of the width since the epoch); at most ` +
          `${STATS_LIMITS.maxRangeDays} days and ${STATS_LIMITS.maxBuckets} buckets, else 400. Every series has one value per bucket. ` +
          'Answered from indexes (migration 057), not from the rows.',
        security,
        querystring: TimeseriesQuery,
        response: { 200: described(TimeseriesSchema, 'One value per bucket of each series'), ...authErrors },
      },
    },
    async (req) => {
      const range = planStatsRange(req.query, Date.now());
      if (typeof range === 'string') throw permanent('invalid_request', range);
      const window = { from: new Date(range.fromMs), to: new Date(range.toMs), bucketSeconds: range.bucketSeconds };
      const scope = scopeOf(req);
      const [events, deliveries] = await Promise.all([
        deps.stats.eventsPerSource(window, scope),
        deps.stats.deliveriesPerEndpoint(window, scope),
      ]);
      const endpoints = await deps.stats.endpointNames([...new Set(deliveries.map((d) => d.endpoint_id))], scope);
      return timeseriesView(range, { events, deliveries, endpoints });
    },
  );

  app.get(
    '/api/stats/attention',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['stats'],
        summary: 'What needs a person now: FAILED and held deliveries, stale PENDING ones, disabled and paused endpoints',
        description:
          'Requires read:webhooks. Counts over everything the token sees (a tenant: its namespaces), at the time of the request.',
        security,
        response: { 200: described(AttentionSchema, 'The counts'), ...authErrors },
      },
    },
    async (req) => attentionView(await deps.stats.attention(scopeOf(req))),
  );
}
