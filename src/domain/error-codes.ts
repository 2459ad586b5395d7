/**
 * Every error code the service raises, in one table: its kind (what every boundary does with it,
 * errors.ts), the HTTP status an answer carrying it has, and where a boundary needs a more precise
 * name than the kind's, the activity failure type Temporal is told and the Ready condition's
 * reason the operator sets. permanent(), transient() and internal() accept only the codes of their
 * kind listed here, so a misspelt or misfiled code fails to compile. docs/architecture.md lists
 * them (a unit test keeps the two in step). The delivery_* codes with a failure type are how a
 * delivery ends or waits at the activity boundary (activities/failures.ts builds them); they never
 * answer HTTP, and their status is only their kind's.
 */
export type ErrorKind = 'permanent' | 'transient' | 'internal';

export interface ErrorCodeSpec {
  readonly kind: ErrorKind;
  /** the status of an HTTP answer carrying the code */
  readonly status: number;
  /** the ApplicationFailure type at the activity boundary; without one, the kind's (activities/failures.ts) */
  readonly failureType?: string;
  /** the Ready=False reason at the reconcile boundary; without one, InvalidSpec (operator/reconciler.ts) */
  readonly reason?: string;
  /** one line for docs/architecture.md: when the code is raised */
  readonly means: string;
}

