import type { Knex } from 'knex';
import type { DeliveryStatus, EventStatus } from '../domain/statuses.js';
import type { DeniedReason, DestinationType, EndpointState, ExtractionRule, Receipt } from '../domain/records.js';
import type { Db } from './knex.js';
import { toEvent, type DeliveryRow, type EndpointRow, type EventRow } from './rows.js';
import { whereEndpointIn, whereEventVisible, whereNamespaceIn, type TenantScope } from './tenant-scope.js';
import type { WebhookEvent } from '../domain/records.js';

// Read queries of the admin API: filtered listings, newest first, keyset-paginated on
// (timestamp DESC, id DESC), which the migration's (…, created/received_at DESC, id DESC) indexes serve.

/** Position after which a page starts: the last row's timestamp (microseconds, UTC text) and id. */
export interface PageAfter {
  ts: string;
  id: string;
}

export interface Page<T> {
  items: T[];
  /** position of the last item when more rows follow, else null */
  next: PageAfter | null;
}

export interface TimeRange {
  /** inclusive */
  from?: Date;
  /** exclusive */
  to?: Date;
}

export interface EventFilter extends TimeRange {
  source?: string;
  status?: EventStatus;
  type?: string;
  /** with source: the (source, external_event_id) unique index answers it */
  externalId?: string;
}

export interface DeliveryFilter extends TimeRange {
  status?: DeliveryStatus;
  source?: string;
  endpointId?: string;
  eventId?: string;
  /** the event's type */
  eventType?: string;
}

/** An event without its payload bytes (a page of 200 could otherwise weigh 200 MiB). */
export interface EventSummaryRow extends Omit<EventRow, 'payload' | 'headers'> {
  payload_size: number;
  /** an operational event's payload (ours, small: docs/operations-events.md); null for any other source's, or dropped */
  operational_payload: Buffer | null;
  page_ts: string;
}

export interface DeliveryListRow extends DeliveryRow {
  source: string;
  page_ts: string;
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  outcome: 'SUCCESS' | 'FAILED' | 'RETRYING';
  started_at: Date;
  duration_ms: number | null;
  response_status: number | null;
  response_body: string | null;
  error: string | null;
  /** the first REQUEST_BODY_SHOWN characters of the body sent when a transform made it; null: the payload as received, or no request */
  request_body: string | null;
  /** the whole sent body's size in bytes, when request_body is set */
  request_body_bytes: number | null;
  /** what the broker acknowledged the publish with (docs/destinations.md); null: HTTP, a failure, no request */
  receipt: Receipt | null;
}

/** How much of a transformed body sent (up to 1 MiB) the attempt log shows per attempt: a delivery may have dozens. */
export const REQUEST_BODY_SHOWN = 65_536;

/** What the API may show of an endpoint: secrets reduced to whether they are set, in SQL already. */
export type EndpointViewRow = Omit<
  EndpointRow,
  | 'auth_secret'
  | 'signing_secret'
  | 'previous_signing_secret'
  | 'custom_headers'
  | 'destination'
  | 'destination_secrets'
  | 'tls_client_certificate'
  | 'tls_client_key'
  | 'tls_ca_bundle'
> & {
  destination_type: DestinationType;
  tls_ca_bundle_set: boolean;
  auth_secret_set: boolean;
  signing_secret_set: boolean;
  previous_signing_secret_set: boolean;
  custom_header_names: string[];
  /** deliveries held while it was disabled, not redriven yet */
  held_deliveries: number;
  page_ts: string;
};

/** An endpoint of an event's (source, type) that has no delivery of it, as configured now. */
export interface EndpointWithoutDeliveryRow {
  id: string;
  name: string;
  namespace: string | null;
  event_type: string | null;
  filter: string | null;
  denied_reason: DeniedReason | null;
  /** created after the event was received (compared in Postgres, to the microsecond) */
  created_after_event: boolean;
}

export interface EndpointsWithoutDelivery {
  rows: EndpointWithoutDeliveryRow[];
  /** how many match, `rows` being the first of them by name */
  total: number;
  /**
   * whether the event's fan-out has routed it: its status is final, or one of its deliveries
   * (anyone's) has an attempt, which follows prepare. Until then "no delivery" says nothing.
   */
  routed: boolean;
}

