import { READ, REPLAY } from '../auth/permissions.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { permanent } from '../../domain/errors.js';
import {
  authErrors,
  conflict,
  described,
  EventDetailSchema,
  EventListQuery,
  EventSummarySchema,
  IdParams,
  listOf,
  notFound,
  PAGE_SIZE,
  ReplayStartedSchema,
  WITHOUT_DELIVERY_LIMIT,
} from '../route-schemas.js';
import { eventDetailView, eventSummaryView } from '../views.js';
import { actorOf, dateOrUndefined, scopeOf, type AdminRouteDeps, type TypedApp } from './deps.js';
import { inReplayRequestSpan } from './replay-request-span.js';

const security = [{ bearerAuth: [] }];

export function registerEventRoutes(app: TypedApp, deps: AdminRouteDeps): void {
  app.get(
    '/api/events',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['events'],
        summary: 'List received events, newest first',
        description:
          'Requires read:webhooks. Filters combine with AND; time filters apply to receivedAt. `externalId` (with `source`) finds the event a sender knows by its own id.',
        security,
        querystring: EventListQuery,
        response: { 200: described(listOf(EventSummarySchema), 'A page of events (without payloads)'), ...authErrors },
      },
    },
    async (req) => {
      const q = req.query;
      // without the source no index leads with the external id: refused rather than a scan
      if (q.externalId !== undefined && q.source === undefined) {
        throw permanent('invalid_request', 'querystring/externalId needs querystring/source (an external id is unique per source)');
      }
      const page = await deps.queries.listEvents(
        scopeOf(req),
        {
          source: q.source,
          status: q.status,
          type: q.type,
          externalId: q.externalId,
          from: dateOrUndefined(q.from),
          to: dateOrUndefined(q.to),
        },
        q.limit ?? PAGE_SIZE.default,
        decodeCursor(q.cursor),
      );
      return { items: page.items.map(eventSummaryView), nextCursor: encodeCursor(page.next) };
    },
  );

  app.get(
    '/api/events/:id',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['events'],
        summary: 'One event with its payload and deliveries',
        description:
          "Requires read:webhooks. `endpointsWithoutDelivery` lists the endpoints of the event's source and type that got no delivery " +
          'of it and why, as far as is known (FILTER_NOT_MATCHED: their filter did not match; docs/content-routing.md). A tenant sees ' +
          'its own endpoints only, in both lists.',
        security,
        params: IdParams,
        response: { 200: described(EventDetailSchema, 'The event, its payload and its deliveries'), ...authErrors, ...notFound },
      },
    },
    async (req) => {
      const scope = scopeOf(req);
      const event = await deps.queries.getEvent(scope, req.params.id);
      if (!event) throw permanent('not_found', `no event ${req.params.id}`);
      const [deliveries, without] = await Promise.all([
        deps.queries.deliveriesOfEvent(scope, event.id),
        deps.queries.endpointsWithoutDelivery(scope, event, WITHOUT_DELIVERY_LIMIT),
      ]);
      return eventDetailView(event, deliveries, without);
    },
  );

  app.post(
    '/api/events/:id/replay',
    {
      onRequest: deps.auth(REPLAY),
      schema: {
        tags: ['replay'],
        summary: "Replay the event's FAILED deliveries",
        description:
          'Requires replay:webhooks. Every FAILED delivery of the event goes back to PENDING and is delivered again by a new ' +
          "workflow run; the event's status is recomputed when it ends. 409 when the event has no FAILED delivery, " +
          'or when retention dropped its payload (code payload_dropped: nothing left to send), or when every FAILED delivery ' +
          'goes to an endpoint its source does not allow (code endpoint_not_allowed; with some allowed, those are replayed and ' +
          'the others stay FAILED). A tenant replays the deliveries to its own endpoints only.',
        security,
        params: IdParams,
        response: {
          202: described(ReplayStartedSchema, 'Reopened to PENDING; a replay run was started'),
          ...authErrors,
          ...notFound,
          ...conflict(
            'The event has no FAILED delivery, its payload was dropped by retention, or its endpoints are not allowed by the source',
          ),
        },
      },
    },
    async (req, reply) => {
      const started = await inReplayRequestSpan('/api/events/{id}/replay', req.headers, () =>
        deps.replay.replayEvent(scopeOf(req), req.params.id, actorOf(req)),
      );
      return reply.code(202).send(started);
    },
  );
}
