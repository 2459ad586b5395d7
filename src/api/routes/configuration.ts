import { permanent } from '../../domain/errors.js';
import { READ, REPLAY } from '../auth/permissions.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import {
  authErrors,
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
import { credentialView, endpointView } from '../views.js';
import { actorOf, type AdminRouteDeps, type TypedApp } from './deps.js';

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
          'those not yet handed to a replay run). Idempotent: enabling an ACTIVE endpoint changes nothing (wasDisabled false).',
        security,
        params: IdParams,
        response: { 200: described(EndpointEnabledSchema, 'The endpoint, ACTIVE'), ...authErrors, ...notFound },
      },
    },
    async (req) => {
      const enabled = await deps.endpoints.enable(req.params.id);
      const row = enabled && (await deps.queries.getEndpoint(req.params.id));
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
      const page = await deps.queries.listCredentials({ source: q.source }, q.limit ?? PAGE_SIZE.default, decodeCursor(q.cursor));
      return { items: page.items.map(credentialView), nextCursor: encodeCursor(page.next) };
    },
  );
}
