import { Counter, Histogram, Registry, collectDefaultMetrics, Gauge } from 'prom-client';

/**
 * How often the event-loop lag histogram (`webhook_fanout_nodejs_eventloop_lag_*`) samples. prom-client's
 * default, 10 ms, wakes every process 100 times a second, a steady CPU cost on every idle replica
 * (figures: docs/benchmarks.md, "Figures behind the code"). Ten samples a second still show a blocked loop on a 30 s scrape.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * Every metric of the service, on one registry per process. A process that does not use a
 * metric still exposes it at zero, so dashboards and alerts never see "no data".
 */
export function createMetrics(opts: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (opts.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry, prefix: 'webhook_fanout_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  }
  const registers = [registry];

  const metrics = {
    registry,
    inboundRequests: new Counter({
      name: 'webhook_fanout_inbound_requests_total',
      help: 'Inbound webhook requests by source and outcome (accepted, duplicate, handshake, unauthorized, rate_limited, invalid, too_large, unavailable, error)',
      labelNames: ['source', 'outcome'] as const,
      registers,
    }),
    inboundRefused: new Counter({
      name: 'webhook_fanout_inbound_refused_total',
      help:
        'Inbound requests refused with 401, by source (unknown for a source that does not exist) and reason (unknown_source, ' +
        'missing_credentials, bad_credentials, unexpected_credentials, missing_signature, malformed_signature, bad_signature, stale_timestamp), ' +
        'or with 429 before any check (rate_limited: an address or source refused too often lately)',
      labelNames: ['source', 'reason'] as const,
      registers,
    }),
    clientAddresses: new Counter({
      name: 'webhook_fanout_client_addresses_total',
      help:
        'Requests to the public port by where their client address was read (INGEST_TRUSTED_PROXIES): peer, x-forwarded-for, forwarded, ' +
        'or the peer because a trusted proxy sent a forwarding header that could not be read (malformed) or two that disagree (conflicting)',
      labelNames: ['from'] as const,
      registers,
    }),
    provenAddressWrites: new Counter({
      name: 'webhook_fanout_proven_address_writes_total',
      help:
        'Client addresses a source was proven from, written for the wrong-password limiter after a restart (INGEST_PROVEN_ADDRESS_DAYS), ' +
        'by result: written, failed (logged; written again with the next proof), dropped (too many waiting)',
      labelNames: ['result'] as const,
      registers,
    }),
    provenAddresses: new Gauge({
      name: 'webhook_fanout_proven_addresses',
      help: "(source, client address) pairs this ingest knows as proven, loaded from every replica's within INGEST_PROVEN_ADDRESS_DAYS",
      registers,
    }),
    publishFailures: new Counter({
      name: 'webhook_fanout_publish_failures_total',
      help: 'Failed publishes of an event id to the topic',
      registers,
    }),
    republished: new Counter({
      name: 'webhook_fanout_republished_total',
      help: 'Events re-published: after a failed publish (sender_retry, sweeper) or for lack of a workflow (sweeper_unstarted)',
      labelNames: ['via'] as const,
      registers,
    }),
    queueMessages: new Counter({
      name: 'webhook_fanout_queue_messages_total',
      help: 'Queue messages handled by the consumer, by outcome (started, already_started, handled, invalid, error, dead_lettered)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    workflowsStarted: new Counter({
      name: 'webhook_fanout_workflows_started_total',
      help:
        'WebhookFanoutWorkflow executions started by the consumer, by how the first workflow task reached a worker: ' +
        'eager (handed back in the start call to the worker of the starting process, WORKER_CONSUME_QUEUE) or task_queue',
      labelNames: ['start'] as const,
      registers,
    }),
    deliveryAttempts: new Counter({
      name: 'webhook_fanout_delivery_attempts_total',
      help: 'Outbound delivery attempts by outcome (success, retryable, permanent) and status class (2xx, 4xx, 5xx, timeout, network, refused)',
      labelNames: ['outcome', 'status_class'] as const,
      registers,
    }),
    deliveryDuration: new Histogram({
      name: 'webhook_fanout_delivery_duration_seconds',
      help: 'Duration of one outbound delivery attempt',
      labelNames: ['outcome'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    }),
    // per endpoint (label = the endpoint's name, one series per limited endpoint: bounded by
    // configuration); rate(wait seconds) is the number of deliveries waiting (docs/limits.md)
    deliveryDeferrals: new Counter({
      name: 'webhook_fanout_delivery_deferrals_total',
      help:
        'Deliveries sent back to wait on their endpoint, by reason (rate, concurrency, retry_after), on the forward proxy (proxy) ' +
        'or on an OAuth2 token endpoint (token); no attempt is spent',
      labelNames: ['endpoint', 'reason'] as const,
      registers,
    }),
    // the installation's forward proxy (DELIVERY_PROXY_URL), whatever the endpoint: a few series
    deliveryProxyFailures: new Counter({
      name: 'webhook_fanout_delivery_proxy_failures_total',
      help:
        'Deliveries the forward proxy failed, by reason (unreachable, auth_required: 407, proxy_error: its own 502/503); ' +
        'each waits and is tried again, no attempt spent',
      labelNames: ['reason'] as const,
      registers,
    }),
    // an OAuth2 endpoint's token endpoint (docs/endpoints.md): one series per OAuth2 endpoint and reason
    deliveryTokenFailures: new Counter({
      name: 'webhook_fanout_delivery_token_failures_total',
      help:
        "Deliveries an OAuth2 endpoint's token endpoint failed, by reason (unavailable: unreachable, timed out, 5xx/408/429; " +
        'refused: our client credentials, invalid_client, unauthorized_client, 401); each waits and is tried again, no attempt spent',
      labelNames: ['endpoint', 'reason'] as const,
      registers,
    }),
    deliveryLimitWait: new Counter({
      name: 'webhook_fanout_delivery_limit_wait_seconds_total',
      help: 'Seconds deliveries were sent back to wait on their endpoint, by reason; its rate is the number of deliveries waiting',
      labelNames: ['endpoint', 'reason'] as const,
      registers,
    }),
    eventsFinished: new Counter({
      name: 'webhook_fanout_events_finished_total',
      help: 'Events that reached a final status',
      labelNames: ['status'] as const,
      registers,
    }),
    eventEndToEnd: new Histogram({
      name: 'webhook_fanout_event_end_to_end_seconds',
      help: 'From receipt of an event to its final status',
      labelNames: ['status'] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600],
      registers,
    }),
    unpublishedEvents: new Gauge({
      name: 'webhook_fanout_unpublished_events',
      help: 'Accepted events with no known message: not yet published, or without a workflow after the grace period (as last seen by the sweeper)',
      registers,
    }),
    // endpoint health (docs/endpoint-health.md)
    endpointAutoDisables: new Counter({
      name: 'webhook_fanout_endpoint_auto_disables_total',
      help: 'Endpoints disabled by the worker after spec.autoDisable.afterConsecutiveFailures deliveries in a row ended FAILED, by endpoint (namespace/name)',
      labelNames: ['endpoint'] as const,
      registers,
    }),
    endpointsDisabled: new Gauge({
      name: 'webhook_fanout_endpoints_disabled',
      help: 'Active endpoints currently disabled (as last seen by the redriver of the consumer)',
      registers,
    }),
    // the web console (docs/console.md): its pages run nothing the policy does not allow, so any
    // report is a bug or an attack (an injected script, a third-party host)
    consoleCspViolations: new Counter({
      name: 'webhook_fanout_console_csp_violations_total',
      help: "Content-Security-Policy violations browsers reported from the console's pages, by directive (other: one the policy does not name)",
      labelNames: ['directive'] as const,
      registers,
    }),
    redriveStarted: new Counter({
      name: 'webhook_fanout_redrive_deliveries_total',
      help: 'Deliveries held while their endpoint was disabled and handed to a replay run after it was enabled',
      registers,
    }),
    // set by the management server each time /readyz runs its checks (DEPENDENCY_UP)
    dependencyUp: new Gauge({
      name: 'webhook_fanout_dependency_up',
      help: "1 when the process's readiness check of a dependency (postgres, temporal, kubernetes, informers) passed at the last /readyz, 0 when it failed",
      labelNames: ['dependency'] as const,
      registers,
    }),
    inboundDuration: new Histogram({
      name: 'webhook_fanout_inbound_request_duration_seconds',
      help: 'Inbound webhook requests, from the request to the answer (stored and published for accepted ones), by outcome',
      labelNames: ['outcome'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'webhook_fanout_queue_depth_messages',
      help: 'Messages in the queue and its DLQ as SQS reports them (approximate), by queue (queue, dlq) and state (visible, in_flight, delayed); every consumer replica reports the same',
      labelNames: ['queue', 'state'] as const,
      registers,
    }),
    queueMessageAge: new Histogram({
      name: 'webhook_fanout_queue_message_age_seconds',
      help: 'Age of a queue message when the consumer received it (since SQS took it from the topic; a redelivered message counts again)',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400],
      registers,
    }),
    filtered: new Counter({
      name: 'webhook_fanout_filtered_total',
      help: "Events of an endpoint's source and type that its spec.filter did not accept (no delivery), by endpoint (namespace/name)",
      labelNames: ['endpoint'] as const,
      registers,
    }),
    filterErrors: new Counter({
      name: 'webhook_fanout_filter_errors_total',
      help: "Evaluations of an endpoint's spec.filter that failed (a missing field, a wrong type, a bound): counted as not matched, by endpoint",
      labelNames: ['endpoint'] as const,
      registers,
    }),
    endpointAttempts: new Counter({
      name: 'webhook_fanout_endpoint_delivery_attempts_total',
      help: 'Outbound delivery attempts by endpoint (namespace/name) and outcome (success, retryable, permanent)',
      labelNames: ['endpoint', 'outcome'] as const,
      registers,
    }),
    endpointsPaused: new Gauge({
      name: 'webhook_fanout_endpoints_paused',
      help: 'Active endpoints paused now by a 429/503 with Retry-After (as last seen by the redriver of the consumer)',
      registers,
    }),
    deliveriesHeld: new Gauge({
      name: 'webhook_fanout_deliveries_held',
      help: 'Deliveries held for a disabled endpoint, to be redelivered when it is enabled (as last seen by the redriver of the consumer)',
      registers,
    }),
    // ordered delivery (docs/ordering.md)
    orderingBlockedKeys: new Gauge({
      name: 'webhook_fanout_ordering_blocked_keys',
      help: "Keys of an ordered endpoint held by a FAILED delivery (onFailure Block, or held while the endpoint is disabled) until it is replayed or skipped, by endpoint (namespace/name); a series for every ordered endpoint (as last seen by the consumer's ordering waker)",
      labelNames: ['endpoint'] as const,
      registers,
    }),
    // the handoff of an ordered key (docs/ordering.md): a few series, by how the attempt ended
    orderingHandoffs: new Counter({
      name: 'webhook_fanout_ordering_handoffs_total',
      help:
        'Ordered deliveries whose attempt the activity releasing their key made (the handoff), by how it went: ended (SUCCESS or FAILED, ' +
        'the key moves on or is held), retry (failed, retried by its own run), dropped (given back to its run: a limit or a wait, or anything unusual)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    // retention (docs/deploy.md "Retention"): moved by the ingest replica that holds the lock
    retentionDeletedRows: new Counter({
      name: 'webhook_fanout_retention_deleted_rows_total',
      help:
        'Rows deleted by the retention job, by table (webhook_event, webhook_delivery, webhook_delivery_attempt: RETENTION_MAX_AGE; ' +
        'webhook_proven_address: INGEST_PROVEN_ADDRESS_DAYS)',
      labelNames: ['table'] as const,
      registers,
    }),
    retentionPayloadsDropped: new Counter({
      name: 'webhook_fanout_retention_payloads_dropped_total',
      help: 'Events whose payload and headers the retention job dropped (RETENTION_PAYLOAD_MAX_AGE); the event and its deliveries stay',
      registers,
    }),
    retentionOldestRowAge: new Gauge({
      name: 'webhook_fanout_retention_oldest_row_age_seconds',
      help: 'Age of the oldest row by table (webhook_event by received_at, webhook_delivery by created_at), as of the last retention run; 0 = none',
      labelNames: ['table'] as const,
      registers,
    }),
    retentionOldestPayloadAge: new Gauge({
      name: 'webhook_fanout_retention_oldest_payload_age_seconds',
      help: 'Age of the oldest settled event that still carries its payload, as of the last retention run; 0 = none',
      registers,
    }),
    retentionLastRunDuration: new Gauge({
      name: 'webhook_fanout_retention_last_run_duration_seconds',
      help: 'Duration of the last completed retention run on this replica',
      registers,
    }),
    retentionLastRunTimestamp: new Gauge({
      name: 'webhook_fanout_retention_last_run_timestamp_seconds',
      help: 'Unix time the last retention run on this replica completed; 0 = none yet',
      registers,
    }),
    retentionRuns: new Counter({
      name: 'webhook_fanout_retention_runs_total',
      help: 'Retention runs by result: completed, skipped (another replica held the lock), failed',
      labelNames: ['result'] as const,
      registers,
    }),
  };
  for (const table of RETENTION_TABLES) metrics.retentionDeletedRows.inc({ table }, 0);
  for (const result of ['completed', 'skipped', 'failed']) metrics.retentionRuns.inc({ result }, 0);
  for (const result of ['written', 'failed', 'dropped']) metrics.provenAddressWrites.inc({ result }, 0);
  // both series from the start, so eager / all is a ratio from the first scrape
  for (const start of WORKFLOW_START_MODES) metrics.workflowsStarted.inc({ start }, 0);
  return metrics;
}

/** The tables the retention job deletes from (label `table` of retentionDeletedRows). */
export const RETENTION_TABLES = ['webhook_event', 'webhook_delivery', 'webhook_delivery_attempt', 'webhook_proven_address'] as const;

/** How a started run's first workflow task reached a worker (label `start` of workflowsStarted). */
export const WORKFLOW_START_MODES = ['eager', 'task_queue'] as const;

export type Metrics = ReturnType<typeof createMetrics>;
