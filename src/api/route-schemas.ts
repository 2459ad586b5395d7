import { Type, type Static, type TSchema } from '@fastify/type-provider-typebox';
import { ExtractionRule, SOURCE_PATTERN } from '../custom-resources/specs.js';
import { AUTH_TYPES, DELIVERY_STATUSES, EVENT_STATUSES, HTTP_METHODS, SIGNING_TYPES } from '../domain/statuses.js';
import { DENIED_REASONS, DESTINATION_TYPES, ENDPOINT_STATES, OAUTH2_CLIENT_AUTHENTICATIONS } from '../domain/records.js';
import { REQUEST_BODY_SHOWN } from '../db/admin-queries.js';

// Route schemas of the admin API: they validate requests, shape responses (fields not listed are
// never serialized) and generate the OpenAPI document.

const StringEnum = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Timestamp = (description?: string) => Type.String({ format: 'date-time', ...(description ? { description } : {}) });
const Uuid = (description?: string) => Type.String({ format: 'uuid', ...(description ? { description } : {}) });

export const PAGE_SIZE = { default: 50, max: 200 } as const;
export const BULK_REPLAY_LIMIT = { default: 100, max: 1000 } as const;

// ---- errors ---------------------------------------------------------------------------------

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'URI naming the problem kind' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.Optional(Type.String()),
    code: Type.String({ description: 'stable machine-readable reason, e.g. invalid_token, not_replayable' }),
  },
  { title: 'Problem', description: 'RFC 9457 problem details (application/problem+json)' },
);

const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ProblemSchema } },
});

/** Error answers every authenticated route can give. */
export const authErrors = {
  400: problem('Invalid parameters, filters or cursor'),
  401: problem('Missing (WWW-Authenticate: Bearer realm="webhooks"), expired or invalid token (error="invalid_token")'),
  403: problem('Valid token without the required permission (error="insufficient_scope")'),
  503: problem('A dependency (Postgres, the identity provider key set, Temporal) is unavailable; retry after Retry-After'),
};
/** A success response with the description the OpenAPI document shows for it. */
export const described = <T extends TSchema>(schema: T, description: string): T => ({ ...schema, description });

export const notFound = { 404: problem('No resource with this id') };
export const conflict = (description: string) => ({ 409: problem(description) });

// ---- parameters ------------------------------------------------------------------------------

const pageParams = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_SIZE.max, description: `page size, default ${PAGE_SIZE.default}` })),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'opaque: the nextCursor of the previous page' })),
};
const timeParams = (column: string) => ({
  from: Type.Optional(Timestamp(`only those with ${column} at or after this instant (RFC 3339, with offset)`)),
  to: Type.Optional(Timestamp(`only those with ${column} before this instant (RFC 3339, with offset)`)),
});
// Postgres text can not hold NUL: a filter with one would fail the query, so the schema refuses it
const NO_NUL = '^[^\\u0000]*$';
const SourceParam = Type.String({ pattern: SOURCE_PATTERN, description: 'a source name' });
const TextParam = (description: string) => Type.String({ minLength: 1, maxLength: 200, pattern: NO_NUL, description });

export const IdParams = Type.Object({ id: Uuid() }, { additionalProperties: false });

export const EventListQuery = Type.Object(
  {
    source: Type.Optional(SourceParam),
    status: Type.Optional(StringEnum(EVENT_STATUSES)),
    type: Type.Optional(TextParam('event type')),
    externalId: Type.Optional(
      TextParam("the sender's event id (body `id`, or Webhook-Id / X-Event-Id); needs `source`, the pair is unique"),
    ),
    ...timeParams('receivedAt'),
    ...pageParams,
  },
  { additionalProperties: false },
);

export const DeliveryListQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(DELIVERY_STATUSES)),
    source: Type.Optional(SourceParam),
    endpointId: Type.Optional(Uuid()),
    eventId: Type.Optional(Uuid()),
    eventType: Type.Optional(TextParam("the event's type, exactly (as the bulk replay's eventType)")),
    ...timeParams('createdAt'),
    ...pageParams,
  },
  { additionalProperties: false },
);

