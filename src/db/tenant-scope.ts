import type { Knex } from 'knex';
import type { Db } from './knex.js';

/**
 * What an admin API caller may see (docs/tenancy.md, "Scoped tokens"): null, everything (a token
 * without the namespaces claim, as before tenancy); else the rows of these namespaces. Computed
 * once from the token (api/auth/token-verifier.ts) and handed to every admin query, which adds
 * the predicates below; with null they add nothing, so an unscoped caller's statements are the
 * same as they were.
 *
 * A tenant sees: endpoints and credentials whose row's namespace is one of its namespaces;
 * deliveries (and their attempts) of those endpoints; events of the sources whose owning
 * credential (one row per source) is in its namespaces, and events delivered to one of its
 * endpoints. Everything else is answered as if it did not exist.
 */
export type TenantScope = { readonly namespaces: readonly string[] } | null;

/** The caller sees everything. */
export const UNSCOPED: TenantScope = null;

/** SELECT id of the scope's endpoints. */
export const scopeEndpointIds = (db: Db, scope: { readonly namespaces: readonly string[] }): Knex.QueryBuilder =>
  // an empty list is knex's `1 = 0`: a token scoped to no namespace sees nothing
  db('webhook_endpoint as scope_p')
    .select('scope_p.id')
    .whereIn('scope_p.namespace', [...scope.namespaces]);

/** SELECT source of the sources whose owning credential is in the scope. */
const scopeSources = (db: Db, scope: { readonly namespaces: readonly string[] }): Knex.QueryBuilder =>
  db('webhook_inbound_credential as scope_c')
    .select('scope_c.source')
    .whereIn('scope_c.namespace', [...scope.namespaces]);

/** Rows of a table with a namespace column (webhook_endpoint, webhook_inbound_credential). */
export function whereNamespaceIn(q: Knex.QueryBuilder, scope: TenantScope, namespaceColumn: string): Knex.QueryBuilder {
  return scope === null ? q : q.whereIn(namespaceColumn, [...scope.namespaces]);
}

/** Rows that belong to an endpoint of the scope (deliveries, by their endpoint_id column). */
export function whereEndpointIn(db: Db, q: Knex.QueryBuilder, scope: TenantScope, endpointIdColumn: string): Knex.QueryBuilder {
  return scope === null ? q : q.whereIn(endpointIdColumn, scopeEndpointIds(db, scope));
}

/** Events the scope sees, `alias` being webhook_event's alias in q. */
export function whereEventVisible(db: Db, q: Knex.QueryBuilder, scope: TenantScope, alias: string): Knex.QueryBuilder {
  if (scope === null) return q;
  return q.where((w) =>
    w.whereIn(`${alias}.source`, scopeSources(db, scope)).orWhereExists(
      // the (event_id, endpoint_id) unique index answers it per event
      db('webhook_delivery as scope_d')
        .select(db.raw('1'))
        .whereRaw(`scope_d.event_id = ${alias}.id`)
        .whereIn('scope_d.endpoint_id', scopeEndpointIds(db, scope)),
    ),
  );
}

/**
 * The same predicates as SQL text for the hand-written statements (stats): '' for an unscoped
 * caller, else ` AND …` with its bindings. The namespaces travel as one JSON array binding.
 */
export function scopeSql(scope: TenantScope): {
  /** on a delivery row: `endpointIdColumn` is one of the scope's endpoints */
  endpoint(endpointIdColumn: string): { sql: string; bindings: string[] };
  /** on an endpoint row */
  namespace(namespaceColumn: string): { sql: string; bindings: string[] };
  /** on an event row */
  event(alias: string): { sql: string; bindings: string[] };
} {
  const none = { sql: '', bindings: [] };
  if (scope === null) return { endpoint: () => none, namespace: () => none, event: () => none };
  const ns = JSON.stringify(scope.namespaces);
  const nsIn = `(SELECT jsonb_array_elements_text(?::jsonb))`;
  const endpointIds = `(SELECT id FROM webhook_endpoint WHERE namespace IN ${nsIn})`;
  return {
    endpoint: (col) => ({ sql: ` AND ${col} IN ${endpointIds}`, bindings: [ns] }),
    namespace: (col) => ({ sql: ` AND ${col} IN ${nsIn}`, bindings: [ns] }),
    event: (alias) => ({
      sql:
        ` AND (${alias}.source IN (SELECT source FROM webhook_inbound_credential WHERE namespace IN ${nsIn})` +
        ` OR EXISTS (SELECT 1 FROM webhook_delivery sd WHERE sd.event_id = ${alias}.id AND sd.endpoint_id IN ${endpointIds}))`,
      bindings: [ns, ns],
    }),
  };
}
