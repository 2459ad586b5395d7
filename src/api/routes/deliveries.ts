import { permanent } from '../../domain/errors.js';
import { READ, REPLAY } from '../auth/permissions.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import {
  AttemptSchema,
  authErrors,
  BULK_REPLAY_LIMIT,
  BulkReplayBody,
  BulkReplayResultSchema,
  conflict,
  described,
  DeliveryListQuery,
  DeliveryReplaySchema,
  DeliverySchema,
  IdParams,
  listOf,
  notFound,
  PAGE_SIZE,
} from '../route-schemas.js';
import { attemptView, deliveryView } from '../views.js';
import { actorOf, dateOrUndefined, scopeOf, type AdminRouteDeps, type TypedApp } from './deps.js';
import { inReplayRequestSpan } from './replay-request-span.js';

const security = [{ bearerAuth: [] }];

export function registerDeliveryRoutes(app: TypedApp, deps: AdminRouteDeps): void {
  app.get(
    '/api/deliveries',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['deliveries'],
        summary: 'List deliveries, newest first',
        description:
          "Requires read:webhooks. Filters combine with AND; source and eventType are the event's; time filters apply to createdAt.",
        security,
        querystring: DeliveryListQuery,
        response: { 200: described(listOf(DeliverySchema), 'A page of deliveries'), ...authErrors },
      },
    },
    async (req) => {
      const q = req.query;
      const page = await deps.queries.listDeliveries(
        scopeOf(req),
        {
          status: q.status,
          source: q.source,
          endpointId: q.endpointId,
          eventId: q.eventId,
          eventType: q.eventType,
          from: dateOrUndefined(q.from),
          to: dateOrUndefined(q.to),
        },
        q.limit ?? PAGE_SIZE.default,
        decodeCursor(q.cursor),
      );
      return { items: page.items.map(deliveryView), nextCursor: encodeCursor(page.next) };
    },
  );

  app.get(
    '/api/deliveries/:id',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['deliveries'],
        summary: 'One delivery',
        description: 'Requires read:webhooks.',
        security,
        params: IdParams,
        response: { 200: described(DeliverySchema, 'The delivery'), ...authErrors, ...notFound },
      },
    },
    async (req) => {
      const row = await deps.queries.getDelivery(scopeOf(req), req.params.id);
      if (!row) throw permanent('not_found', `no delivery ${req.params.id}`);
      return deliveryView(row);
    },
  );

  app.get(
    '/api/deliveries/:id/attempts',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['deliveries'],
        summary: "A delivery's attempt log, in attempt order",
        description:
          'Requires read:webhooks. Every attempt, append-only: when it started, how long it took, the status and first 4 KiB ' +
          "the endpoint answered, the error, and its outcome (RETRYING when another attempt followed); when the endpoint's transform " +
          'made the body, the body sent (requestBody). Never a request header.',
        security,
        params: IdParams,
        response: { 200: described(listOf(AttemptSchema), 'The attempts (one page: nextCursor is null)'), ...authErrors, ...notFound },
      },
    },
    async (req) => {
      // both at once, each through the scope: a delivery it does not see has no attempts either
      const [row, attempts] = await Promise.all([
        deps.queries.getDelivery(scopeOf(req), req.params.id),
        deps.queries.attemptsOf(scopeOf(req), req.params.id),
      ]);
      if (!row) throw permanent('not_found', `no delivery ${req.params.id}`);
      return { items: attempts.map(attemptView), nextCursor: null };
    },
  );

  app.post(
    '/api/deliveries/:id/skip',
    {
      onRequest: deps.auth(REPLAY),
      schema: {
        tags: ['replay'],
        summary: 'Skip a FAILED ordered delivery that holds its key',
        description:
          'Requires replay:webhooks. For an endpoint with spec.ordering and onFailure Block (docs/ordering.md): the delivery stays ' +
          'FAILED and stops holding its key (ordering.skipped), and the next delivery of its key starts. A later replay of it is ' +
          'sent out of order, with the header X-Webhook-Out-Of-Order: true. 409 (code not_skippable) when it is not a FAILED ' +
          'ordered delivery that holds its key.',
        security,
        params: IdParams,
        response: {
          200: described(DeliverySchema, 'Skipped: the delivery as it is now'),
          ...authErrors,
          ...notFound,
          ...conflict('The delivery is not a FAILED ordered delivery that holds its key'),
        },
      },
    },
    async (req) => {
      await deps.replay.skipDelivery(scopeOf(req), req.params.id, actorOf(req));
      const row = await deps.queries.getDelivery(scopeOf(req), req.params.id);
      if (!row) throw permanent('not_found', `no delivery ${req.params.id}`);
      return deliveryView(row);
    },
  );

  app.post(
    '/api/deliveries/:id/replay',
    {
      onRequest: deps.auth(REPLAY),
      schema: {
        tags: ['replay'],
        summary: 'Replay a FAILED delivery',
        description:
          'Requires replay:webhooks. The delivery goes back to PENDING and is delivered again by a new workflow run ' +
          "(its own workflow id); the event's status is recomputed when it ends. 409 when the delivery is not FAILED, " +
          "or when retention dropped its event's payload (code payload_dropped: nothing left to send), or when its endpoint's " +
          'source does not allow the endpoint (code endpoint_not_allowed, until it is allowed again).',
        security,
        params: IdParams,
        response: {
          202: described(DeliveryReplaySchema, 'Reopened to PENDING; a replay run was started'),
          ...authErrors,
          ...notFound,
          ...conflict('The delivery is not FAILED, its payload was dropped by retention, or its endpoint is not allowed by its source'),
        },
      },
    },
    async (req, reply) => {
      const replay = await inReplayRequestSpan('/api/deliveries/{id}/replay', req.headers, () =>
        deps.replay.replayDelivery(scopeOf(req), req.params.id, actorOf(req)),
      );
      const row = await deps.queries.getDelivery(scopeOf(req), req.params.id);
      if (!row) throw permanent('not_found', `no delivery ${req.params.id}`);
      return reply.code(202).send({ delivery: deliveryView(row), replay });
    },
  );

  app.post(
    '/api/deliveries/replay',
    {
      onRequest: deps.auth(REPLAY),
      schema: {
        tags: ['replay'],
        summary: 'Replay FAILED deliveries matching filters (bulk, capped)',
        description:
          `Requires replay:webhooks. At most \`limit\` (default ${BULK_REPLAY_LIMIT.default}, max ${BULK_REPLAY_LIMIT.max}) ` +
          'matching FAILED deliveries, newest first, one replay run per event. `dryRun: true` only counts. ' +
          'Call again to continue while `matched` exceeds `replayed`. Deliveries of events whose payload retention ' +
          'dropped are not matched (nothing left to send), nor deliveries to endpoints their source does not allow; ' +
          '`endpointId` naming such an endpoint answers 409 endpoint_not_allowed (dry run too). A filter naming an endpoint or ' +
          'source the token does not see matches nothing.',
        security,
        body: BulkReplayBody,
        response: {
          200: described(BulkReplayResultSchema, 'Dry run: what would be replayed'),
          202: described(BulkReplayResultSchema, 'Reopened to PENDING; replay runs were started'),
          ...authErrors,
          ...conflict('endpointId names an endpoint its source does not allow (code endpoint_not_allowed)'),
        },
      },
    },
    async (req, reply) => {
      const b = req.body;
      const result = await inReplayRequestSpan('/api/deliveries/replay', req.headers, () =>
        deps.replay.replayMatching(
          scopeOf(req),
          { source: b.source, endpointId: b.endpointId, eventType: b.eventType, from: dateOrUndefined(b.from), to: dateOrUndefined(b.to) },
          b.limit ?? BULK_REPLAY_LIMIT.default,
          b.dryRun ?? false,
          actorOf(req),
        ),
      );
      return reply.code(result.dryRun ? 200 : 202).send(result);
    },
  );
}