export const EndpointListQuery = Type.Object(
  {
    source: Type.Optional(SourceParam),
    active: Type.Optional(Type.Boolean()),
    state: Type.Optional(StringEnum(ENDPOINT_STATES, 'ACTIVE, or DISABLED by auto-disable')),
    ...pageParams,
  },
  { additionalProperties: false },
);

export const CredentialListQuery = Type.Object({ source: Type.Optional(SourceParam), ...pageParams }, { additionalProperties: false });

export const BulkReplayBody = Type.Object(
  {
    source: Type.Optional(SourceParam),
    endpointId: Type.Optional(Uuid()),
    eventType: Type.Optional(TextParam('event type')),
    ...timeParams('the delivery createdAt'),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: BULK_REPLAY_LIMIT.max,
        description: `at most this many deliveries, newest first (default ${BULK_REPLAY_LIMIT.default})`,
      }),
    ),
    dryRun: Type.Optional(Type.Boolean({ description: 'only count what would be replayed (default false)' })),
  },
  { additionalProperties: false, description: 'FAILED deliveries matching every given filter are replayed' },
);

// ---- resources -------------------------------------------------------------------------------

export const DeliverySchema = Type.Object(
  {
    id: Uuid(),
    eventId: Uuid(),
    endpointId: Uuid(),
    source: Type.String(),
    status: StringEnum(DELIVERY_STATUSES),
    attempts: Type.Integer(),
    lastResponseStatus: Nullable(Type.Integer()),
    lastResponseBody: Nullable(Type.String({ description: 'first 4 KiB' })),
    lastError: Nullable(Type.String()),
    lastAttemptAt: Nullable(Timestamp()),
    completedAt: Nullable(Timestamp()),
    createdAt: Timestamp(),
    attemptsUrl: Type.String({ description: "path of this delivery's attempt log (GET /api/deliveries/{id}/attempts)" }),
    ordering: Nullable(
      Type.Object(
        {
          key: Nullable(
            Type.String({
              description: "its key; null: the endpoint's sequence of events whose key failed or was no string (or not decided yet)",
            }),
          ),
          position: Type.Integer({ description: 'the order in which ingest accepted its event' }),
          skipped: Type.Boolean({
            description: 'it stopped holding its key without a SUCCESS: FAILED under Skip, skipped by an operator, revoked',
          }),
          waitingBehind: Nullable(
            Uuid('while it waits for its turn: the delivery before it that holds the key ("waiting behind delivery <id>")'),
          ),
        },
        { description: 'a delivery of an ordered endpoint (spec.ordering, docs/ordering.md); null: delivered on its own' },
      ),
    ),
  },
  { title: 'Delivery' },
);

export const ATTEMPT_OUTCOMES = ['SUCCESS', 'FAILED', 'RETRYING'] as const;

export const AttemptSchema = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1, description: '1-based; a replay continues the numbering' }),
    outcome: StringEnum(ATTEMPT_OUTCOMES, 'RETRYING when another attempt follows'),
    responseStatus: Nullable(Type.Integer()),
    responseBody: Nullable(Type.String({ description: 'first 4 KiB of what the endpoint answered' })),
    durationMs: Nullable(
      Type.Integer({ description: "null when no request was made (the endpoint was removed, or disabled: error 'endpoint disabled')" }),
    ),
    error: Nullable(Type.String({ description: 'one line; never a secret' })),
    startedAt: Timestamp(),
    requestBody: Nullable(
      Type.String({
        description: `the body this attempt sent when the endpoint's transform made it (spec.transform.jsonata, docs/content-routing.md), its first ${REQUEST_BODY_SHOWN} characters; null: the event's payload was sent as received (or no request was made)`,
      }),
    ),
    requestBodyBytes: Nullable(
      Type.Integer({ minimum: 0, description: 'the size in bytes of the whole body sent, when requestBody is set' }),
    ),
    receipt: Nullable(
      Type.Object(
        {
          messageId: Type.Optional(Type.String({ description: 'SQS, SNS, EventBridge, RabbitMQ: the id the broker gave the message' })),
          partition: Type.Optional(Type.Integer({ minimum: 0, description: 'Kafka: the partition the record went to' })),
          offset: Type.Optional(Type.String({ description: "Kafka: the record's offset in its partition" })),
          sequence: Type.Optional(Type.String({ description: 'NATS JetStream: the stream sequence; SQS FIFO: the sequence number' })),
        },
        {
          additionalProperties: false,
          title: 'Receipt',
          description:
            'what the broker acknowledged the publish with (docs/destinations.md); null: an HTTP attempt (its status and body say it), a failed attempt, or no request',
        },
      ),
    ),
  },
  { title: 'DeliveryAttempt' },
);