/** The columns of EndpointViewRow: never a secret, only whether one is set. */
function endpointView(db: Db): Knex.QueryBuilder {
  return db('webhook_endpoint as p').select(
    'p.id',
    'p.name',
    'p.source',
    'p.event_type',
    'p.url',
    // the destination's type only: its block is shown through url, and destination_secrets never leaves the database
    db.raw("coalesce(p.destination->>'type', 'HTTP') AS destination_type"),
    'p.method',
    'p.auth_type',
    'p.auth_username',
    // OAuth2's token endpoint and client: no secret in it (the secret is auth_secret)
    'p.auth_oauth2',
    // the token endpoint's words when it refuses the credentials (never a secret: db/endpoints.ts recordTokenRefusal)
    'p.oauth2_token_refusal',
    'p.oauth2_token_refused_at',
    // what failed when the token endpoint is unavailable, and since when (never a secret: recordTokenUnavailable)
    'p.oauth2_token_unavailable',
    'p.oauth2_token_unavailable_since',
    'p.signing_type',
    'p.signing_public_keys',
    db.raw('p.auth_secret IS NOT NULL AS auth_secret_set'),
    db.raw('p.signing_secret IS NOT NULL AS signing_secret_set'),
    db.raw('p.previous_signing_secret IS NOT NULL AS previous_signing_secret_set'),
    db.raw('p.tls_ca_bundle IS NOT NULL AS tls_ca_bundle_set'),
    'p.tls_client_certificate_expires_at',
    'p.proxy_direct',
    // header values may be credentials (API keys): their names only
    db.raw(`ARRAY(SELECT jsonb_object_keys(p.custom_headers) ORDER BY 1) AS custom_header_names`),
    'p.max_attempts',
    'p.timeout_seconds',
    'p.retry_on_status',
    'p.rate_limit_per_second',
    'p.max_concurrency',
    'p.paused_until',
    'p.active',
    'p.auto_disable_after',
    'p.consecutive_failures',
    'p.disabled_at',
    'p.namespace',
    'p.denied_reason',
    'p.filter',
    'p.transform_jsonata',
    db.raw('(SELECT count(*)::int FROM webhook_delivery d WHERE d.endpoint_id = p.id AND d.redrive_on_enable) AS held_deliveries'),
    'p.resource_uid',
    'p.created_at',
    'p.updated_at',
    pageTs(db, 'p.created_at'),
  );
}

/** An inbound credential without its password hash or signing secrets, which are never selected. */
export interface CredentialViewRow {
  id: string;
  source: string;
  namespace: string | null;
  username: string | null;
  /** the verification's type alone (null: Basic only) */
  verification_type: string | null;
  event_id_rule: ExtractionRule | null;
  event_type_rule: ExtractionRule | null;
  resource_uid: string | null;
  resource_name: string | null;
  created_at: Date;
  updated_at: Date;
  page_ts: string;
}

