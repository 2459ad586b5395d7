import { notClaimedByHandoff } from './ordering.js';
import type { Delivery, Endpoint, Receipt, WebhookEvent } from '../domain/records.js';
import type { DeliveryStatus } from '../domain/statuses.js';
import type { OperationsEventsSettings } from '../config/settings.js';
import { prepared, type Db } from './knex.js';
import { endpointJsonSql, insertOperationalEventsSql } from './operational-events.js';
import { toDelivery, toEndpoint, toEvent, type DeliveryRow, type EndpointRow, type EventRow } from './rows.js';
import { decodeOrderingKey, encodeOrderingKey } from '../domain/ordering.js';

export interface AttemptResult {
  status: DeliveryStatus;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  /** when the attempt began, and how long the request took (null: no request was made) */
  startedAt: Date;
  durationMs: number | null;
  /**
   * No request was made: the endpoint was removed (inactive), its source no longer allows it
   * (not_allowed, docs/tenancy.md) or it is disabled. Such an outcome leaves
   * the endpoint's failure count alone; endpoint_disabled also holds the FAILED row for the redrive
   * on enable. Absent: a settled outcome counts (a SUCCESS resets the count, a FAILED adds one).
   */
  skipped?: 'endpoint_inactive' | 'endpoint_disabled' | 'endpoint_not_allowed';
  /** what was sent when it was not the stored payload (the endpoint's transform made it); the attempt log keeps it */
  requestBody?: string | null;
  /** what the broker answered to an acknowledged publish (a message id, a partition and offset, a sequence) */
  receipt?: Receipt | null;
  /**
   * A handed-off attempt of an ordered key (docs/ordering.md, "The handoff") that failed and is
   * retried: its run retries it this long from now (the backoff's delay, Retry-After as a floor).
   * Written with the attempt, as the claim's lease (the request is over, the lease fences nothing
   * more), so that a release that finds the chain's 'retry' not written keeps that floor.
   */
  handoffRetryMs?: number;
}

/** A settled attempt; autoDisabled: its FAILED was the one that reached the endpoint's threshold. */
export interface Settled {
  autoDisabled: boolean;
}

/**
 * The operational events (docs/operations-events.md) the statements that settle attempts record
 * in the same statement, so that a settled delivery and its event commit together: delivery.failed
 * for a delivery that ended FAILED for good (not one held for a redrive), unless it was a delivery
 * of an operational event itself (no loops), and endpoint.disabled for the FAILED that disabled
 * its endpoint. Both read the rows `updated` returned: a retried statement settles nothing again,
 * so it records nothing again, and the keys (the delivery's id and attempt) keep one per change.
 */
const DELIVERY_FAILED_SELECT = `SELECT 'delivery.failed' AS type, u.id || ':' || u.attempts AS key, ep.namespace,
       jsonb_build_object(${endpointJsonSql('ep')},
         'delivery', jsonb_build_object('id', u.id, 'eventId', u.event_id, 'source', ev.source, 'eventType', ev.event_type,
           'attempts', u.attempts, 'lastStatus', u."responseStatus", 'lastError', u.error,
           'adminApiPath', '/api/deliveries/' || u.id || '/attempts')) AS payload
  FROM updated u JOIN webhook_endpoint ep ON ep.id = u.endpoint_id JOIN webhook_event ev ON ev.id = u.event_id
 WHERE u.status = 'FAILED' AND NOT u.held AND ev.source <> :opsSource`;

/** endpoint.disabled: `h` the health update's rows, `which` whether this one disabled, `by` the delivery that did. */
const endpointDisabledSelect = (which: string, by: string, run: string): string =>
  `SELECT 'endpoint.disabled', ep.id || ':' || u.id || ':' || u.attempts, ep.namespace,
          jsonb_build_object(${endpointJsonSql('ep')}, 'consecutiveFailures', ${run}, 'autoDisableAfter', ep.auto_disable_after,
            'disabledBy', jsonb_build_object('deliveryId', u.id, 'eventId', u.event_id,
              'adminApiPath', '/api/deliveries/' || u.id || '/attempts'))
     FROM health h JOIN webhook_endpoint ep ON ep.id = h.id JOIN updated u ON u.endpoint_id = h.id AND ${by}
    WHERE ${which}`;