const eventFields = {
  id: Uuid(),
  source: Type.String(),
  externalEventId: Nullable(Type.String()),
  type: Nullable(Type.String()),
  status: StringEnum(EVENT_STATUSES),
  contentType: Nullable(Type.String()),
  payloadSize: Type.Integer({ description: 'bytes' }),
  workflowId: Nullable(Type.String()),
  receivedAt: Timestamp(),
  publishedAt: Nullable(Timestamp()),
  completedAt: Nullable(Timestamp()),
  payloadDroppedAt: Nullable(
    Timestamp(
      'set when retention dropped the payload and headers (RETENTION_PAYLOAD_MAX_AGE): the event, its deliveries and attempts stay, payload is empty, and a replay is refused with 409 payload_dropped',
    ),
  ),
};

export const EventSummarySchema = Type.Object(
  {
    ...eventFields,
    about: Nullable(
      Type.Object(
        {
          endpoint: Nullable(
            Type.Object(
              { id: Uuid(), name: Type.String({ description: '<namespace>/<name>, as endpoints are named' }) },
              { description: 'the endpoint it is about; null: none (a credential, a replay)' },
            ),
          ),
          deliveryId: Nullable(
            Uuid('the delivery it is about: the one that failed (delivery.failed), disabled its endpoint, or holds its key; null: none'),
          ),
        },
        {
          description:
            "an operational event's (source webhook-fanout, docs/operations-events.md) endpoint and delivery, from its payload; null for any other source's event, or when retention dropped the payload",
        },
      ),
    ),
  },
  { title: 'EventSummary' },
);

/** Why an endpoint of the event's (source, type) has no delivery of it, from what is known now (docs/content-routing.md). */
const NO_DELIVERY_REASONS = [
  'FILTER_NOT_MATCHED',
  'FANOUT_IN_PROGRESS',
  'CREATED_AFTER_EVENT',
  'NOT_ALLOWED_BY_SOURCE',
  'NO_DELIVERY',
] as const;
export type NoDeliveryReason = (typeof NO_DELIVERY_REASONS)[number];
/** endpointsWithoutDelivery lists at most this many */
export const WITHOUT_DELIVERY_LIMIT = 100;

const EndpointWithoutDeliverySchema = Type.Object(
  {
    endpointId: Uuid(),
    name: Type.String(),
    namespace: Nullable(Type.String()),
    eventType: Nullable(Type.String({ description: 'null: every event type of the source' })),
    filter: Nullable(Type.String({ description: 'its spec.filter (CEL) as it is now; null: it has none' })),
    reason: StringEnum(
      NO_DELIVERY_REASONS,
      'FILTER_NOT_MATCHED: the event was routed, the endpoint existed then and has a filter: its filter did not match the event ' +
        '(an evaluation error counts as not matched; the filter shown is the one it has now). ' +
        "FANOUT_IN_PROGRESS: the event's fan-out is under way and may not have routed it yet (its status is RECEIVED and none of the " +
        "deliveries the token sees has an attempt: a namespace-scoped token's own only), so nothing is claimed. " +
        'CREATED_AFTER_EVENT: the endpoint was created after the event was received (it may not have existed when it was routed). ' +
        "NOT_ALLOWED_BY_SOURCE: its source's InboundCredential does not allow it now (nothing is sent to it). " +
        'NO_DELIVERY: none of these (it existed, is allowed and has no filter now): it was configured otherwise when the event was routed. ' +
        'Each reason reads the endpoint as it is now (docs/content-routing.md)',
    ),
  },
  { title: 'EndpointWithoutDelivery' },
);

