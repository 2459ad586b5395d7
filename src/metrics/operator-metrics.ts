import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The operator's metrics, registered on the process registry of createMetrics() so that they are
 * served by the management server's /metrics beside the default process metrics.
 */
export function createOperatorMetrics(registry: Registry) {
  const registers = [registry];
  return {
    reconciles: new Counter({
      name: 'webhook_fanout_operator_reconciles_total',
      help: 'Reconciles by kind and result (synced: Postgres written, unchanged: nothing to write, not_ready: spec or Secret problem reported in status, deleted: finalizer cleanup done, gone: resource no longer exists, error: failed and requeued with backoff)',
      labelNames: ['kind', 'result'] as const,
      registers,
    }),
    reconcileErrors: new Counter({
      name: 'webhook_fanout_operator_reconcile_errors_total',
      help: 'Reconciles that failed and were requeued with backoff, by kind and reason',
      labelNames: ['kind', 'reason'] as const,
      registers,
    }),
    reconcileDuration: new Histogram({
      name: 'webhook_fanout_operator_reconcile_duration_seconds',
      help: 'Duration of one reconcile, by kind',
      labelNames: ['kind'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    queueDepth: new Gauge({
      name: 'webhook_fanout_operator_queue_depth',
      help: 'Keys waiting in the work queue (not counting those waiting for a backoff)',
      registers,
    }),
    queueAdds: new Counter({
      name: 'webhook_fanout_operator_queue_adds_total',
      help: 'Keys added to the work queue, by trigger (event, secret, configmap, resync, retry, peer, ...)',
      labelNames: ['trigger'] as const,
      registers,
    }),
    informerRestarts: new Counter({
      name: 'webhook_fanout_operator_informer_restarts_total',
      help: 'List/watch restarts after an error, by resource',
      labelNames: ['resource'] as const,
      registers,
    }),
    rowWrites: new Counter({
      name: 'webhook_fanout_operator_row_writes_total',
      help: 'Postgres rows written by the operator, by kind and action (created, updated, deactivated, deleted); updates of a Ready resource at the same generation are Secret rotations or repaired drift',
      labelNames: ['kind', 'action'] as const,
      registers,
    }),
    clientCertificateExpiry: new Gauge({
      name: 'webhook_fanout_endpoint_client_certificate_expiry_timestamp_seconds',
      help: "When the client certificate of each endpoint's spec.tls expires (Unix seconds), by endpoint (namespace/name); absent: none",
      labelNames: ['endpoint'] as const,
      registers,
    }),
    isLeader: new Gauge({
      name: 'webhook_fanout_operator_leader',
      help: '1 while this replica holds the leader Lease and reconciles, else 0',
      registers,
    }),
    leaderTransitions: new Counter({
      name: 'webhook_fanout_operator_leader_transitions_total',
      help: 'Times this replica became leader',
      registers,
    }),
  };
}

export type OperatorMetrics = ReturnType<typeof createOperatorMetrics>;