/**
 * recordAttempts' statement. Its entries come as one JSON array (one bound value, one prepared
 * statement for any number of them), `ord` their place in it.
 *
 * Endpoint health (docs/endpoint-health.md): a settled delivery that counts resets (SUCCESS) or
 * bumps (FAILED) its endpoint's run of failures, and the FAILED that reaches auto_disable_after
 * disables it. Several outcomes of one endpoint count in their order, as if recorded one by one:
 * `resets` numbers the stretches between SUCCESSes, `run` is the count after each entry (the
 * endpoint's earlier count only before the first SUCCESS), the first FAILED whose run reaches the
 * threshold is the one that disabled it, and the count after the last entry stays. The endpoint
 * row is locked (FOR UPDATE: the latest count, also under concurrent workers) and written only when
 * something can change: a SUCCESS on a healthy endpoint neither locks nor writes it (no hot row on
 * the happy path).
 */
const ATTEMPTS_SQL = `WITH input AS (
   SELECT * FROM jsonb_to_recordset(:rows::jsonb) AS i(
     ord int, id uuid, status text, outcome text, "responseStatus" int, "responseBody" text, error text,
     "startedAt" timestamptz, "durationMs" int, held boolean, counts boolean, "requestBody" text, receipt jsonb,
     "handoffRetryMs" float8)),
 updated AS (
   UPDATE webhook_delivery d
      SET status = i.status, attempts = d.attempts + 1,
          last_response_status = i."responseStatus", last_response_body = i."responseBody", last_error = i.error,
          last_attempt_at = now(), completed_at = CASE WHEN i.status = 'PENDING' THEN NULL ELSE now() END,
          redrive_on_enable = i.held, updated_at = now(),
          ordering_handoff_until = CASE WHEN i."handoffRetryMs" IS NOT NULL AND d.ordering_handoff = 'claimed'
                                        THEN now() + make_interval(secs => i."handoffRetryMs" / 1000) ELSE d.ordering_handoff_until END
     FROM input i
    WHERE d.id = i.id AND d.status = 'PENDING'
 RETURNING d.id, d.endpoint_id, d.event_id, d.attempts, i.ord, i.status, i.outcome, i."startedAt", i."durationMs",
           i."responseStatus", i."responseBody", i.error, i.counts, i."requestBody", i.receipt, i.held),
 logged AS (
   INSERT INTO webhook_delivery_attempt
          (delivery_id, attempt, outcome, started_at, duration_ms, response_status, response_body, error, request_body, receipt)
   SELECT id, attempts, outcome, "startedAt", "durationMs", "responseStatus", "responseBody", error, "requestBody", receipt FROM updated),
 counted AS (
   SELECT endpoint_id, ord, status,
          count(*) FILTER (WHERE status = 'SUCCESS') OVER (PARTITION BY endpoint_id ORDER BY ord) AS resets
     FROM updated WHERE counts),
 locked AS (
   SELECT ep.id, ep.consecutive_failures AS before, ep.disabled_at IS NULL AND ep.auto_disable_after > 0 AS can_disable,
          ep.auto_disable_after AS threshold
     FROM webhook_endpoint ep
    WHERE ep.id IN (SELECT endpoint_id FROM counted)
      AND (ep.consecutive_failures > 0 OR ep.id IN (SELECT endpoint_id FROM counted WHERE status = 'FAILED'))
      FOR UPDATE),
 runs AS (
   SELECT c.endpoint_id, c.ord, c.status, l.can_disable, l.threshold,
          CASE WHEN c.resets = 0 THEN l.before ELSE 0 END
            + count(*) FILTER (WHERE c.status = 'FAILED') OVER (PARTITION BY c.endpoint_id, c.resets ORDER BY c.ord) AS run
     FROM counted c JOIN locked l ON l.id = c.endpoint_id),
 after AS (
   SELECT DISTINCT ON (endpoint_id) endpoint_id, run FROM runs ORDER BY endpoint_id, ord DESC),
 disabler AS (
   SELECT DISTINCT ON (endpoint_id) endpoint_id, ord FROM runs
    WHERE status = 'FAILED' AND can_disable AND run >= threshold ORDER BY endpoint_id, ord),
 health AS (
   UPDATE webhook_endpoint ep
      SET consecutive_failures = a.run, disabled_at = CASE WHEN d.ord IS NULL THEN ep.disabled_at ELSE now() END
     FROM after a LEFT JOIN disabler d ON d.endpoint_id = a.endpoint_id
    WHERE ep.id = a.endpoint_id AND (ep.consecutive_failures <> a.run OR d.ord IS NOT NULL)
 RETURNING ep.id, d.ord AS disabled_by, a.run),
 operational AS (
   ${insertOperationalEventsSql(
     ':opsSource',
     `${DELIVERY_FAILED_SELECT}
      UNION ALL
      ${endpointDisabledSelect('h.disabled_by IS NOT NULL', 'u.ord = h.disabled_by', 'h.run')}`,
   )})
 SELECT u.ord, coalesce(h.disabled_by = u.ord, false) AS auto_disabled
   FROM updated u LEFT JOIN health h ON h.id = u.endpoint_id`;

