import type { NativeConnection } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import type { BackoffConfig } from '../config/config.js';
import type { Repositories } from '../db/repositories.js';
import { createAddressPolicy } from '../delivery/address-policy.js';
import { createSender } from '../delivery/sender.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { createFanoutWorker, resolveWorkflowCode } from './fanout-worker.js';
import type { RunningProcess } from './ingest-process.js';

/** Hosts WebhookFanoutWorkflow and its activities (prepare, deliver, finishEvent). */
export async function startWorkerProcess(deps: {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  repos: Repositories;
  metrics: Metrics;
  logger: Logger;
  backoff: BackoffConfig;
  outboundDenyCidrs: string[];
  outboundAllowCidrs: string[];
  maxConcurrentActivities: number;
}): Promise<RunningProcess & { running: Promise<void>; state(): string }> {
  const sender = createSender({
    addressPolicy: createAddressPolicy({ deny: deps.outboundDenyCidrs, allow: deps.outboundAllowCidrs }),
  });
  const workflowCode = resolveWorkflowCode();
  deps.logger.info(
    workflowCode.kind === 'bundle' ? { workflowBundle: workflowCode.codePath } : { workflowsPath: workflowCode.workflowsPath },
    workflowCode.kind === 'bundle' ? 'workflow code: prebuilt bundle' : 'workflow code: bundling from source at start-up',
  );
  const worker = await createFanoutWorker({
    workflowCode,
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    activities: createActivities({
      repos: deps.repos,
      send: sender.send,
      metrics: deps.metrics,
      logger: deps.logger,
      backoff: deps.backoff,
    }),
    maxConcurrentActivityTaskExecutions: deps.maxConcurrentActivities,
  });
  const running = worker.run();
  return {
    running,
    state: () => worker.getState(),
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await sender.close();
    },
  };
}