export const EventDetailSchema = Type.Object(
  {
    ...eventFields,
    headers: Type.Record(Type.String(), Type.String(), { description: 'request headers as received, minus credentials' }),
    payload: Type.String({ description: 'the raw body: text when it is valid UTF-8, else base64' }),
    payloadEncoding: StringEnum(['utf8', 'base64'] as const),
    traceId: Nullable(
      Type.String({
        pattern: '^[0-9a-f]{32}$',
        description:
          'the OpenTelemetry trace id of the request that brought the event, its deliveries included; null when it was not traced (docs/tracing.md)',
      }),
    ),
    deliveries: Type.Array(DeliverySchema),
    endpointsWithoutDelivery: Type.Array(EndpointWithoutDeliverySchema, {
      description:
        "the active endpoints of the event's source and type (its own type's and the catch-alls) that the token sees and that have no " +
        `delivery of it, as configured now, by name, at most ${WITHOUT_DELIVERY_LIMIT}; each with why, as far as is known`,
    }),
    endpointsWithoutDeliveryOmitted: Type.Integer({
      minimum: 0,
      description: `those beyond the first ${WITHOUT_DELIVERY_LIMIT}, not listed`,
    }),
  },
  { title: 'EventDetail' },
);

export const EndpointSchema = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    source: Type.String(),
    eventType: Nullable(Type.String({ description: 'null: every event type of the source' })),
    url: Type.String({
      description:
        'credentials in the URL (refused in new configuration) are shown as ***; another destination than HTTP: the address it sends to (destination.target)',
    }),
    destination: Type.Object(
      {
        type: StringEnum(DESTINATION_TYPES),
        target: Type.String({
          description:
            'where its messages go: the URL, queue URL, topic ARN, eventbridge://region/bus, kafka://brokers/topic...; never a credential',
        }),
      },
      { description: "where the endpoint's deliveries go (spec.destination; docs/destinations.md)" },
    ),
    method: StringEnum(HTTP_METHODS),
    auth: Type.Object(
      {
        type: StringEnum(AUTH_TYPES),
        username: Nullable(Type.String({ description: 'BASIC only' })),
        secretSet: Type.Boolean({
          description: 'whether the password, token, or OAuth2 client secret or private key of this type is set (it is never shown)',
        }),
        oauth2: Nullable(
          Type.Object(
            {
              tokenUrl: Type.String(),
              clientId: Type.String(),
              scopes: Type.Array(Type.String()),
              audience: Nullable(Type.String()),
              clientAuthentication: StringEnum(OAUTH2_CLIENT_AUTHENTICATIONS),
              tokenRefusal: Nullable(
                Type.Object(
                  {
                    message: Type.String({ description: "the token endpoint's words (never a secret)" }),
                    since: Timestamp('when it first refused them'),
                  },
                  {
                    description:
                      'the token endpoint refuses the client credentials (invalid_client, unauthorized_client, 401): the deliveries wait and the WebhookEndpoint is Ready=False TokenRequestRefused; null: not refused',
                  },
                ),
              ),
              tokenUnavailable: Nullable(
                Type.Object(
                  {
                    message: Type.String({ description: "what failed last, in the worker's words (never a secret)" }),
                    since: Timestamp('when it became unavailable (the first failure of this spell)'),
                  },
                  {
                    description:
                      'the token endpoint is unavailable (5xx, 408, 429, a timeout, a refused connection, a name the DNS does not know): the deliveries wait PENDING with no attempt spent, until a token is obtained; null: it answered last time, or was not asked yet',
                  },
                ),
              ),
            },
            { description: 'OAUTH2_CLIENT_CREDENTIALS: the token endpoint and the client (docs/endpoints.md); null for the other types' },
          ),
        ),
      },
      { description: 'how the receiver knows the caller (spec.auth)' },
    ),
    signing: Type.Object(
      {
        type: StringEnum(SIGNING_TYPES),
        secretSet: Type.Boolean({ description: 'whether the signing secret or key is set (it is never shown)' }),
        previousSecretSet: Type.Boolean({
          description: 'STANDARD_WEBHOOKS(_ED25519): whether a previous key is set (a rotation: both sign)',
        }),
        publicKeys: Type.Array(Type.String(), {
          description:
            'STANDARD_WEBHOOKS_ED25519: the whpk_ public keys receivers verify the v1a signatures with, the current key first, ' +
            'then the previous one during a rotation; empty for the other types',
        }),
      },
      { description: 'how the receiver verifies the body (spec.signing, or the older auth.type HMAC / STANDARD_WEBHOOKS)' },
    ),
    tls: Type.Object(
      {
        clientCertificateExpiresAt: Nullable(
          Timestamp('when the client certificate of spec.tls expires (mTLS); null: no client certificate. The key is never shown'),
        ),
        caBundleSet: Type.Boolean({ description: "whether a private CA bundle replaces the system's roots for this endpoint" }),
      },
      { description: 'spec.tls (docs/endpoints-tls.md)' },
    ),
    proxy: StringEnum(
      ['Default', 'Direct'] as const,
      "spec.proxy: Default, through the installation's forward proxy when it has one (DELIVERY_PROXY_URL); Direct, never (docs/deploy.md)",
    ),
    customHeaderNames: Type.Array(Type.String(), { description: 'names only: values may be credentials' }),
    maxAttempts: Type.Integer(),
    timeoutSeconds: Type.Integer(),
    retryOnStatus: Type.Array(Type.Integer()),
    rateLimit: Nullable(
      Type.Object(
        { perSecond: Type.Number({ description: 'deliveries per second, across all workers' }) },
        { description: 'null: no rate limit' },
      ),
    ),
    maxConcurrency: Nullable(Type.Integer({ description: 'requests in flight, across all workers; null: no limit' })),
    pausedUntil: Nullable(Timestamp('deliveries to it wait until then: it answered 429/503 with Retry-After; null: not paused')),
    active: Type.Boolean(),
    state: StringEnum(ENDPOINT_STATES, 'DISABLED after autoDisableAfter deliveries in a row ended FAILED, until enabled again'),
    autoDisableAfter: Type.Integer({ minimum: 0, description: 'spec.autoDisable.afterConsecutiveFailures; 0 = never' }),
    consecutiveFailures: Type.Integer({ minimum: 0, description: 'deliveries in a row that ended FAILED; a SUCCESS resets it' }),
    disabledAt: Nullable(Timestamp('when it was disabled')),
    heldDeliveries: Type.Integer({
      minimum: 0,
      description: 'deliveries FAILED with "endpoint disabled" and not redriven yet: each is replayed once, oldest first, after enable',
    }),
    managedBy: Nullable(Type.String({ description: 'the resource this row is reconciled from' })),
    filter: Nullable(
      Type.String({
        description: 'spec.filter (CEL), the last that compiled; null: every event of its source and type (docs/content-routing.md)',
      }),
    ),
    transform: Nullable(
      Type.Object(
        { jsonata: Type.String() },
        { description: 'spec.transform (JSONata), the last that compiled: its result is the body sent; null: the body as received' },
      ),
    ),
    namespace: Nullable(
      Type.String({ description: 'the namespace of its WebhookEndpoint (docs/tenancy.md); null: a row written before tenancy' }),
    ),
    deniedReason: Nullable(
      StringEnum(
        DENIED_REASONS,
        "null: its source's InboundCredential allows it. NotAllowedBySource: the credential's spec.allowedEndpoints does not admit its namespace; SourceNotFound: no credential configures its source. Either way nothing is sent to it, and a replay to it or its enable answers 409 endpoint_not_allowed until it is allowed (docs/tenancy.md)",
      ),
    ),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Endpoint' },
);