/**
 * recordAttempts' statement for one attempt, the common case (an event with one endpoint, a quiet
 * worker): ATTEMPTS_SQL's rules for one row, with plain parameters instead of a JSON array, which
 * cost Postgres more than they save for a single row.
 */
const ATTEMPT_SQL = `WITH updated AS (
   UPDATE webhook_delivery
      SET status = :status, attempts = attempts + 1,
          last_response_status = :responseStatus, last_response_body = :responseBody, last_error = :error,
          last_attempt_at = now(), completed_at = CASE WHEN :status = 'PENDING' THEN NULL ELSE now() END,
          redrive_on_enable = :held, updated_at = now(),
          ordering_handoff_until = CASE WHEN :handoffRetryMs::float8 IS NOT NULL AND ordering_handoff = 'claimed'
                                        THEN now() + make_interval(secs => :handoffRetryMs::float8 / 1000) ELSE ordering_handoff_until END
    WHERE id = :id AND status = 'PENDING'
 RETURNING id, endpoint_id, event_id, attempts, status, last_response_status AS "responseStatus", last_error AS error,
           redrive_on_enable AS held),
 logged AS (
   INSERT INTO webhook_delivery_attempt
          (delivery_id, attempt, outcome, started_at, duration_ms, response_status, response_body, error, request_body, receipt)
   SELECT id, attempts, :outcome, :startedAt, :durationMs, :responseStatus, :responseBody, :error, :requestBody, :receipt::jsonb FROM updated),
 health AS (
   UPDATE webhook_endpoint ep
      SET consecutive_failures = CASE WHEN :status = 'SUCCESS' THEN 0 ELSE ep.consecutive_failures + 1 END,
          disabled_at = CASE WHEN :status = 'FAILED' AND ep.disabled_at IS NULL AND ep.auto_disable_after > 0
                              AND ep.consecutive_failures + 1 >= ep.auto_disable_after
                             THEN now() ELSE ep.disabled_at END
     FROM updated u
    WHERE ep.id = u.endpoint_id AND :counts AND (:status = 'FAILED' OR ep.consecutive_failures > 0)
 RETURNING ep.id, ep.disabled_at IS NOT NULL AND ep.disabled_at = now() AS auto_disabled, ep.consecutive_failures AS run),
 operational AS (
   ${insertOperationalEventsSql(
     ':opsSource',
     `${DELIVERY_FAILED_SELECT}
      UNION ALL
      ${endpointDisabledSelect('h.auto_disabled', 'true', 'h.run')}`,
   )})
 SELECT (SELECT auto_disabled FROM health) AS auto_disabled FROM updated`;

interface AttemptRow extends EventRow {
  delivery: DeliveryRow;
  endpoint: EndpointRow;
}

/** row_to_json renders timestamps as text; the domain records carry Dates. */
function withDates<T extends object>(row: T, keys: ReadonlyArray<keyof T>): T {
  const out = { ...row };
  for (const k of keys) {
    const v = out[k];
    if (typeof v === 'string') (out as Record<keyof T, unknown>)[k] = new Date(v);
  }
  return out;
}

