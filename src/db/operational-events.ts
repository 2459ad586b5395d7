import type { Db } from './knex.js';

/**
 * The service's own happenings as events of a reserved source (docs/operations-events.md). An
 * operational event is a webhook_event row like any third party's, written in the transaction of
 * the change it reports and left unpublished (published_at NULL): the row is its own outbox, which
 * ingest's sweeper publishes within a second (ingest/sweeper.ts), and from there it is routed,
 * filtered, transformed, signed, retried and replayed like any event. A crash before the commit
 * loses the change and its event together; after it, the row is there for the sweeper. Its
 * external id is a key of the change (`<type>:<key>`), unique per source: writing the same change
 * again (a retried statement, a second reconcile) inserts nothing, and a second publish of the row
 * starts no second fanout (the workflow id is the event id).
 */

export const OPERATIONAL_EVENT_TYPES = [
  'endpoint.disabled',
  'endpoint.enabled',
  'endpoint.not_allowed',
  'delivery.failed',
  'replay.completed',
  'credential.not_ready',
  'ordering.key_blocked',
  'ordering.key_unblocked',
] as const;
export type OperationalEventType = (typeof OPERATIONAL_EVENT_TYPES)[number];

/** The resource an operational event is about; its namespace routes it (docs/operations-events.md, "Who receives what"). */
export interface OperationalSubject {
  kind: 'WebhookEndpoint' | 'InboundCredential' | 'WebhookReplay' | 'BulkReplay';
  /** null: a row written without a namespace (by hand, before tenancy): only the platform namespaces receive it */
  namespace: string | null;
  name: string;
  uid: string | null;
  /** where the admin API shows what it is about, e.g. `/api/deliveries?endpointId=<id>` */
  adminApiPath: string;
}

export interface OperationalEvent {
  type: OperationalEventType;
  /**
   * What makes this change one change: the same key is written once (e.g. a delivery's id and its
   * attempt count, a WebhookReplay's uid). Without one, two writes of the same change are two events.
   */
  key: string;
  subject: OperationalSubject;
  /** the type's own fields, beside `type`, `occurredAt` and `subject` in the payload */
  data?: Readonly<Record<string, unknown>>;
}

/** An endpoint as operational events name it: the same fields in every type that names one. */
export interface EndpointRef {
  id: string;
  namespace: string | null;
  /** the resource's name, without its namespace */
  name: string;
  uid: string | null;
  source: string;
}

/** The endpoint row's name is `<namespace>/<name>`; the payload names the resource as Kubernetes does. */
export const resourceName = (rowName: string, namespace: string | null): string =>
  namespace !== null && rowName.startsWith(`${namespace}/`) ? rowName.slice(namespace.length + 1) : rowName;

export const endpointAdminPath = (endpointId: string): string => `/api/deliveries?endpointId=${endpointId}`;

/** The subject and `endpoint` field of an event about an endpoint (endpoint.*, ordering.*). */
export function aboutEndpoint(e: EndpointRef): Pick<OperationalEvent, 'subject'> & { data: { endpoint: EndpointRef } } {
  return {
    subject: { kind: 'WebhookEndpoint', namespace: e.namespace, name: e.name, uid: e.uid, adminApiPath: endpointAdminPath(e.id) },
    data: { endpoint: e },
  };
}

/** The payload every operational event carries (what a filter sees as `event.data`). */
export function operationalPayload(e: OperationalEvent, occurredAt: Date): Record<string, unknown> {
  return { ...e.data, type: e.type, occurredAt: occurredAt.toISOString(), subject: e.subject };
}

/**
 * Records an operational event in `db`, which should be the transaction of the change it reports
 * (`db.transaction(async (trx) => { ...change...; await recordOperationalEvent(trx, source, e) })`).
 * `source` is OPERATIONS_EVENTS_SOURCE (config's `operations.source`; repositories bind it:
 * `repos.operationalEvents.record`). Returns false when this change's event was recorded before.
 */
export async function recordOperationalEvent(db: Db, source: string, e: OperationalEvent): Promise<boolean> {
  const payload = JSON.stringify(operationalPayload(e, new Date()));
  const res = await db.raw<{ rows: Array<{ id: string }> }>(
    `INSERT INTO webhook_event (source, external_event_id, event_type, payload, content_type, headers, subject_namespace)
     VALUES (?, ?, ?, convert_to(?, 'UTF8'), 'application/json', '{}'::jsonb, ?)
     ON CONFLICT (source, external_event_id) WHERE external_event_id IS NOT NULL DO NOTHING
     RETURNING id`,
    [source, `${e.type}:${e.key}`, e.type, payload, e.subject.namespace],
  );
  return res.rows.length > 0;
}

/**
 * The same row from inside one SQL statement (db/deliveries.ts records delivery.failed and
 * endpoint.disabled in the statement that settles the attempt): an INSERT of the rows of `select`,
 * whose columns are `type`, `key`, `namespace` and `payload` (jsonb, without `type` and
 * `occurredAt`, which this adds). `source` is the name of a bound parameter.
 */
export const insertOperationalEventsSql = (source: string, select: string): string =>
  `INSERT INTO webhook_event (source, external_event_id, event_type, payload, content_type, headers, subject_namespace)
   SELECT ${source}, o.type || ':' || o.key, o.type,
          convert_to((o.payload || jsonb_build_object('type', o.type,
            'occurredAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))::text, 'UTF8'),
          'application/json', '{}'::jsonb, o.namespace
     FROM (${select}) o
   ON CONFLICT (source, external_event_id) WHERE external_event_id IS NOT NULL DO NOTHING`;

/**
 * SQL for an endpoint row `ep` as EndpointRef (the query string's `?` is chr(63): knex would take a
 * question mark for a placeholder) and as the subject, the same shape aboutEndpoint
 * gives: `'subject', <subject>, 'endpoint', <endpoint>` inside a jsonb_build_object.
 */
export const endpointJsonSql = (ep: string): string => {
  const name = `CASE WHEN ${ep}.namespace IS NOT NULL AND starts_with(${ep}.name, ${ep}.namespace || '/')
                     THEN substr(${ep}.name, length(${ep}.namespace) + 2) ELSE ${ep}.name END`;
  return `'subject', jsonb_build_object('kind', 'WebhookEndpoint', 'namespace', ${ep}.namespace, 'name', ${name},
            'uid', ${ep}.resource_uid, 'adminApiPath', '/api/deliveries' || chr(63) || 'endpointId=' || ${ep}.id),
          'endpoint', jsonb_build_object('id', ${ep}.id, 'namespace', ${ep}.namespace, 'name', ${name},
            'uid', ${ep}.resource_uid, 'source', ${ep}.source)`;
};

/** recordOperationalEvent bound to the configured source: what repositories expose. */
export function createOperationalEvents(db: Db, source: string) {
  return {
    source,
    /** Records `e` in `trx` (the change's transaction) or, without one, on its own. */
    record: (e: OperationalEvent, trx: Db = db): Promise<boolean> => recordOperationalEvent(trx, source, e),
  };
}

export type OperationalEvents = ReturnType<typeof createOperationalEvents>;
