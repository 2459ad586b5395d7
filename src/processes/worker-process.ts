import type { SQSClient } from '@aws-sdk/client-sqs';
import { Client } from '@temporalio/client';
import type { NativeConnection, State, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import type { RedriveQueries } from '../db/redrive-queries.js';
import { buildConsumerProcess, type ConsumerSettings } from './consumer-process.js';
import type { RunningProcess } from './running-process.js';
import type { TemporalConfig, WorkerConfig } from '../config/config.js';
import type { Repositories } from '../db/repositories.js';
import { createDestinations, type DestinationsDeps } from '../destinations/index.js';
import { createAddressPolicy } from '../delivery/address-policy.js';
import { forwardProxyOf } from '../destinations/http/forward-proxy.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { createFanoutWorker, resolveWorkflowCode } from './fanout-worker.js';
import { clientTracing, workerTracing } from '../observability/temporal-tracing.js';
import { TRACING_OFF, type Tracing } from '../observability/tracing.js';
import { signalTurn } from '../temporal/signal-turn.js';

/** Bound on the signal an activity sends: past it the workflow sends the signal (a worker slot is not held by Temporal being slow). */
const SIGNAL_TURN_TIMEOUT_MS = 2_000;

/** What the worker process takes from its configuration: WorkerConfig, or a test's own values. */
export type WorkerSettings = Pick<WorkerConfig, 'backoff' | 'outboundDenyCidrs' | 'outboundAllowCidrs' | 'maxConcurrentActivities'> &
  Partial<
    Pick<WorkerConfig, 'sandboxDiagnostics' | 'deliveryProxy' | 'kafkaProduce' | 'awsSqsSend' | 'awsSqsBatch' | 'orderingHandoff'>
  > & {
    temporal: Pick<TemporalConfig, 'namespace' | 'taskQueue'>;
  };

export interface WorkerDeps {
  settings: WorkerSettings;
  connection: NativeConnection;
  repos: Repositories;
  metrics: Metrics;
  logger: Logger;
  /**
   * The consumer's work in this process (WORKER_CONSUME_QUEUE): read the queue, start each event's
   * workflow eagerly on this worker (same NativeConnection), redrive. Absent: a consumer elsewhere.
   */
  queue?: { settings: Omit<ConsumerSettings, 'temporal'>; sqs: SQSClient; redrive: RedriveQueries };
  /** the process's tracing (observability/tracing.ts); absent: off */
  tracing?: Tracing;
  /** the AWS destinations' base credentials; absent: the SDK's default chain (the pod's identity), as in production */
  awsCredentials?: DestinationsDeps['awsCredentials'];
}

/** The worker process built and not started: the Temporal worker exists, it polls nothing yet. */
export interface WorkerProcess {
  worker: Worker;
  /** runs the worker: polls the task queue until stop() */
  start(): StartedWorker;
}

export interface StartedWorker extends RunningProcess {
  /** settles when the worker stopped */
  running: Promise<void>;
  state(): State;
}

/** Hosts WebhookFanoutWorkflow and its activities (prepare, deliver, finishEvent), and with `queue` the consumer's work. */
export async function buildWorkerProcess(deps: WorkerDeps): Promise<WorkerProcess> {
  const { settings } = deps;
  // one registry of destinations per process, closed in the drain after the last attempt
  const destinations = createDestinations({
    addressPolicy: createAddressPolicy({ deny: settings.outboundDenyCidrs, allow: settings.outboundAllowCidrs }),
    ...(deps.awsCredentials ? { awsCredentials: deps.awsCredentials } : {}),
    ...(settings.deliveryProxy ? { proxy: forwardProxyOf(settings.deliveryProxy) } : {}),
    ...(settings.kafkaProduce ? { kafkaProduce: settings.kafkaProduce } : {}),
    ...(settings.awsSqsSend ? { awsSqsSend: settings.awsSqsSend } : {}),
    ...(settings.awsSqsBatch !== undefined ? { awsSqsBatch: settings.awsSqsBatch } : {}),
  });
  const tracing = deps.tracing ?? TRACING_OFF;
  // set when stop() begins: an ordered key's handoff chain claims nothing more (activities/ordering.ts)
  let draining = false;
  const signalClient = new Client({ connection: deps.connection, namespace: settings.temporal.namespace });
  // the bundle with Temporal's tracing interceptors only when this worker traces (fanout-worker.ts)
  const workflowCode = resolveWorkflowCode(tracing.enabled);
  deps.logger.info(
    workflowCode.kind === 'bundle' ? { workflowBundle: workflowCode.codePath } : { workflowsPath: workflowCode.workflowsPath },
    workflowCode.kind === 'bundle' ? 'workflow code: prebuilt bundle' : 'workflow code: bundling from source at start-up',
  );
  const { worker, sandbox, globals } = await createFanoutWorker({
    workflowCode,
    connection: deps.connection,
    namespace: settings.temporal.namespace,
    taskQueue: settings.temporal.taskQueue,
    activities: createActivities({
      repos: deps.repos,
      destinations,
      metrics: deps.metrics,
      logger: deps.logger,
      backoff: settings.backoff,
      // an ordered key's next delivery is signalled by the activity that released it (activities/ordering.ts)
      signalTurn: (wake) => signalTurn(signalClient, wake, { timeoutMs: SIGNAL_TURN_TIMEOUT_MS, taskQueue: settings.temporal.taskQueue }),
      // ORDERING_HANDOFF: the activity that releases an ordered key sends the key's next delivery itself
      orderingHandoff: settings.orderingHandoff ?? true,
      draining: () => draining,
    }),
    maxConcurrentActivityTaskExecutions: settings.maxConcurrentActivities,
    tracing: await workerTracing(tracing),
    sandboxDiagnostics: settings.sandboxDiagnostics ?? false,
  });
  if (sandbox === 'diagnostics-on-unpatched-sdk') {
    deps.logger.warn(
      { sandbox },
      'the Temporal SDK is not patched (an install without its scripts?): the workflow sandbox keeps its deadlock detector and stack traces, at about a third more worker CPU per event',
    );
  } else {
    // globals: locked (a switch between runs swaps only the SDK's state) or swapped in full (tracing, diagnostics)
    deps.logger.info(
      { sandbox, globals },
      sandbox === 'diagnostics-off'
        ? `workflow sandbox: on the main thread, no deadlock detector, no stack traces, globals ${globals}`
        : 'workflow sandbox: SDK diagnostics on',
    );
  }
  const interceptors = deps.queue ? await clientTracing(tracing) : undefined;
  const consumer =
    deps.queue &&
    buildConsumerProcess({
      settings: { ...deps.queue.settings, temporal: settings.temporal },
      sqs: deps.queue.sqs,
      // eager start works only through the worker's own NativeConnection
      client: new Client({
        connection: deps.connection,
        namespace: settings.temporal.namespace,
        ...(interceptors ? { interceptors } : {}),
      }),
      eagerStart: true,
      repos: deps.repos,
      redrive: deps.queue.redrive,
      metrics: deps.metrics,
      logger: deps.logger,
    });
  return {
    worker,
    start() {
      const running = worker.run();
      const consuming = consumer?.start();
      return {
        running,
        state: () => worker.getState(),
        async stop() {
          // no new starts first, then the worker drains what it runs
          draining = true;
          await consuming?.stop();
          if (worker.getState() === 'RUNNING') worker.shutdown();
          await running;
          await destinations.close();
        },
      };
    },
  };
}