/**
 * A delivery a fanout run prepared: its row, its endpoint and its event as one attempt needs them
 * (the worker hands them to the delivery's first attempt: activities/attempt-handoff.ts). The
 * rows of one run share one event object.
 */
export interface PreparedRow {
  delivery: Delivery;
  endpoint: Endpoint;
  event: WebhookEvent;
  /**
   * prepareRun's `deferKeys`: the ordered delivery's key (as the column stores it), decided here
   * and not written yet; the caller's turn check writes it (ordering.firstTurn's `key`)
   */
  keyToStore?: string;
}

/**
 * A row of the prepare statement: one per matched endpoint, with its delivery, which is missing
 * when the statement neither inserted it nor saw it in its snapshot, or when the endpoint has a
 * filter not expected to accept the event (its row is inserted once the filter accepted it); a
 * single row without an endpoint when none matched; no row when there is no such event. The
 * event's payload is on the first row only (the others repeat the small columns), so a payload
 * crosses the wire once.
 */
type PrepareRunRow = Omit<EventRow, 'payload'> & {
  payload: Buffer | null;
  endpoint: EndpointRow | null;
  delivery: DeliveryRow | null;
};

/** An endpoint with a filter whose filter decides the event now (prepareRun). */
export interface FilterCandidate {
  endpoint: Endpoint;
  /** what its row says: its filter accepted most of its recent events (filter_expects_accept) */
  expected: boolean;
}

/** What an endpoint's filter said of the event, and what its row should say next. */
export interface FilterVerdict {
  accepted: boolean;
  expectNext: boolean;
}

/**
 * How prepare routes by content (activities/prepare.ts evaluates the CEL and keeps the forecast,
 * activities/filter-forecast.ts): one verdict per candidate, in their order.
 */
export type ContentRouting = (event: WebhookEvent, candidates: readonly FilterCandidate[]) => FilterVerdict[];

/**
 * An ordered delivery's key (activities/prepare.ts evaluates spec.ordering.key): a string, or null
 * for the endpoint's no-key sequence (the expression failed or gave no string).
 */
export type OrderingKeyOf = (event: WebhookEvent, endpoint: Endpoint) => string | null;

/** Without key evaluation, every undecided row goes into its endpoint's no-key sequence. */
const NO_ORDERING_KEYS: OrderingKeyOf = () => null;

/** Without content routing, no endpoint with a filter gets the event. */
const NO_CONTENT_ROUTING: ContentRouting = (_event, candidates) => candidates.map((c) => ({ accepted: false, expectNext: c.expected }));

/**
 * A surprise made durable in one statement (the rows an endpoint's expectation put in place were
 * the wrong ones): the refused rows, still untouched (PENDING and never attempted), deleted; the
 * accepted endpoints' rows inserted or, when an earlier run of the same event inserted them,
 * returned as they are (the no-op update returns an existing row and waits for a concurrent
 * insert to commit); and the expectations that changed written on their endpoints. Lists are read
 * with a qualified column (`listed.id`): a bare `id` in such a subquery names the outer row's id,
 * and matches every row.
 */
async function settleSurprises(
  db: Db,
  eventId: string,
  lists: { refused: readonly string[]; accepted: readonly string[]; expect: Readonly<Record<string, boolean>> },
): Promise<DeliveryRow[]> {
  const res = await prepared<{ rows: Array<{ delivery: DeliveryRow }> }>(
    db,
    'deliveries.settleSurprises',
    `WITH refused AS (
       DELETE FROM webhook_delivery
        WHERE id IN (SELECT listed.id::uuid FROM json_array_elements_text(:refused::json) AS listed(id))
          AND status = 'PENDING' AND attempts = 0),
     expectation AS (
       UPDATE webhook_endpoint ep SET filter_expects_accept = listed.value::boolean
         FROM json_each_text(:expect::json) AS listed(id, value)
        WHERE ep.id = listed.id::uuid AND ep.filter_expects_accept <> listed.value::boolean)
     INSERT INTO webhook_delivery (event_id, endpoint_id, ordering_position, ordering_key)
     SELECT :eventId, ep.id, ${ORDERING_COLUMNS}
       FROM json_array_elements_text(:accepted::json) AS listed(id)
       JOIN webhook_endpoint ep ON ep.id = listed.id::uuid
       CROSS JOIN (SELECT position FROM webhook_event WHERE id = :eventId) ev
     ON CONFLICT (event_id, endpoint_id) DO UPDATE SET event_id = EXCLUDED.event_id
     RETURNING row_to_json(webhook_delivery.*) AS delivery`,
    { eventId, refused: JSON.stringify(lists.refused), accepted: JSON.stringify(lists.accepted), expect: JSON.stringify(lists.expect) },
  );
  return res.rows.map((r) => r.delivery);
}