const ExtractionRuleSchema = Nullable(ExtractionRule);

export const CredentialSchema = Type.Object(
  {
    id: Uuid(),
    source: Type.String(),
    username: Nullable(Type.String({ description: 'the Basic username; null when the source checks a signature alone' })),
    verification: Type.String({ description: 'Basic, or the signature scheme: Stripe, GitHub, Shopify, Slack, StandardWebhooks, HMAC' }),
    basic: Type.Boolean({ description: 'whether Basic credentials are required (alone, or beside the signature)' }),
    eventIdRule: ExtractionRuleSchema,
    eventTypeRule: ExtractionRuleSchema,
    managedBy: Nullable(Type.String()),
    namespace: Nullable(
      Type.String({
        description: "the namespace of its InboundCredential, the source's owner (docs/tenancy.md); null: a row written before tenancy",
      }),
    ),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'InboundCredential', description: 'never includes the password, its hash or a signing secret' },
);

export const CallerSchema = Type.Object(
  {
    subject: Type.String({ description: "the token's sub" }),
    permissions: Type.Array(Type.String(), { description: 'the permissions the token grants (read:webhooks, replay:webhooks)' }),
    namespaces: Nullable(
      Type.Array(Type.String(), {
        description:
          "a tenant's token (it carries the namespaces claim, AUTH_NAMESPACES_CLAIM): every answer shows only these namespaces' endpoints, credentials, their deliveries and events (docs/tenancy.md); null: a token without the claim sees everything",
      }),
    ),
  },
  { title: 'Caller' },
);