/** Microsecond UTC text of a timestamptz column: a JS Date would drop the microseconds and break keyset order. */
const pageTs = (db: Db, column: string) => db.raw(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS page_ts`);

function applyRange(q: Knex.QueryBuilder, column: string, r: TimeRange): void {
  if (r.from) q.where(column, '>=', r.from);
  if (r.to) q.where(column, '<', r.to);
}

async function page<R extends { id: string; page_ts: string }>(
  db: Db,
  q: Knex.QueryBuilder,
  tsColumn: string,
  idColumn: string,
  limit: number,
  after: PageAfter | undefined,
): Promise<Page<R>> {
  if (after) q.whereRaw(`(${tsColumn}, ${idColumn}) < (?::timestamptz, ?::uuid)`, [after.ts, after.id]);
  const rows = (await q
    .orderBy([
      { column: tsColumn, order: 'desc' },
      { column: idColumn, order: 'desc' },
    ])
    .limit(limit + 1)) as R[];
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next: rows.length > limit && last ? { ts: last.page_ts, id: last.id } : null };
}

/** A delivery with its event's source; scoped: only the deliveries of the scope's endpoints. */
const deliveryRows = (db: Db, scope: TenantScope): Knex.QueryBuilder =>
  whereEndpointIn(
    db,
    db('webhook_delivery as d').join('webhook_event as e', 'e.id', 'd.event_id').select('d.*', 'e.source', pageTs(db, 'd.created_at')),
    scope,
    'd.endpoint_id',
  );

/**
 * Every read takes the caller's scope (tenant-scope.ts): a row outside it is not found, by the
 * same statement that finds the rows inside it.
 */
export function createAdminQueries(db: Db, operations: { source: string }) {
  return {
    async listEvents(scope: TenantScope, f: EventFilter, limit: number, after?: PageAfter): Promise<Page<EventSummaryRow>> {
      const q = db('webhook_event as e').select(
        'e.id',
        'e.source',
        'e.external_event_id',
        'e.event_type',
        'e.content_type',
        'e.status',
        'e.workflow_id',
        'e.published_at',
        'e.received_at',
        'e.completed_at',
        'e.payload_dropped_at',
        db.raw('octet_length(e.payload) AS payload_size'),
        // what an operational event is about (its endpoint, its delivery) is in its payload: a list row names it
        db.raw('CASE WHEN e.source = ? AND e.payload_dropped_at IS NULL THEN e.payload END AS operational_payload', [operations.source]),
        pageTs(db, 'e.received_at'),
      );
      if (f.source !== undefined) q.where('e.source', f.source);
      if (f.status !== undefined) q.where('e.status', f.status);
      if (f.type !== undefined) q.where('e.event_type', f.type);
      if (f.externalId !== undefined) q.where('e.external_event_id', f.externalId);
      applyRange(q, 'e.received_at', f);
      whereEventVisible(db, q, scope, 'e');
      return page<EventSummaryRow>(db, q, 'e.received_at', 'e.id', limit, after);
    },

    /** The event with its payload, if the scope sees it. */
    async getEvent(scope: TenantScope, id: string): Promise<WebhookEvent | undefined> {
      const row = (await whereEventVisible(db, db('webhook_event as e').select('e.*').where('e.id', id), scope, 'e').first()) as
        EventRow | undefined;
      return row ? toEvent(row) : undefined;
    },

    async listDeliveries(scope: TenantScope, f: DeliveryFilter, limit: number, after?: PageAfter): Promise<Page<DeliveryListRow>> {
      const q = deliveryRows(db, scope);
      if (f.status !== undefined) q.where('d.status', f.status);
      if (f.source !== undefined) q.where('e.source', f.source);
      if (f.endpointId !== undefined) q.where('d.endpoint_id', f.endpointId);
      if (f.eventId !== undefined) q.where('d.event_id', f.eventId);
      if (f.eventType !== undefined) q.where('e.event_type', f.eventType);
      applyRange(q, 'd.created_at', f);
      return page<DeliveryListRow>(db, q, 'd.created_at', 'd.id', limit, after);
    },

    /** The attempt log of one delivery the scope sees, in attempt order (a delivery has at most a few dozen). */
    async attemptsOf(scope: TenantScope, deliveryId: string): Promise<AttemptRow[]> {
      const q = db('webhook_delivery_attempt as a')
        .select(
          'a.delivery_id',
          'a.attempt',
          'a.outcome',
          'a.started_at',
          'a.duration_ms',
          'a.response_status',
          'a.response_body',
          'a.error',
          db.raw('left(a.request_body, ?) AS request_body', [REQUEST_BODY_SHOWN]),
          db.raw('octet_length(a.request_body) AS request_body_bytes'),
          'a.receipt',
        )
        .where('a.delivery_id', deliveryId)
        .orderBy('a.attempt');
      if (scope !== null)
        q.whereExists(
          whereEndpointIn(db, db('webhook_delivery as ad').select(db.raw('1')).whereRaw('ad.id = a.delivery_id'), scope, 'ad.endpoint_id'),
        );
      return (await q) as AttemptRow[];
    },

    async getDelivery(scope: TenantScope, id: string): Promise<DeliveryListRow | undefined> {
      return (await deliveryRows(db, scope).where('d.id', id).first()) as DeliveryListRow | undefined;
    },

    /** The event's deliveries the scope sees (a tenant: those to its own endpoints). */
    async deliveriesOfEvent(scope: TenantScope, eventId: string): Promise<DeliveryListRow[]> {
      return (await deliveryRows(db, scope)
        .where('d.event_id', eventId)
        .orderBy([
          { column: 'd.created_at', order: 'desc' },
          { column: 'd.id', order: 'desc' },
        ])) as DeliveryListRow[];
    },

    /**
     * The active endpoints of the event's source and type (the type's own and the catch-alls, as
     * prepare matches them) that the scope sees and that have no delivery of the event: the first
     * `limit` by name, how many there are, and whether the event has been routed yet. A removed
     * resource's row (inactive) is not listed.
     */
    async endpointsWithoutDelivery(
      scope: TenantScope,
      event: Pick<WebhookEvent, 'id' | 'source' | 'eventType' | 'status'>,
      limit: number,
    ): Promise<EndpointsWithoutDelivery> {
      const q = db('webhook_endpoint as p')
        .select(
          'p.id',
          'p.name',
          'p.namespace',
          'p.event_type',
          'p.filter',
          'p.denied_reason',
          db.raw('p.created_at > (SELECT e.received_at FROM webhook_event e WHERE e.id = ?) AS created_after_event', [event.id]),
          db.raw('count(*) OVER ()::int AS total'),
        )
        .where('p.source', event.source)
        .where('p.active', true)
        .where((w) => {
          w.whereNull('p.event_type');
          if (event.eventType !== null) w.orWhere('p.event_type', event.eventType);
        })
        // the (event_id, endpoint_id) unique index answers it per endpoint
        .whereNotExists(db('webhook_delivery as nd').select(db.raw('1')).whereRaw('nd.endpoint_id = p.id').where('nd.event_id', event.id))
        .orderBy([
          { column: 'p.name', order: 'asc' },
          { column: 'p.id', order: 'asc' },
        ])
        .limit(limit);
      whereNamespaceIn(q, scope, 'p.namespace');
      // an attempt tells that prepare has run; only the caller's deliveries are looked at, so that
      // a tenant does not learn whether another tenant's delivery was attempted yet (it then reads
      // "under way" a little longer)
      const attempted = async () =>
        (await whereEndpointIn(
          db,
          db('webhook_delivery').where('event_id', event.id).where('attempts', '>', 0),
          scope,
          'endpoint_id',
        ).first('id')) !== undefined;
      const [rows, routed] = await Promise.all([
        (async () => (await q) as Array<EndpointWithoutDeliveryRow & { total: number }>)(),
        event.status !== 'RECEIVED' ? Promise.resolve(true) : attempted(),
      ]);
      return {
        rows: rows.map(({ total: _, ...r }) => r),
        total: rows[0]?.total ?? 0,
        routed,
      };
    },

    async listEndpoints(
      scope: TenantScope,
      f: { source?: string; active?: boolean; state?: EndpointState },
      limit: number,
      after?: PageAfter,
    ): Promise<Page<EndpointViewRow>> {
      const q = endpointView(db);
      if (f.source !== undefined) q.where('p.source', f.source);
      if (f.active !== undefined) q.where('p.active', f.active);
      if (f.state === 'ACTIVE') q.whereNull('p.disabled_at');
      if (f.state === 'DISABLED') q.whereNotNull('p.disabled_at');
      whereNamespaceIn(q, scope, 'p.namespace');
      return page<EndpointViewRow>(db, q, 'p.created_at', 'p.id', limit, after);
    },

    async getEndpoint(scope: TenantScope, id: string): Promise<EndpointViewRow | undefined> {
      return (await whereNamespaceIn(endpointView(db).where('p.id', id), scope, 'p.namespace').first()) as EndpointViewRow | undefined;
    },

    async listCredentials(scope: TenantScope, f: { source?: string }, limit: number, after?: PageAfter): Promise<Page<CredentialViewRow>> {
      const q = db('webhook_inbound_credential as c').select(
        'c.id',
        'c.source',
        'c.namespace',
        'c.username',
        db.raw("c.verification->>'type' as verification_type"),
        'c.event_id_rule',
        'c.event_type_rule',
        'c.resource_uid',
        'c.resource_name',
        'c.created_at',
        'c.updated_at',
        pageTs(db, 'c.created_at'),
      );
      if (f.source !== undefined) q.where('c.source', f.source);
      whereNamespaceIn(q, scope, 'c.namespace');
      return page<CredentialViewRow>(db, q, 'c.created_at', 'c.id', limit, after);
    },
  };
}

export type AdminQueries = ReturnType<typeof createAdminQueries>;