/**
 * An ordered endpoint's row (`ep`, of the event `ev`) carries the event's position and, when the
 * whole endpoint is one sequence, its key at once; a key from CEL is decided by prepare after the
 * statement (NULL until then, which holds every key of the endpoint: docs/ordering.md). Every
 * ordered endpoint's row is inserted up front, its filter's expectation aside, so that a later
 * event never finds this one's place empty. Events stored before migration 081 are not ordered.
 */
const ORDERING_COLUMNS = `CASE WHEN ep.ordering_on_failure IS NOT NULL THEN ev.position END,
       CASE WHEN ep.ordering_on_failure IS NOT NULL AND ev.position IS NOT NULL AND ep.ordering_key_cel IS NULL THEN '${encodeOrderingKey('')}' END`;

/** Oldest delivery first, rows created together in the order of their endpoints' creation. */
async function prepareRunRows(db: Db, eventId: string, workflowId: string, operations: OperationsEventsSettings): Promise<PrepareRunRow[]> {
  const res = await prepared<{ rows: PrepareRunRow[] }>(
    db,
    'deliveries.prepareRun',
    `WITH event AS (
       SELECT id, source, external_event_id, event_type, payload, content_type, headers, status, workflow_id,
              published_at, received_at, completed_at, subject_namespace, position
         FROM webhook_event WHERE id = :eventId),
     recorded AS (
       UPDATE webhook_event SET workflow_id = :workflowId, updated_at = now() WHERE id = :eventId AND workflow_id IS NULL),
     matched AS (
       SELECT ep.*
         FROM webhook_endpoint ep JOIN event ev ON ep.source = ev.source
        WHERE ep.active AND ep.denied_reason IS NULL AND (ep.event_type IS NULL OR ep.event_type = ev.event_type)
          -- an operational event goes to its subject's namespace and the platform's (docs/operations-events.md)
          AND (ev.source <> :opsSource OR ep.namespace = ev.subject_namespace
               OR ep.namespace IN (SELECT listed.ns FROM json_array_elements_text(:platform::json) AS listed(ns)))),
     inserted AS (
       INSERT INTO webhook_delivery (event_id, endpoint_id, ordering_position, ordering_key)
       SELECT :eventId, ep.id, ${ORDERING_COLUMNS}
         FROM matched ep CROSS JOIN event ev
        WHERE ep.filter IS NULL OR ep.filter_expects_accept OR (ep.ordering_on_failure IS NOT NULL AND ev.position IS NOT NULL)
       ON CONFLICT (event_id, endpoint_id) DO NOTHING
       RETURNING *),
     delivery AS (
       SELECT * FROM inserted
       UNION ALL
       SELECT * FROM webhook_delivery
        WHERE event_id = :eventId AND endpoint_id IN (SELECT id FROM matched))
     SELECT CASE WHEN m.id IS NULL THEN NULL ELSE row_to_json(m) END AS endpoint,
            CASE WHEN d.id IS NULL THEN NULL ELSE row_to_json(d) END AS delivery,
            ev.id, ev.source, ev.external_event_id, ev.event_type, ev.content_type, ev.headers, ev.status, ev.workflow_id,
            ev.published_at, ev.received_at, ev.completed_at,
            CASE WHEN row_number() OVER (ORDER BY d.created_at, m.created_at, m.id) = 1 THEN ev.payload END AS payload
       FROM event ev
       LEFT JOIN matched m ON true
       LEFT JOIN delivery d ON d.endpoint_id = m.id
      ORDER BY d.created_at, m.created_at, m.id`,
    { eventId, workflowId, opsSource: operations.source, platform: JSON.stringify(operations.platformNamespaces) },
  );
  return res.rows;
}