export const listOf = <T extends TSchema>(item: T) =>
  Type.Object({
    items: Type.Array(item),
    nextCursor: Nullable(Type.String({ description: 'pass as cursor for the next page; null on the last page' })),
  });

export const EndpointEnabledSchema = Type.Object(
  {
    endpoint: EndpointSchema,
    wasDisabled: Type.Boolean({ description: 'false: it was already ACTIVE and nothing changed (enable is idempotent)' }),
  },
  { title: 'EndpointEnabled' },
);

export const ReplayStartedSchema = Type.Object({
  eventId: Uuid(),
  workflowId: Type.String({ description: 'the replay run: its own workflow id, not the event id' }),
  deliveryIds: Type.Array(Uuid()),
});

export const DeliveryReplaySchema = Type.Object({ delivery: DeliverySchema, replay: ReplayStartedSchema });

export const BulkReplayResultSchema = Type.Object({
  dryRun: Type.Boolean(),
  matched: Type.Integer({ description: 'FAILED deliveries matching the filters (before this replay)' }),
  limit: Type.Integer(),
  replayed: Type.Integer({ description: 'deliveries reopened and handed to a replay run (dry run: would be)' }),
  replays: Type.Array(ReplayStartedSchema),
  failed: Type.Array(Type.Object({ eventId: Uuid(), deliveryIds: Type.Array(Uuid()), error: Type.String() }), {
    description: 'replay runs that could not be started; those deliveries stay FAILED',
  }),
  bulkReplayId: Type.Optional(
    Uuid(
      'when deliveries were reopened: the id its replay.completed operational event carries (subject.uid) once every one of them has settled (docs/operations-events.md)',
    ),
  ),
});

export type Delivery = Static<typeof DeliverySchema>;
export type Attempt = Static<typeof AttemptSchema>;
export type EventSummary = Static<typeof EventSummarySchema>;
export type EventDetail = Static<typeof EventDetailSchema>;
export type EndpointWithoutDelivery = Static<typeof EndpointWithoutDeliverySchema>;
export type EndpointView = Static<typeof EndpointSchema>;
export type CredentialView = Static<typeof CredentialSchema>;
export type ReplayStarted = Static<typeof ReplayStartedSchema>;
export type BulkReplayResult = Static<typeof BulkReplayResultSchema>;

// ---- stats (the console's overview) ---------------------------------------------------------

/** Bucket widths of GET /api/stats/timeseries, in seconds. */
export const STATS_BUCKETS = { '1m': 60, '5m': 300, '15m': 900, '1h': 3600, '6h': 21_600, '1d': 86_400 } as const;
export type StatsBucket = keyof typeof STATS_BUCKETS;
export const STATS_LIMITS = {
  /** the widest range one request may cover */
  maxRangeDays: 31,
  maxBuckets: 1000,
  /** without `bucket`, the narrowest width giving at most this many buckets */
  defaultBuckets: 120,
  /** series per kind in one answer (the busiest first); the rest are counted in *Omitted */
  maxSeries: 100,
} as const;

