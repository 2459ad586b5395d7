import { permanent } from '../../domain/errors.js';
import { READ, REPLAY } from '../auth/permissions.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import {
  authErrors,
  conflict,
  CredentialListQuery,
  described,
  CredentialSchema,
  EndpointEnabledSchema,
  EndpointListQuery,
  EndpointSchema,
  IdParams,
  listOf,
  notFound,
  PAGE_SIZE,
} from '../route-schemas.js';
import { notAllowed } from '../replay-service.js';
import { credentialView, endpointView } from '../views.js';
import { actorOf, scopeOf, type AdminRouteDeps, type TypedApp } from './deps.js';

const security = [{ bearerAuth: [] }];

/** Read-only views of what the operator (or dev mode's manifests) reconciled into Postgres. */
export function registerConfigurationRoutes(app: TypedApp, deps: AdminRouteDeps): void {
  app.get(
    '/api/endpoints',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['configuration'],
        summary: 'Downstream endpoints as reconciled, newest first',
        description: 'Requires read:webhooks. Secrets are never shown: only the auth type, the BASIC username and whether a secret is set.',
        security,
        querystring: EndpointListQuery,
        response: { 200: described(listOf(EndpointSchema), 'A page of endpoints'), ...authErrors },
      },
    },
    async (req) => {
      const q = req.query;
      const page = await deps.queries.listEndpoints(
        scopeOf(req),
        { source: q.source, active: q.active, state: q.state },
        q.limit ?? PAGE_SIZE.default,
        decodeCursor(q.cursor),
      );
      return { items: page.items.map(endpointView), nextCursor: encodeCursor(page.next) };
    },
  );

  app.post(
    '/api/endpoints/:id/enable',
    {
      onRequest: deps.auth(REPLAY),
      schema: {
        tags: ['configuration'],
        summary: 'Enable an endpoint disabled by auto-disable; its held deliveries are redriven',
        description:
          'Requires replay:webhooks. The endpoint is ACTIVE again with its failure count at 0. Every delivery that ' +
          'FAILED with "endpoint disabled" is then replayed once, oldest first, like any delivery (heldDeliveries counts ' +
          'those not yet handed to a replay run). Idempotent: enabling an ACTIVE endpoint changes nothing (wasDisabled false). ' +
          "409 endpoint_not_allowed while its source's credential does not allow it (deniedReason set).",
        security,
        params: IdParams,
        response: {
          200: described(EndpointEnabledSchema, 'The endpoint, ACTIVE'),
          ...authErrors,
          ...notFound,
          ...conflict("The endpoint's source does not allow it (code endpoint_not_allowed; the detail says why)"),
        },
      },
    },
    async (req) => {
      const scope = scopeOf(req);
      const seen = await deps.queries.getEndpoint(scope, req.params.id);
      if (!seen) throw permanent('not_found', `no endpoint ${req.params.id}`);
      // its held deliveries would be redriven to an endpoint its source does not allow
      if (seen.denied_reason !== null) throw notAllowed([{ ...seen, endpointId: seen.id, deniedReason: seen.denied_reason }]);
      const enabled = await deps.endpoints.enable(req.params.id);
      const row = enabled && (await deps.queries.getEndpoint(scope, req.params.id));
      if (!enabled || !row) throw permanent('not_found', `no endpoint ${req.params.id}`);
      req.log.info(
        { endpointId: row.id, endpoint: row.name, wasDisabled: enabled.wasDisabled, held: enabled.held, actor: actorOf(req) },
        'endpoint enabled',
      );
      return { endpoint: endpointView(row), wasDisabled: enabled.wasDisabled };
    },
  );

  app.get(
    '/api/inbound-credentials',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['configuration'],
        summary: 'Inbound credentials as reconciled, newest first',
        description: 'Requires read:webhooks. Never includes a password or its hash.',
        security,
        querystring: CredentialListQuery,
        response: { 200: described(listOf(CredentialSchema), 'A page of inbound credentials'), ...authErrors },
      },
    },
    async (req) => {
      const q = req.query;
      const page = await deps.queries.listCredentials(
        scopeOf(req),
        { source: q.source },
        q.limit ?? PAGE_SIZE.default,
        decodeCursor(q.cursor),
      );
      return { items: page.items.map(credentialView), nextCursor: encodeCursor(page.next) };
    },
  );
}
