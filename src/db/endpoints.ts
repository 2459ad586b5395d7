import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Endpoint, EndpointHealthField } from '../domain/records.js';
import type { OperationsEventsSettings } from '../config/settings.js';
import type { Db } from './knex.js';
import { aboutEndpoint, endpointJsonSql, insertOperationalEventsSql, recordOperationalEvent, resourceName } from './operational-events.js';
import { authAndSigningColumns, toEndpoint, type EndpointRow } from './rows.js';

/**
 * The fields a resource may leave out: absent, the default (namespace and deniedReason null: a row
 * not written by a resource of a namespace; allowed; no filter, no transform, no signing, not
 * ordered, HTTP, no OAuth2).
 */
type DefaultedSpecField =
  | 'propagateTraceContext'
  | 'proxyDirect'
  | 'format'
  | 'namespace'
  | 'deniedReason'
  | 'filter'
  | 'transform'
  | 'signingType'
  | 'signingPublicKeys'
  | 'ordering'
  | EndpointTlsField
  | 'destination'
  | 'destinationSecrets'
  | 'authOAuth2';

/** What a resource configures: an endpoint row without its identity and bookkeeping. */
export type EndpointSpec = Omit<
  Endpoint,
  'id' | 'resourceUid' | 'createdAt' | 'updatedAt' | EndpointHealthField | 'pausedUntil' | DefaultedSpecField
> &
  Partial<Pick<Endpoint, DefaultedSpecField>>;

type EndpointTlsField = 'tlsClientCertificate' | 'tlsClientKey' | 'tlsCaBundle' | 'tlsClientCertificateExpiresAt';

/** Longest enable annotation value stored as it is. */
const ENABLE_ANNOTATION_KEPT = 256;

/** The outcome of enabling an endpoint. */
export interface Enabled {
  /** false: it was not disabled (enable is idempotent) */
  wasDisabled: boolean;
  /** its deliveries held while it was disabled, which the redriver now re-delivers */
  held: number;
}

const toRow = (s: EndpointSpec) => ({
  name: s.name,
  source: s.source,
  event_type: s.eventType,
  url: s.url,
  method: s.method,
  ...authAndSigningColumns(s.authType, s.signingType ?? 'NONE'),
  auth_username: s.authUsername,
  auth_secret: s.authSecret,
  auth_oauth2: s.authOAuth2 ? JSON.stringify(s.authOAuth2) : null,
  signing_secret: s.signingSecret,
  previous_signing_secret: s.previousSigningSecret,
  signing_public_keys: s.signingPublicKeys ?? [],
  tls_client_certificate: s.tlsClientCertificate ?? null,
  tls_client_key: s.tlsClientKey ?? null,
  tls_ca_bundle: s.tlsCaBundle ?? null,
  tls_client_certificate_expires_at: s.tlsClientCertificateExpiresAt ?? null,
  custom_headers: JSON.stringify(s.customHeaders),
  max_attempts: s.maxAttempts,
  timeout_seconds: s.timeoutSeconds,
  retry_on_status: s.retryOnStatus,
  rate_limit_per_second: s.rateLimitPerSecond,
  max_concurrency: s.maxConcurrency,
  active: s.active,
  auto_disable_after: s.autoDisableAfter,
  propagate_trace_context: s.propagateTraceContext ?? true,
  proxy_direct: s.proxyDirect ?? false,
  namespace: s.namespace ?? null,
  denied_reason: s.deniedReason ?? null,
  format: s.format ?? 'Raw',
  filter: s.filter ?? null,
  transform_jsonata: s.transform ?? null,
  ordering_key_cel: s.ordering?.key ?? null,
  ordering_on_failure: s.ordering?.onFailure ?? null,
  // null: HTTP (the rows of the release before, too)
  destination: s.destination === undefined || s.destination.type === 'HTTP' ? null : JSON.stringify(s.destination),
  destination_secrets:
    s.destinationSecrets === undefined || Object.keys(s.destinationSecrets).length === 0 ? null : JSON.stringify(s.destinationSecrets),
});

/**
 * endpoint.enabled (docs/operations-events.md), recorded by the statement that enables: `old` the
 * row before (locked), `upd` the rows it enabled. One per disable: the key is the disabled_at it ended.
 */
