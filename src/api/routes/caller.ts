import { READ } from '../auth/permissions.js';
import { authErrors, CallerSchema, described } from '../route-schemas.js';
import { scopeOf, type AdminRouteDeps, type TypedApp } from './deps.js';

/** Who the token is, as the API reads it: the console shows it beside the user's name. */
export function registerCallerRoutes(app: TypedApp, deps: AdminRouteDeps): void {
  app.get(
    '/api/me',
    {
      onRequest: deps.auth(READ),
      schema: {
        tags: ['caller'],
        summary: 'The caller: its subject, permissions and, for a tenant, its namespaces',
        description:
          'Requires read:webhooks. What the API read from the token; namespaces is null for a token without the namespaces claim, which sees everything.',
        security: [{ bearerAuth: [] }],
        response: { 200: described(CallerSchema, 'The caller'), ...authErrors },
      },
    },
    async (req) => {
      const scope = scopeOf(req);
      return {
        subject: req.principal?.subject ?? '',
        permissions: [...(req.principal?.permissions ?? [])].sort(),
        namespaces: scope === null ? null : [...scope.namespaces],
      };
    },
  );
}
