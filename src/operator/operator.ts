import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { OperatorConfig } from '../config/config.js';
import {
  LEADER_ELECTION_TIMING,
  LEASE_NAME,
  VARIABLES,
  type DefaultAllowedNamespaces,
  type OperationsEventsSettings,
} from '../config/settings.js';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Db } from '../db/knex.js';
import type { OperatorMetrics } from '../metrics/operator-metrics.js';
import type { Logger } from '../observability/logger.js';
import { createController, type Controller } from './controller.js';
import { createEventRecorder } from '../kube/event-recorder.js';
import { createKubeApi, type KubeApi } from '../kube/api.js';
import { createLeaderElector, type LeaderElector } from '../kube/leader-election.js';
import { createOperatorStore } from './store.js';
import { describeError } from '../domain/errors.js';
import { createReplayRuns } from '../db/replay-runs.js';
import { createReplayRunner, type StartReplayRun } from '../temporal/replay-runner.js';
import { createReplayQueries } from '../db/replay-queries.js';
import { skipInNamespace, type SignalTurn } from '../temporal/ordering-skip.js';

/** The Lease settings, as the operator's configuration reads them. */
export type LeaderElectionSettings = OperatorConfig['leaderElection'];

export interface OperatorOptions {
  kc: KubeConfig;
  db: Db;
  logger: Logger;
  metrics: OperatorMetrics;
  /** undefined or empty = every namespace */
  namespaces?: string[] | undefined;
  /** what an InboundCredential without spec.allowedEndpoints allows; default Same (TENANCY_DEFAULT_ALLOWED_NAMESPACES) */
  defaultAllowedNamespaces?: DefaultAllowedNamespaces;
  workers?: number;
  resyncPeriodMs?: number;
  /** default HEALTH_POLL_MS (controller.ts) */
  healthPollMs?: number;
  /** this replica's name in the Lease and in Events; default hostname + random suffix */
  identity?: string;
  leaderElection?: Partial<LeaderElectionSettings>;
  backoff?: { baseDelayMs: number; maxDelayMs: number };
  /** starts the replay runs of WebhookReplay resources; without it they are not watched */
  startReplayRun?: StartReplayRun;
  /**
   * wakes the delivery behind one a WebhookReplay with action Skip skipped; without it the
   * consumer's ordering waker does, within about 15 s (docs/ordering.md)
   */
  signalTurn?: SignalTurn;
  /** OPERATIONS_EVENTS_*: the reserved source no credential may take, operational events' source (docs/operations-events.md) */
  operations?: OperationsEventsSettings;
}

export interface RunningOperator {
  identity: string;
  isLeader(): boolean;
  /** the controller while this replica leads (undefined on a standby) */
  controller(): Controller | undefined;
  /** true on a standby, and on the leader once its informers synced */
  ready(): boolean;
  /** stops reconciling, then releases the Lease (graceful shutdown) */
  stop(): Promise<void>;
  api: KubeApi;
}

export const LEADER_ELECTION_DEFAULTS: LeaderElectionSettings = {
  enabled: true,
  namespace: 'default',
  ...LEADER_ELECTION_TIMING,
  leaseName: LEASE_NAME,
};

/**
 * The operator: campaigns for the Lease; the leader runs the controller (informers, work queue,
 * reconcilers, resync); losing the Lease stops the controller and the replica campaigns again.
 * Without leader election (a single replica, or tests) the controller runs at once.
 */
export async function startOperator(opts: OperatorOptions): Promise<RunningOperator> {
  const identity = opts.identity ?? `${os.hostname()}_${randomBytes(4).toString('hex')}`;
  const le = { ...LEADER_ELECTION_DEFAULTS, ...opts.leaderElection };
  const logger = opts.logger.child({ identity });
  const api = createKubeApi(opts.kc, { userAgent: 'webhook-fanout-operator' });
  const store = createOperatorStore(opts.db, opts.operations);
  const recorder = createEventRecorder({ api, component: 'webhook-fanout-operator', host: identity, logger });
  const { metrics } = opts;
  const replays = opts.startReplayRun
    ? createReplayRunner({
        runs: createReplayRuns(opts.db, store.repos.operationalEvents),
        startRun: opts.startReplayRun,
        skip: skipInNamespace({
          replays: createReplayQueries(opts.db),
          ordering: store.repos.ordering,
          signalTurn: opts.signalTurn ?? (async () => undefined),
          logger,
        }),
        logger,
      })
    : undefined;

  let current: Controller | undefined;
  let transition: Promise<void> = Promise.resolve();
  const makeController = () =>
    createController({
      kc: opts.kc,
      api,
      store,
      recorder,
      metrics,
      logger,
      namespaces: opts.namespaces && opts.namespaces.length > 0 ? opts.namespaces : undefined,
      workers: opts.workers ?? VARIABLES.OPERATOR_WORKERS.default,
      resyncPeriodMs: opts.resyncPeriodMs ?? VARIABLES.OPERATOR_RESYNC_SECONDS.default * 1000,
      defaultAllowedNamespaces: opts.defaultAllowedNamespaces ?? VARIABLES.TENANCY_DEFAULT_ALLOWED_NAMESPACES.default,
      ...(opts.healthPollMs === undefined ? {} : { healthPollMs: opts.healthPollMs }),
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      ...(replays ? { replays } : {}),
    });
  // start and stop are serialized, so a quick lose-and-win never runs two controllers
  const startController = () => {
    transition = transition.then(async () => {
      if (current) return;
      const c = makeController();
      current = c;
      metrics.isLeader.set(1);
      try {
        await c.start();
      } catch (err) {
        const cause = describeError(err);
        logger.error({ err: cause }, `controller failed to start: ${cause}`);
      }
    });
    return transition;
  };
  const stopController = () => {
    transition = transition.then(async () => {
      const c = current;
      current = undefined;
      metrics.isLeader.set(0);
      await c?.stop();
    });
    return transition;
  };

  let elector: LeaderElector | undefined;
  if (le.enabled) {
    elector = createLeaderElector({
      api,
      namespace: le.namespace,
      name: le.leaseName,
      identity,
      leaseDurationMs: le.leaseDurationMs,
      renewDeadlineMs: le.renewDeadlineMs,
      retryPeriodMs: le.retryPeriodMs,
      logger,
      onStartedLeading: () => {
        metrics.leaderTransitions.inc();
        // not awaited: renewing the lease must not wait for the informers' first list
        void startController();
      },
      onStoppedLeading: () => stopController(),
      onNewLeader: (holder) => logger.info({ leader: holder }, 'another replica leads'),
    });
    void elector.run();
  } else {
    metrics.leaderTransitions.inc();
    void startController();
  }

  return {
    identity,
    api,
    isLeader: () => (elector ? elector.isLeader() : true),
    controller: () => current,
    ready: () => current === undefined || current.synced(),
    async stop() {
      if (elector) await elector.stop();
      await stopController();
      await transition;
    },
  };
}
