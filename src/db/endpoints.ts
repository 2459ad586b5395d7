import type { Endpoint } from '../domain/records.js';
import type { Db } from './knex.js';
import { toEndpoint, type EndpointRow } from './rows.js';

/** What a resource configures: an endpoint row without its identity and bookkeeping. */
export type EndpointSpec = Omit<Endpoint, 'id' | 'resourceUid' | 'createdAt' | 'updatedAt' | 'pausedUntil'>;

const toRow = (s: EndpointSpec) => ({
  name: s.name,
  source: s.source,
  event_type: s.eventType,
  url: s.url,
  method: s.method,
  auth_type: s.authType,
  auth_username: s.authUsername,
  auth_secret: s.authSecret,
  signing_secret: s.signingSecret,
  previous_signing_secret: s.previousSigningSecret,
  custom_headers: JSON.stringify(s.customHeaders),
  max_attempts: s.maxAttempts,
  timeout_seconds: s.timeoutSeconds,
  retry_on_status: s.retryOnStatus,
  rate_limit_per_second: s.rateLimitPerSecond,
  max_concurrency: s.maxConcurrency,
  active: s.active,
});

export function createEndpointRepository(db: Db) {
  return {
    /** Routing: active endpoints of the source whose event type matches, or that catch all. */
    async matchActive(source: string, eventType: string | null): Promise<Endpoint[]> {
      const rows = await db<EndpointRow>('webhook_endpoint')
        .where({ source, active: true })
        .andWhere((q) => {
          q.whereNull('event_type');
          if (eventType !== null) q.orWhere('event_type', eventType);
        })
        .orderBy('created_at');
      return rows.map(toEndpoint);
    },

    async get(id: string): Promise<Endpoint | undefined> {
      const row = await db<EndpointRow>('webhook_endpoint').where({ id }).first();
      return row ? toEndpoint(row) : undefined;
    },

    async list(): Promise<Endpoint[]> {
      const rows = await db<EndpointRow>('webhook_endpoint').orderBy('created_at', 'desc');
      return rows.map(toEndpoint);
    },

    /** Create or update the row owned by a resource (custom resource uid or manifest key). */
    async upsertByResourceUid(resourceUid: string, spec: EndpointSpec): Promise<Endpoint> {
      const rows: unknown[] = await db('webhook_endpoint')
        .insert({ ...toRow(spec), resource_uid: resourceUid })
        .onConflict('resource_uid')
        .merge({ ...toRow(spec), updated_at: db.fn.now() })
        .returning('*');
      const row = rows[0];
      if (!row) throw new Error('upsert returned no row');
      return toEndpoint(row as EndpointRow);
    },

    /** Deliveries keep referencing the row, so a removed resource deactivates it instead. */
    async deactivateByResourceUid(resourceUid: string): Promise<boolean> {
      const n = await db('webhook_endpoint')
        .where({ resource_uid: resourceUid })
        .update({ active: false, updated_at: db.fn.now() });
      return n > 0;
    },

    async resourceUids(prefix: string): Promise<string[]> {
      const rows = await db<EndpointRow>('webhook_endpoint')
        .select('resource_uid')
        .where('resource_uid', 'like', `${prefix}%`)
        .andWhere({ active: true });
      return rows.map((r) => r.resource_uid).filter((u): u is string => u !== null);
    },
  };
}

export type EndpointRepository = ReturnType<typeof createEndpointRepository>;