const endpointEnabledSql = (by: string): string =>
  insertOperationalEventsSql(
    ':opsSource',
    `SELECT 'endpoint.enabled' AS type, ep.id || ':' || extract(epoch FROM old.disabled_at)::text AS key, ep.namespace,
            jsonb_build_object(${endpointJsonSql('ep')}, 'disabledAt', old.disabled_at, 'enabledBy', '${by}',
              'heldDeliveries', (SELECT count(*) FROM webhook_delivery d WHERE d.endpoint_id = ep.id AND d.redrive_on_enable)) AS payload
       FROM upd JOIN old ON old.id = upd.id JOIN webhook_endpoint ep ON ep.id = upd.id`,
  );

/**
 * A refusal of the OAuth2 credentials (oauth2_token_refusal) was about the secret and token
 * endpoint the row had: another one written (the Secret fixed) clears it, and the next attempt
 * asks with the new one. In ON CONFLICT's SET, webhook_endpoint is the row before, excluded the new.
 */
const tokenRefusalAfterUpsert = (trx: Db) => {
  const changed = `webhook_endpoint.auth_secret IS DISTINCT FROM excluded.auth_secret
    OR webhook_endpoint.auth_oauth2 IS DISTINCT FROM excluded.auth_oauth2 OR excluded.auth_oauth2 IS NULL`;
  const kept = (column: string) => trx.raw(`CASE WHEN ${changed} THEN NULL ELSE webhook_endpoint.${column} END`);
  // an unavailable token endpoint (migration 092) likewise: another token URL is asked afresh
  return {
    oauth2_token_refusal: kept('oauth2_token_refusal'),
    oauth2_token_refused_at: kept('oauth2_token_refused_at'),
    oauth2_token_unavailable: kept('oauth2_token_unavailable'),
    oauth2_token_unavailable_since: kept('oauth2_token_unavailable_since'),
  };
};

/** Migration 092's columns cleared: the token endpoint answered. */
const NOT_UNAVAILABLE = { oauth2_token_unavailable: null, oauth2_token_unavailable_since: null } as const;

/** The endpoint's row while it still has the secret and token endpoint a token request used: a fixed Secret written meanwhile is left alone. */
const sameCredentials = (q: Knex.QueryBuilder, endpoint: Pick<Endpoint, 'id' | 'authSecret' | 'authOAuth2'>): Knex.QueryBuilder =>
  q
    .where({ id: endpoint.id })
    .andWhereRaw('auth_secret IS NOT DISTINCT FROM ?', [endpoint.authSecret])
    .andWhereRaw('auth_oauth2 IS NOT DISTINCT FROM ?::jsonb', [endpoint.authOAuth2 ? JSON.stringify(endpoint.authOAuth2) : null]);