const deliveryDates = ['last_attempt_at', 'completed_at', 'created_at'] as const;
const endpointDates = ['created_at', 'updated_at', 'disabled_at', 'paused_until'] as const;

/**
 * For a reopen (a replay): the delivery's event still has its payload, and its row is held FOR
 * SHARE until the reopen commits. The retention job locks the event's row before it deletes the
 * event or drops its payload and then checks again that no delivery is PENDING, so a delivery is
 * never reopened for an event that is going, and an event is never dropped under a replay.
 */
export const eventWithPayload = (db: Db) =>
  db('webhook_event as e').select(db.raw('1')).whereRaw('e.id = webhook_delivery.event_id').whereNull('e.payload_dropped_at').forShare();

export function createDeliveryRepository(db: Db, operations: OperationsEventsSettings) {
  /**
   * The keys of the ordered rows prepare's statement left undecided (their endpoint's key is CEL),
   * in one statement; a row a retried prepare already decided keeps its key (docs/ordering.md).
   */
  async function decideKeys(rows: PreparedRow[], keyOf: OrderingKeyOf, defer = false): Promise<PreparedRow[]> {
    const open = rows.filter(
      (r) => r.delivery.ordering !== null && r.delivery.ordering.key === undefined && r.delivery.status === 'PENDING',
    );
    if (open.length === 0) return rows;
    const keys = Object.fromEntries(open.map((r) => [r.delivery.id, encodeOrderingKey(keyOf(r.event, r.endpoint))]));
    if (defer) {
      // written by the caller's turn check, in its statement (one round trip less per ordered delivery)
      return rows.map((r) => {
        const key = keys[r.delivery.id];
        if (key === undefined || r.delivery.ordering === null) return r;
        return { ...r, delivery: { ...r.delivery, ordering: { ...r.delivery.ordering, key: decodeOrderingKey(key) } }, keyToStore: key };
      });
    }
    const res = await prepared<{ rows: Array<{ id: string; ordering_key: string }> }>(
      db,
      'deliveries.decideKeys',
      `UPDATE webhook_delivery d SET ordering_key = coalesce(d.ordering_key, listed.key)
         FROM json_each_text(:keys::json) AS listed(id, key)
        WHERE d.id = listed.id::uuid
       RETURNING d.id, d.ordering_key`,
      { keys: JSON.stringify(keys) },
    );
    const decided = new Map(res.rows.map((r) => [r.id, decodeOrderingKey(r.ordering_key)]));
    return rows.map((r) =>
      r.delivery.ordering !== null && decided.has(r.delivery.id)
        ? { ...r, delivery: { ...r.delivery, ordering: { ...r.delivery.ordering, key: decided.get(r.delivery.id) } } }
        : r,
    );
  }

  /**
   * Settles attempts of distinct deliveries in one statement (all or nothing): each row's latest
   * state, a line of the attempt log each and their endpoints' health. For each entry, in order,
   * null when its row was not PENDING: another run settled it first. See AttemptResult.skipped
   * for what counts towards auto-disable, and ATTEMPTS_SQL for how several outcomes of one
   * endpoint count.
   */
  async function recordAttempts(entries: ReadonlyArray<{ id: string; result: AttemptResult }>): Promise<Array<Settled | null>> {
    const rows = entries.map(({ id, result: r }, ord) => ({
      ord,
      id,
      status: r.status,
      outcome: r.status === 'PENDING' ? 'RETRYING' : r.status,
      responseStatus: r.responseStatus,
      responseBody: r.responseBody,
      error: r.error,
      startedAt: r.startedAt,
      durationMs: r.durationMs === null ? null : Math.round(r.durationMs),
      held: r.skipped === 'endpoint_disabled',
      counts: r.status !== 'PENDING' && r.skipped === undefined,
      requestBody: r.requestBody ?? null,
      receipt: r.receipt ?? null,
      handoffRetryMs: r.handoffRetryMs ?? null,
    }));
    const settled: Array<Settled | null> = rows.map(() => null);
    const [one] = rows;
    if (one === undefined) return settled;
    if (rows.length === 1) {
      const { ord: _, receipt, ...rest } = one;
      // the single statement binds the receipt as JSON text (the batch carries it inside its JSON array)
      const params = { ...rest, receipt: receipt === null ? null : JSON.stringify(receipt), opsSource: operations.source };
      const res = await prepared<{ rows: Array<{ auto_disabled: boolean | null }> }>(db, 'deliveries.recordAttempt', ATTEMPT_SQL, params);
      const row = res.rows[0];
      return [row ? { autoDisabled: row.auto_disabled === true } : null];
    }
    const res = await prepared<{ rows: Array<{ ord: number; auto_disabled: boolean }> }>(db, 'deliveries.recordAttempts', ATTEMPTS_SQL, {
      rows: JSON.stringify(rows),
      opsSource: operations.source,
    });
    for (const row of res.rows) settled[row.ord] = { autoDisabled: row.auto_disabled };
    return settled;
  }

  return {
    /**
     * A fanout run's deliveries: records the run's workflow id on the event (when none is recorded
     * yet), matches the event's active endpoints that its source allows (denied_reason NULL,
     * docs/tenancy.md; routing: the event's type, or catch-all), creates one PENDING row per
     * (event, endpoint) and reads the rows back, in one round trip. Endpoints with a filter get a
     * row when `routing` accepts the event; their rows are put in place up front where their
     * filter is expected to accept it, so a second statement only follows a surprise
     * (docs/content-routing.md, "What a filter costs"). Safe to call again when the activity is
     * retried: an existing row is returned as it is (a settled one too; the caller skips those),
     * a filter decides again over a row it never let be attempted, and the workflow id recorded
     * first stays. undefined: no such event.
     */
    async prepareRun(
      eventId: string,
      workflowId: string,
      routing: ContentRouting = NO_CONTENT_ROUTING,
      keyOf: OrderingKeyOf = NO_ORDERING_KEYS,
      /** deferKeys: ordered deliveries' keys decided but not written (PreparedRow.keyToStore) */
      opts: { deferKeys?: boolean } = {},
    ): Promise<PreparedRow[] | undefined> {
      const inserts = (e: EndpointRow) => e.filter === null || e.filter_expects_accept;
      let rows = await prepareRunRows(db, eventId, workflowId, operations);
      // The rows the statement inserted and those that were there before it (a retried prepare)
      // both come from its snapshot, so a row another run's transaction inserted meanwhile is in
      // neither (the insert waited for that transaction: it has committed). Run again, the
      // statement sees it, and inserts nothing more.
      if (rows.some((r) => r.endpoint !== null && r.delivery === null && inserts(r.endpoint))) {
        rows = await prepareRunRows(db, eventId, workflowId, operations);
      }
      const first = rows[0];
      if (!first) return undefined;
      const { endpoint: _e, delivery: _d, payload, ...eventColumns } = first;
      const event = toEvent({ ...eventColumns, payload: payload ?? Buffer.alloc(0), traceparent: null });
      const prepared: Array<PreparedRow | undefined> = [];
      /** endpoints whose filter decides now: no row yet, or one nothing has attempted (a retried prepare's too) */
      const undecided: Array<FilterCandidate & { row: DeliveryRow | null; at: number }> = [];
      for (const r of rows) {
        if (r.endpoint === null) continue;
        const endpoint = toEndpoint(withDates(r.endpoint, endpointDates));
        if (endpoint.filter !== null && (r.delivery === null || (r.delivery.status === 'PENDING' && r.delivery.attempts === 0))) {
          undecided.push({ endpoint, expected: r.endpoint.filter_expects_accept, row: r.delivery, at: prepared.length });
          prepared.push(undefined);
        } else if (r.delivery !== null) {
          prepared.push({ delivery: toDelivery(withDates(r.delivery, deliveryDates)), endpoint, event });
        }
      }
      if (undecided.length === 0)
        return decideKeys(
          prepared.filter((p) => p !== undefined),
          keyOf,
          opts.deferKeys,
        );
      const verdicts = routing(event, undecided);
      const refused: string[] = [];
      const accepted: string[] = [];
      const expect: Record<string, boolean> = {};
      undecided.forEach((u, i) => {
        const verdict = verdicts[i] ?? { accepted: false, expectNext: u.expected };
        if (u.row !== null && !verdict.accepted) refused.push(u.row.id);
        if (u.row === null && verdict.accepted) accepted.push(u.endpoint.id);
        if (verdict.expectNext !== u.expected) expect[u.endpoint.id] = verdict.expectNext;
        if (verdict.accepted && u.row !== null)
          prepared[u.at] = { delivery: toDelivery(withDates(u.row, deliveryDates)), endpoint: u.endpoint, event };
      });
      // Only a surprise costs a statement; a changed expectation waits for one (it follows surprises).
      if (refused.length + accepted.length > 0) {
        const inserted = new Map((await settleSurprises(db, eventId, { refused, accepted, expect })).map((d) => [d.endpoint_id, d]));
        for (const u of undecided) {
          const row = u.row === null ? inserted.get(u.endpoint.id) : undefined;
          if (row) prepared[u.at] = { delivery: toDelivery(withDates(row, deliveryDates)), endpoint: u.endpoint, event };
        }
      }
      return decideKeys(
        prepared.filter((p) => p !== undefined),
        keyOf,
        opts.deferKeys,
      );
    },

    /**
     * A delivery with its endpoint and event, in one round trip: what one attempt needs. The
     * endpoint is read fresh on every attempt so rotated secrets apply to the next retry.
     */
    async loadAttempt(id: string): Promise<{ delivery: Delivery; endpoint: Endpoint; event: WebhookEvent } | undefined> {
      const res = await prepared<{ rows: AttemptRow[] }>(
        db,
        'deliveries.loadAttempt',
        `SELECT row_to_json(d) AS delivery, row_to_json(ep) AS endpoint,
                ev.id, ev.source, ev.external_event_id, ev.event_type, ev.payload, ev.content_type, ev.headers,
                ev.status, ev.workflow_id, ev.published_at, ev.received_at, ev.completed_at
           FROM webhook_delivery d
           JOIN webhook_endpoint ep ON ep.id = d.endpoint_id
           JOIN webhook_event ev ON ev.id = d.event_id
          WHERE d.id = ?`,
        [id],
      );
      const row = res.rows[0];
      if (!row) return undefined;
      const { delivery, endpoint, ...event } = row;
      return {
        delivery: toDelivery(withDates(delivery, deliveryDates)),
        endpoint: toEndpoint(withDates(endpoint, endpointDates)),
        event: toEvent(event),
      };
    },

    async get(id: string): Promise<Delivery | undefined> {
      const row = await db<DeliveryRow>('webhook_delivery').where({ id }).first();
      return row ? toDelivery(row) : undefined;
    },

    async listByEvent(eventId: string): Promise<Delivery[]> {
      const rows = await db<DeliveryRow>('webhook_delivery').where({ event_id: eventId }).orderBy('created_at');
      return rows.map(toDelivery);
    },

    /** Settles one attempt: recordAttempts with one entry. */
    async recordAttempt(id: string, r: AttemptResult): Promise<Settled | null> {
      const [settled = null] = await recordAttempts([{ id, result: r }]);
      return settled;
    },

    recordAttempts,

    /** Replay: a FAILED delivery goes back to PENDING. Returns false when it was not FAILED. */
    async reopenFailed(id: string): Promise<boolean> {
      const n = await db('webhook_delivery')
        .where({ id, status: 'FAILED' })
        .whereRaw(notClaimedByHandoff('webhook_delivery'))
        .whereExists(eventWithPayload(db))
        .update({ status: 'PENDING', completed_at: null, updated_at: db.fn.now() });
      return n > 0;
    },
  };
}

export type DeliveryRepository = ReturnType<typeof createDeliveryRepository>;
