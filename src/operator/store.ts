import type { CredentialSpec } from '../db/credentials.js';
import type { OperationsEventsSettings } from '../config/settings.js';
import type { EndpointSpec } from '../db/endpoints.js';
import type { Db } from '../db/knex.js';
import { createRepositories, type Repositories } from '../db/repositories.js';
import { toCredential, toEndpoint, type CredentialRow, type EndpointRow } from '../db/rows.js';
import type { Endpoint, InboundCredential } from '../domain/records.js';
import { MANIFEST_UID_PREFIX } from '../domain/records.js';

/**
 * The operator's view of Postgres: the rows it owns are keyed by the custom resource's uid
 * (resource_uid); writes go through the shared repositories (src/db), reads by uid and the
 * listing of owned rows for garbage collection are here.
 */
export interface OwnedRow {
  uid: string;
  /** "namespace/name" of the resource that wrote it */
  resourceName: string;
}

/** `operations`: the reserved source (OPERATIONS_EVENTS_SOURCE), which no credential may take, and under which the store records operational events. */
export function createOperatorStore(db: Db, operations?: OperationsEventsSettings) {
  const repos = createRepositories(db, operations ? { operations } : {});
  return {
    repos,
    async endpointByUid(uid: string): Promise<Endpoint | undefined> {
      const row = await db<EndpointRow>('webhook_endpoint').where({ resource_uid: uid }).first();
      return row ? toEndpoint(row) : undefined;
    },
    async credentialByUid(uid: string): Promise<InboundCredential | undefined> {
      const row = await db<CredentialRow>('webhook_inbound_credential').where({ resource_uid: uid }).first();
      return row ? toCredential(row) : undefined;
    },
    /** Active endpoint rows owned by custom resources (not by dev-mode manifests, not unowned). */
    async ownedActiveEndpoints(): Promise<OwnedRow[]> {
      const rows = await db<EndpointRow>('webhook_endpoint')
        .select('resource_uid', 'name')
        .whereNotNull('resource_uid')
        .andWhere('resource_uid', 'not like', `${MANIFEST_UID_PREFIX}%`)
        .andWhere({ active: true });
      return rows.map((r) => ({ uid: r.resource_uid ?? '', resourceName: r.name }));
    },
    async ownedCredentials(): Promise<OwnedRow[]> {
      const rows = await db<CredentialRow>('webhook_inbound_credential')
        .select('resource_uid', 'resource_name')
        .whereNotNull('resource_uid')
        .andWhere('resource_uid', 'not like', `${MANIFEST_UID_PREFIX}%`);
      return rows.map((r) => ({ uid: r.resource_uid ?? '', resourceName: r.resource_name ?? '' }));
    },
    /**
     * Replaces the credential row of a source that another owner holds (an orphan, or a resource
     * that lost the source to this one) by this resource's, in one transaction.
     */
    async takeOverCredential(previousOwnerUid: string, uid: string, spec: CredentialSpec): Promise<InboundCredential> {
      return db.transaction(async (trx) => {
        const r: Repositories = createRepositories(trx, operations ? { operations } : {});
        await r.credentials.deleteByResourceUid(previousOwnerUid);
        return r.credentials.upsertByResourceUid(uid, spec);
      });
    },
  };
}

export type OperatorStore = ReturnType<typeof createOperatorStore>;

/** Whether the stored endpoint row already says what the spec asks for. */
export function endpointMatches(row: Endpoint, spec: EndpointSpec): boolean {
  return (
    row.name === spec.name &&
    row.source === spec.source &&
    row.eventType === spec.eventType &&
    row.url === spec.url &&
    row.method === spec.method &&
    row.authType === spec.authType &&
    row.authUsername === spec.authUsername &&
    row.authSecret === spec.authSecret &&
    sameJson(row.authOAuth2, spec.authOAuth2 ?? null) &&
    row.signingType === (spec.signingType ?? 'NONE') &&
    row.signingSecret === spec.signingSecret &&
    row.tlsClientCertificate === (spec.tlsClientCertificate ?? null) &&
    row.tlsClientKey === (spec.tlsClientKey ?? null) &&
    row.tlsCaBundle === (spec.tlsCaBundle ?? null) &&
    row.previousSigningSecret === spec.previousSigningSecret &&
    sameJson(row.customHeaders, spec.customHeaders) &&
    row.maxAttempts === spec.maxAttempts &&
    row.timeoutSeconds === spec.timeoutSeconds &&
    sameJson([...row.retryOnStatus].sort(), [...spec.retryOnStatus].sort()) &&
    row.rateLimitPerSecond === spec.rateLimitPerSecond &&
    row.maxConcurrency === spec.maxConcurrency &&
    row.active === spec.active &&
    row.autoDisableAfter === spec.autoDisableAfter &&
    row.propagateTraceContext === (spec.propagateTraceContext ?? true) &&
    row.proxyDirect === (spec.proxyDirect ?? false) &&
    row.namespace === (spec.namespace ?? null) &&
    row.deniedReason === (spec.deniedReason ?? null) &&
    row.format === (spec.format ?? 'Raw') &&
    row.filter === (spec.filter ?? null) &&
    row.transform === (spec.transform ?? null)
  );
}

export function credentialMatches(row: InboundCredential, spec: CredentialSpec): boolean {
  return (
    row.source === spec.source &&
    row.username === spec.username &&
    row.passwordHash === spec.passwordHash &&
    sameJson(row.verification, spec.verification ?? null) &&
    sameJson(row.eventIdRule, spec.eventIdRule) &&
    sameJson(row.eventTypeRule, spec.eventTypeRule) &&
    row.format === (spec.format ?? 'Raw') &&
    row.resourceName === spec.resourceName &&
    row.retentionMaxAgeSeconds === (spec.retentionMaxAgeSeconds ?? null) &&
    row.retentionPayloadMaxAgeSeconds === (spec.retentionPayloadMaxAgeSeconds ?? null) &&
    row.namespace === (spec.namespace ?? null) &&
    sameJson(row.allowedEndpoints, spec.allowedEndpoints ?? null)
  );
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>)
        .filter(([, x]) => x !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, x]) => [k, canonical(x)]),
    );
  }
  return v;
}

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(canonical(a ?? null)) === JSON.stringify(canonical(b ?? null));