export function createEndpointRepository(db: Db, operations: Pick<OperationsEventsSettings, 'source'>) {
  return {
    async get(id: string): Promise<Endpoint | undefined> {
      const row = await db<EndpointRow>('webhook_endpoint').where({ id }).first();
      return row ? toEndpoint(row) : undefined;
    },

    /**
     * The endpoint a WebhookReplay names: the active row of the WebhookEndpoint `name` in
     * `namespace` (rows are named namespace/name by the operator and dev mode alike).
     */
    /** The active row of the WebhookEndpoint `name` in `namespace`, and whether its source allows it (a replay's target). */
    async activeByName(namespace: string, name: string): Promise<Pick<Endpoint, 'id' | 'deniedReason'> | undefined> {
      const row = await db<EndpointRow>('webhook_endpoint')
        .where({ name: `${namespace}/${name}`, active: true })
        .orderBy('updated_at', 'desc')
        .first('id', 'denied_reason');
      return row && { id: row.id, deniedReason: row.denied_reason ?? null };
    },

    async list(): Promise<Endpoint[]> {
      const rows = await db<EndpointRow>('webhook_endpoint').orderBy('created_at', 'desc');
      return rows.map(toEndpoint);
    },

    /**
     * Create or update the row owned by a resource (custom resource uid or manifest key). A row
     * whose source stops allowing it (spec.deniedReason, explained by `deniedMessage`) records
     * endpoint.not_allowed in the same transaction (docs/operations-events.md): once per change,
     * since a reconcile that finds the row as the spec says writes nothing. A new row whose source
     * is not found records nothing (below).
     */
    async upsertByResourceUid(resourceUid: string, spec: EndpointSpec, deniedMessage?: string): Promise<Endpoint> {
      const upsert = async (trx: Db): Promise<Endpoint> => {
        const rows: unknown[] = await trx('webhook_endpoint')
          .insert({ ...toRow(spec), resource_uid: resourceUid })
          .onConflict('resource_uid')
          .merge({ ...toRow(spec), ...tokenRefusalAfterUpsert(trx), updated_at: trx.fn.now() })
          .returning('*');
        const row = rows[0];
        if (!row) throw new Error('upsert returned no row');
        return toEndpoint(row as EndpointRow);
      };
      const reason = spec.deniedReason ?? null;
      if (reason === null) return upsert(db);
      return db.transaction(async (trx) => {
        const before = await trx<EndpointRow>('webhook_endpoint').where({ resource_uid: resourceUid }).forUpdate().first('denied_reason');
        const saved = await upsert(trx);
        // a new endpoint whose source has no credential yet is most often one applied beside its
        // credential, before it: not worth waking anyone; a revocation or a tenancy refusal is
        const applyOrder = before === undefined && reason === 'SourceNotFound';
        if (before?.denied_reason !== reason && !applyOrder) {
          const endpoint = {
            id: saved.id,
            namespace: saved.namespace,
            name: resourceName(saved.name, saved.namespace),
            uid: resourceUid,
            source: saved.source,
          };
          await recordOperationalEvent(trx, operations.source, {
            type: 'endpoint.not_allowed',
            key: `${saved.id}:${saved.updatedAt.toISOString()}`,
            ...aboutEndpoint(endpoint),
            data: { endpoint, reason, message: deniedMessage ?? reason },
          });
        }
        return saved;
      });
    },

    /** Deliveries keep referencing the row, so a removed resource deactivates it instead. */
    async deactivateByResourceUid(resourceUid: string): Promise<boolean> {
      const n = await db('webhook_endpoint').where({ resource_uid: resourceUid }).update({ active: false, updated_at: db.fn.now() });
      return n > 0;
    },

    /**
     * Enables an endpoint: not disabled any more, its failure count back to 0. Its held deliveries
     * are then taken by the redriver (temporal/redriver.ts), which only takes those of enabled
     * endpoints: nothing more to do here, and nothing to lose if the caller dies right after.
     * undefined when there is no such endpoint.
     */
    async enable(id: string): Promise<Enabled | undefined> {
      const res = await db.raw<{ rows: Array<{ was_disabled: boolean; held: string }> }>(
        `WITH old AS (SELECT id, disabled_at FROM webhook_endpoint WHERE id = :id FOR UPDATE),
              upd AS (UPDATE webhook_endpoint ep SET disabled_at = NULL, consecutive_failures = 0, updated_at = now()
                        FROM old WHERE ep.id = old.id AND old.disabled_at IS NOT NULL RETURNING ep.id),
              operational AS (${endpointEnabledSql('api')})
         SELECT old.disabled_at IS NOT NULL AS was_disabled,
                (SELECT count(*) FROM webhook_delivery d WHERE d.endpoint_id = old.id AND d.redrive_on_enable) AS held
           FROM old`,
        { id, opsSource: operations.source },
      );
      const row = res.rows[0];
      return row ? { wasDisabled: row.was_disabled, held: Number(row.held) } : undefined;
    },

    /**
     * The annotation webhookfanout.io/enable of the row's resource: a value other than the one last
     * acted on enables the endpoint (absent: only remembered). Remembered in the row, in the same
     * statement, so a value is acted on once however often the resource is reconciled.
     * undefined when the value was already acted on (or the row does not exist).
     */
    async applyEnableAnnotation(resourceUid: string, annotation: string | null): Promise<{ wasDisabled: boolean } | undefined> {
      // only compared, never shown: a long value (dev mode's files have no size limit) is kept as its digest
      const value =
        annotation !== null && annotation.length > ENABLE_ANNOTATION_KEPT
          ? `sha256:${createHash('sha256').update(annotation).digest('hex')}`
          : annotation;
      const res = await db.raw<{ rows: Array<{ was_disabled: boolean }> }>(
        `WITH old AS (SELECT id, disabled_at FROM webhook_endpoint
                       WHERE resource_uid = :uid AND enable_annotation IS DISTINCT FROM :value FOR UPDATE),
              changed AS (
                UPDATE webhook_endpoint ep
                   SET enable_annotation = :value,
                       disabled_at = CASE WHEN :value::text IS NULL THEN ep.disabled_at END,
                       consecutive_failures = CASE WHEN :value::text IS NULL OR ep.disabled_at IS NULL THEN ep.consecutive_failures ELSE 0 END,
                       updated_at = CASE WHEN :value::text IS NOT NULL AND ep.disabled_at IS NOT NULL THEN now() ELSE ep.updated_at END
                  FROM old WHERE ep.id = old.id
                RETURNING ep.id, old.disabled_at IS NOT NULL AND :value::text IS NOT NULL AS was_disabled),
              upd AS (SELECT id FROM changed WHERE was_disabled),
              operational AS (${endpointEnabledSql('annotation')})
         SELECT was_disabled FROM changed`,
        { uid: resourceUid, value, opsSource: operations.source },
      );
      const row = res.rows[0];
      return row ? { wasDisabled: row.was_disabled } : undefined;
    },

    /** resource_uid of every disabled endpoint row (the operator's health poll compares them with its resources). */
    async disabledResourceUids(): Promise<Set<string>> {
      const rows = await db<EndpointRow>('webhook_endpoint')
        .select('resource_uid')
        .whereNotNull('disabled_at')
        .whereNotNull('resource_uid');
      return new Set(rows.map((r) => r.resource_uid).filter((u): u is string => u !== null));
    },

    /**
     * The worker: the token endpoint refused this endpoint's client credentials (`message`: the
     * server's words, no secret). Written only while the row still has the secret and token
     * endpoint that were refused (a fixed Secret written meanwhile is not marked), and only when
     * the words changed. The operator's health poll makes the resource Ready=False.
     */
    async recordTokenRefusal(endpoint: Pick<Endpoint, 'id' | 'authSecret' | 'authOAuth2'>, message: string): Promise<void> {
      await sameCredentials(db('webhook_endpoint'), endpoint)
        // it answered: it is not unavailable (migration 092)
        .andWhereRaw('(oauth2_token_refusal IS DISTINCT FROM ? OR oauth2_token_unavailable IS NOT NULL)', [message])
        .update({ oauth2_token_refusal: message, oauth2_token_refused_at: db.fn.now(), ...NOT_UNAVAILABLE });
    },

    /**
     * The worker: the token endpoint is unavailable (5xx, a timeout, a refused connection...;
     * `message`: what failed, one line, no secret). `since` is kept from the first failure of the
     * spell (the words may change: a 503, then a timeout); written only while the row still has
     * the secret and token endpoint that were asked, and only when the words changed.
     */
    async recordTokenUnavailable(endpoint: Pick<Endpoint, 'id' | 'authSecret' | 'authOAuth2'>, message: string): Promise<void> {
      await sameCredentials(db('webhook_endpoint'), endpoint)
        .andWhereRaw('oauth2_token_unavailable IS DISTINCT FROM ?', [message])
        .update({
          oauth2_token_unavailable: message,
          oauth2_token_unavailable_since: db.raw('COALESCE(oauth2_token_unavailable_since, now())'),
        });
    },

    /**
     * The worker got a token from the token endpoint: a refusal or an unavailable token endpoint is
     * over (the operator's health poll makes the resource Ready again). Decided by the row, in one
     * statement: only while it still has the secret and token endpoint that were asked (a token from
     * the old token URL says nothing of a new one), and only when there is something to clear.
     * True when it cleared something.
     */
    async clearTokenFailures(endpoint: Pick<Endpoint, 'id' | 'authSecret' | 'authOAuth2'>): Promise<boolean> {
      const n = await sameCredentials(db('webhook_endpoint'), endpoint)
        .andWhere((q) => q.whereNotNull('oauth2_token_refusal').orWhereNotNull('oauth2_token_unavailable'))
        .update({ oauth2_token_refusal: null, oauth2_token_refused_at: null, ...NOT_UNAVAILABLE });
      return n > 0;
    },

    /**
     * The token endpoint (or the address policy) refused the request itself, invalid_scope...: it is
     * not unavailable, but that says nothing of our credentials (a refusal of them stays). As
     * clearTokenFailures, decided by the row.
     */
    async clearTokenUnavailable(endpoint: Pick<Endpoint, 'id' | 'authSecret' | 'authOAuth2'>): Promise<boolean> {
      const n = await sameCredentials(db('webhook_endpoint'), endpoint).whereNotNull('oauth2_token_unavailable').update(NOT_UNAVAILABLE);
      return n > 0;
    },

    /** resource_uid of every active endpoint row whose token endpoint refuses its credentials (the operator's health poll). */
    async tokenRefusedResourceUids(): Promise<Set<string>> {
      const rows = await db<EndpointRow>('webhook_endpoint')
        .select('resource_uid')
        .whereNotNull('oauth2_token_refusal')
        .whereNotNull('resource_uid')
        .andWhere({ active: true });
      return new Set(rows.map((r) => r.resource_uid).filter((u): u is string => u !== null));
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
