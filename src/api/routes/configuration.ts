import { READ } from '../auth/permissions.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { authErrors, CredentialListQuery, described, CredentialSchema, EndpointListQuery, EndpointSchema, listOf, PAGE_SIZE } from '../schemas.js';
import { credentialView, endpointView } from '../views.js';
import type { AdminRouteDeps, TypedApp } from './deps.js';

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
      const page = await deps.queries.listEndpoints({ source: q.source, active: q.active }, q.limit ?? PAGE_SIZE.default, decodeCursor(q.cursor));
      return { items: page.items.map(endpointView), nextCursor: encodeCursor(page.next) };
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