export const ERROR_CODES = {
  // permanent: the input or the configuration is wrong
  bad_request: { kind: 'permanent', status: 400, means: "a client error fastify found (the answer keeps fastify's 4xx status)" },
  malformed_request: { kind: 'permanent', status: 400, means: 'the request is not valid HTTP/1.1' },
  duplicate_header: { kind: 'permanent', status: 400, means: 'a header that must appear once appears more often' },
  missing_host: { kind: 'permanent', status: 400, means: 'an HTTP/1.1 request without Host' },
  bad_url: { kind: 'permanent', status: 400, means: 'the request target can not be parsed' },
  invalid_request: { kind: 'permanent', status: 400, means: 'parameters or body fail the route schema' },
  invalid_body: { kind: 'permanent', status: 400, means: 'a JSON body that is empty' },
  invalid_content_length: { kind: 'permanent', status: 400, means: 'Content-Length does not match the body' },
  invalid_cursor: { kind: 'permanent', status: 400, means: 'a listing cursor the API did not return' },
  empty_body: { kind: 'permanent', status: 400, means: 'an inbound webhook without a body' },
  invalid_json: { kind: 'permanent', status: 400, means: 'a body declared as JSON that is not' },
  invalid_event_id: { kind: 'permanent', status: 400, means: 'an inbound event id too long or with a NUL' },
  invalid_event_type: { kind: 'permanent', status: 400, means: 'an inbound event type too long or with a NUL' },
  invalid_cloudevent: {
    kind: 'permanent',
    status: 400,
    means: 'a request to a CloudEvents source that is not a CloudEvent 1.0 (names the missing attribute)',
  },
  invalid_config: {
    kind: 'permanent',
    status: 400,
    means:
      'a configuration value that can not be used (e.g. a CIDR); a process names every problem of its environment at once (ConfigError)',
  },
  invalid_endpoint_auth: { kind: 'permanent', status: 400, means: "an endpoint's auth lacks what its type needs" },
  invalid_header: { kind: 'permanent', status: 400, means: 'a custom header with an invalid name or value' },
  address_blocked: { kind: 'permanent', status: 400, means: 'an outbound address refused by the SSRF policy' },
  invalid_spec: { kind: 'permanent', status: 400, reason: 'InvalidSpec', means: 'a resource spec that fails its schema or rules' },
  invalid_filter: {
    kind: 'permanent',
    status: 400,
    reason: 'InvalidFilter',
    means: "a WebhookEndpoint's spec.filter that does not compile (CEL: syntax, names, size)",
  },
  invalid_transform: {
    kind: 'permanent',
    status: 400,
    reason: 'InvalidTransform',
    means: "a WebhookEndpoint's spec.transform.jsonata that does not compile",
  },
  invalid_ordering_key: {
    kind: 'permanent',
    status: 400,
    reason: 'InvalidOrderingKey',
    means: "a WebhookEndpoint's spec.ordering.key that does not compile (CEL: syntax, names, size)",
  },
  invalid_secret: { kind: 'permanent', status: 400, reason: 'InvalidSecret', means: 'a Secret value of the wrong form' },
  invalid_client_certificate: {
    kind: 'permanent',
    status: 400,
    reason: 'InvalidClientCertificate',
    means: "a WebhookEndpoint's spec.tls client certificate that is expired, not yet valid, unparsable or not its key's",
  },
  secret_not_found: { kind: 'permanent', status: 400, reason: 'SecretNotFound', means: 'a referenced Secret does not exist' },
  secret_missing: { kind: 'permanent', status: 400, reason: 'SecretKeyNotFound', means: 'a referenced Secret lacks the key' },
  secret_empty: { kind: 'permanent', status: 400, reason: 'SecretKeyEmpty', means: "a referenced Secret's key is empty" },
  reserved_source: {
    kind: 'permanent',
    status: 400,
    reason: 'ReservedSource',
    means: "an InboundCredential for the source of the service's own events (OPERATIONS_EVENTS_SOURCE, docs/operations-events.md)",
  },
  not_null_violation: { kind: 'permanent', status: 400, means: 'Postgres refused a row without a required value' },
  check_violation: { kind: 'permanent', status: 400, means: 'Postgres refused a row by a check constraint' },
  invalid_database_input: { kind: 'permanent', status: 400, means: 'Postgres refused a value (SQLSTATE class 22: data exception)' },
  unauthorized: { kind: 'permanent', status: 401, means: 'no or wrong credentials (with WWW-Authenticate)' },
  invalid_token: { kind: 'permanent', status: 401, means: 'a bearer token that is malformed, badly signed or expired' },
  insufficient_scope: { kind: 'permanent', status: 403, means: 'a valid token without the permission' },
  not_found: { kind: 'permanent', status: 404, means: 'no resource with this id, or no route' },
  event_not_found: { kind: 'permanent', status: 404, failureType: 'EventNotFound', means: "an activity's event row is gone" },
  delivery_not_found: { kind: 'permanent', status: 404, failureType: 'DeliveryNotFound', means: "an activity's delivery row is gone" },
  endpoint_not_found: { kind: 'permanent', status: 404, failureType: 'EndpointNotFound', means: "an activity's endpoint row is gone" },
  request_timeout: { kind: 'permanent', status: 408, means: 'the request was not received in time' },
  not_replayable: { kind: 'permanent', status: 409, means: 'a replay of deliveries that are not FAILED' },
  not_skippable: {
    kind: 'permanent',
    status: 409,
    means: 'a skip of a delivery that is not a FAILED ordered delivery holding its key (docs/ordering.md)',
  },
  payload_dropped: {
    kind: 'permanent',
    status: 409,
    means: 'a replay of an event whose payload retention dropped (RETENTION_PAYLOAD_MAX_AGE)',
  },
  endpoint_not_allowed: {
    kind: 'permanent',
    status: 409,
    means: "a replay to, or enable of, an endpoint its source's credential does not allow (docs/tenancy.md)",
  },
  unique_violation: { kind: 'permanent', status: 409, means: 'Postgres refused a row that would duplicate a unique key' },
  foreign_key_violation: { kind: 'permanent', status: 409, means: 'Postgres refused a row whose reference is gone' },
  payload_too_large: { kind: 'permanent', status: 413, means: 'a body over the size limit' },
  uri_too_long: { kind: 'permanent', status: 414, means: 'a request target over the size limit' },
  unsupported_media_type: { kind: 'permanent', status: 415, means: 'a Content-Type the route does not take' },
  expectation_failed: { kind: 'permanent', status: 417, means: 'an Expect other than 100-continue' },
  delivery_rejected: {
    kind: 'permanent',
    status: 422,
    failureType: 'DeliveryPermanentFailure',
    means:
      'a delivery ends FAILED at once: its endpoint answered with a final failure (a 4xx not retried), or it was not called (endpoint removed or disabled); activity only',
  },
  delivery_attempts_exhausted: {
    kind: 'permanent',
    status: 422,
    failureType: 'DeliveryAttemptsExhausted',
    means: "a delivery's last attempt failed: it ends FAILED; activity only",
  },
  headers_too_large: { kind: 'permanent', status: 431, means: 'request line and headers over the size limit' },
  too_many_refusals: {
    kind: 'permanent',
    status: 429,
    means:
      "inbound credentials not yet proven, from an address or for a source refused too often lately: not checked (or, naming a source's username, checked and wrong), with Retry-After",
  },
  broker_unknown_destination: {
    kind: 'permanent',
    status: 404,
    means:
      "a Kafka, RabbitMQ or NATS destination's topic, exchange or JetStream subject does not exist; the delivery ends FAILED with the broker's words; destination outcome only",
  },
  broker_auth_refused: {
    kind: 'permanent',
    status: 403,
    means: "a broker refused a destination's credentials or their permission to publish there; FAILED at once; destination outcome only",
  },
  broker_message_too_large: {
    kind: 'permanent',
    status: 413,
    means:
      "a message over the broker's limit (Kafka message.max.bytes, RabbitMQ max_message_size, NATS max_payload or the stream's max_msg_size); FAILED at once; destination outcome only",
  },
  broker_record_invalid: {
    kind: 'permanent',
    status: 422,
    means:
      "a record the broker will never take as it is (Kafka INVALID_RECORD, such as no key on a compacted topic, or INVALID_TIMESTAMP); FAILED at once with the broker's words; destination outcome only",
  },

  // transient: a dependency is briefly unavailable
  oauth2_token_refused: {
    kind: 'permanent',
    status: 401,
    means:
      "an OAuth2 endpoint's token endpoint refused (a 4xx other than 408/429): our credentials (invalid_client, unauthorized_client, 401) make the delivery wait and the endpoint Ready=False TokenRequestRefused; the request (invalid_scope...) ends it FAILED with its words; destination outcome only",
  },
  database_unavailable: {
    kind: 'transient',
    status: 503,
    means: 'Postgres can not be reached, refused or timed out (connection, pool, statement timeout, shutdown)',
  },
  publish_failed: { kind: 'transient', status: 503, means: 'an event could not be published to SNS' },
  replay_unavailable: { kind: 'transient', status: 503, means: 'Temporal refused to start a replay' },
  identity_provider_unavailable: { kind: 'transient', status: 503, means: "the identity provider's key set could not be fetched" },
  console_not_built: {
    kind: 'transient',
    status: 503,
    means: 'the console is on but its files were not built (npm run build); answered until they are',
  },
  aws_unavailable: {
    kind: 'transient',
    status: 503,
    means: 'an SNS or SQS call failed after its retries in a way a later one may not (throttled, 5xx, network, timeout)',
  },
  kube_api_unavailable: {
    kind: 'transient',
    status: 503,
    means: 'the Kubernetes API answered a conflict (a newer version), throttling, a timeout or a server error',
  },
  delivery_attempt_failed: {
    kind: 'transient',
    status: 503,
    failureType: 'DeliveryRetryableFailure',
    means: "a delivery attempt failed; the next one follows the endpoint's backoff (Retry-After as a floor); activity only",
  },
  delivery_database_unavailable: {
    kind: 'transient',
    status: 503,
    failureType: 'DeliveryDatabaseUnavailable',
    means: 'Postgres failed during a delivery: retried, no endpoint attempt spent; activity only',
  },
  delivery_deferred: {
    kind: 'transient',
    status: 503,
    failureType: 'DeliveryDeferred',
    means:
      "a delivery waits on its endpoint's limits or Retry-After pause, the forward proxy or an OAuth2 token endpoint: no request, no endpoint attempt spent; activity only",
  },
  oauth2_token_unavailable: {
    kind: 'transient',
    status: 503,
    means:
      "an OAuth2 endpoint's token endpoint could not be reached, timed out, answered 5xx, 408 or 429, or answered without a token: the delivery waits, no endpoint attempt spent; destination outcome only",
  },
  broker_unavailable: {
    kind: 'transient',
    status: 503,
    means:
      'a broker, its partition leader or JetStream could not be reached or did not acknowledge in time (refused, reset, stopping); retried with the backoff; destination outcome only',
  },
  broker_throttled: {
    kind: 'transient',
    status: 503,
    means: 'a broker asked the publisher to slow down (a Kafka quota, JetStream busy); retried with the backoff; destination outcome only',
  },
  broker_unroutable: {
    kind: 'transient',
    status: 503,
    means:
      "RabbitMQ returned a mandatory message no queue is bound for (the exchange's bindings may come later): retried, never counted delivered; destination outcome only",
  },
  broker_error: {
    kind: 'transient',
    status: 503,
    means:
      'a broker failed a publish in a way none of the broker_* codes names (a nack, an unnamed protocol error): retried; destination outcome only',
  },

  // internal: a bug
  internal: { kind: 'internal', status: 500, means: 'an error nothing classified' },
  database_error: { kind: 'internal', status: 500, means: 'Postgres refused a statement for another reason (a bug in our SQL)' },
  unauthenticated_request: { kind: 'internal', status: 500, means: 'an inbound request reached its route without a verified credential' },
  invalid_publish_batch: { kind: 'internal', status: 500, means: 'a PublishBatch built with a wrong number of entries' },
  unpublishable_event_id: { kind: 'internal', status: 500, means: 'an event id handed to the publisher that is not a UUID' },
  aws_call_error: {
    kind: 'internal',
    status: 500,
    means:
      'AWS refused a call (credentials, permissions, a missing queue or topic), answered what we can not read, or the call was aborted',
  },
  kube_api_refused: {
    kind: 'internal',
    status: 500,
    means: 'the Kubernetes API refused a call for good (RBAC, a request it rejects, a missing object)',
  },
  delivery_internal_error: {
    kind: 'internal',
    status: 500,
    failureType: 'DeliveryInternalError',
    means: 'a bug in the deliver activity: logged with its stack, it spends an endpoint attempt, FAILED after the last; activity only',
  },
} as const satisfies Record<string, ErrorCodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The registered codes of one kind. */
export type CodeOf<K extends ErrorKind> = { [C in ErrorCode]: (typeof ERROR_CODES)[C]['kind'] extends K ? C : never }[ErrorCode];

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}