export const TimeseriesQuery = Type.Object(
  {
    from: Type.Optional(Timestamp('start of the range (RFC 3339, with offset), rounded down to the bucket; default: `to` minus one hour')),
    to: Type.Optional(Timestamp('end of the range, exclusive, rounded up to the bucket; default: now')),
    bucket: Type.Optional(
      StringEnum(
        Object.keys(STATS_BUCKETS) as StatsBucket[],
        `bucket width; default: the narrowest giving at most ${STATS_LIMITS.defaultBuckets} buckets. At most ${STATS_LIMITS.maxBuckets} buckets and ${STATS_LIMITS.maxRangeDays} days a request (400 beyond)`,
      ),
    ),
  },
  { additionalProperties: false },
);

const Counts = (description: string) => Type.Array(Type.Integer({ minimum: 0 }), { description });
const Ratios = (description: string) => Type.Array(Nullable(Type.Number({ minimum: 0 })), { description });

export const TimeseriesSchema = Type.Object(
  {
    from: Timestamp('start of the first bucket'),
    to: Timestamp('end of the last bucket (exclusive)'),
    bucket: StringEnum(Object.keys(STATS_BUCKETS) as StatsBucket[]),
    bucketSeconds: Type.Integer(),
    buckets: Type.Array(Timestamp(), { description: 'start of each bucket; every series below has one value per bucket, in this order' }),
    eventsBySource: Type.Array(
      Type.Object({ source: Type.String(), counts: Counts('events received in the bucket'), total: Type.Integer({ minimum: 0 }) }),
      { description: 'events received per source, the busiest sources first' },
    ),
    sourcesOmitted: Type.Integer({ minimum: 0, description: `sources beyond the ${STATS_LIMITS.maxSeries} busiest, not listed` }),
    deliveriesByOutcome: Type.Object(
      { SUCCESS: Counts('deliveries that ended SUCCESS in the bucket'), FAILED: Counts('deliveries that ended FAILED in the bucket') },
      {
        description:
          'deliveries by the outcome they ended with, in the bucket they ended (PENDING ones have not ended; a replayed delivery counts when it ended last)',
      },
    ),
    endpoints: Type.Array(
      Type.Object({
        endpointId: Uuid(),
        name: Type.String(),
        source: Type.String(),
        completed: Counts('deliveries to the endpoint that ended in the bucket'),
        failed: Counts('of those, FAILED'),
        failureRate: Ratios('failed / completed; null without a delivery'),
        latencyP50Ms: Ratios(
          "median delivery latency of the SUCCESS ones: from the delivery's creation (the event's fan-out) to its success, retries included",
        ),
        latencyP95Ms: Ratios('95th percentile of the same'),
        total: Type.Object({
          completed: Type.Integer({ minimum: 0 }),
          failed: Type.Integer({ minimum: 0 }),
          failureRate: Nullable(Type.Number({ minimum: 0 })),
          latencyP50Ms: Nullable(Type.Number({ minimum: 0 })),
          latencyP95Ms: Nullable(Type.Number({ minimum: 0 })),
        }),
      }),
      { description: 'per endpoint with deliveries that ended in the range: the most failures first, then the busiest' },
    ),
    endpointsOmitted: Type.Integer({ minimum: 0, description: `endpoints beyond the first ${STATS_LIMITS.maxSeries}, not listed` }),
  },
  { title: 'Timeseries' },
);

export const AttentionSchema = Type.Object(
  {
    failedDeliveries: Type.Integer({
      minimum: 0,
      description: 'FAILED deliveries not held for a disabled endpoint: to replay or to look at',
    }),
    heldDeliveries: Type.Integer({
      minimum: 0,
      description: 'deliveries held while their endpoint is disabled, re-delivered once it is enabled',
    }),
    pendingOverOneMinute: Type.Integer({ minimum: 0, description: 'deliveries still PENDING a minute after they were created' }),
    disabledEndpoints: Type.Integer({ minimum: 0, description: 'endpoints auto-disabled (state DISABLED)' }),
    pausedEndpoints: Type.Integer({ minimum: 0, description: 'endpoints paused by a Retry-After (pausedUntil in the future)' }),
    at: Timestamp('when the counts were taken'),
  },
  { title: 'Attention' },
);
