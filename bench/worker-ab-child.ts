// Worker child of bench/worker-ab.ts: the production worker (createFanoutWorker: the prebuilt
// workflow bundle, the production worker options) with activities that answer at once, so that
// its CPU is the Temporal SDK's and the workflow's, not Postgres's or an HTTP request's.
// Configured by argv: <temporal address> <task queue> <endpoints per event>; WORKER_AB_BUNDLE names
// another workflow bundle than the build's (to compare two builds of the workflow).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import type { FanoutActivities, PlannedDelivery } from '../src/activities/types.js';
import { createLogger } from '../src/observability/logger.js';
import { installTemporalRuntime } from '../src/observability/temporal-runtime.js';
import { createFanoutWorker } from '../src/processes/fanout-worker.js';

const [address, taskQueue, endpointsArg] = process.argv.slice(2);
if (!address || !taskQueue) throw new Error('usage: worker-ab-child.ts <temporal address> <task queue> [endpoints]');
const endpoints = Number(endpointsArg ?? 1);
// the build's bundle, as the compiled worker loads it (from src/ through tsx, createFanoutWorker
// would run webpack over the workflow sources at every start instead)
const bundle = process.env.WORKER_AB_BUNDLE ?? fileURLToPath(new URL('../dist/workflow-bundle.js', import.meta.url));
if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\` first`);

// results of the size the real activities return (ids are UUIDs)
const uuid = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const activities: FanoutActivities = {
  prepare: () =>
    Promise.resolve({
      deliveries: Array.from({ length: endpoints }, (_, i): PlannedDelivery => ({
        deliveryId: uuid(i),
        endpointId: uuid(1000 + i),
        maxAttempts: 5,
        timeoutSeconds: 10,
        priorAttempts: 0,
      })),
      backoff: { initialIntervalMs: 1000, backoffCoefficient: 2, maximumIntervalMs: 600_000 },
    }),
  deliver: () => Promise.resolve({ status: 'SUCCESS' }),
  finishEvent: () => Promise.resolve('COMPLETED'),
  // unordered plans never call them
  orderingTurn: () => Promise.resolve({ turn: 'go' }),
  orderingRelease: () => Promise.resolve({}),
};

// as the service installs it: SDK and core logs into pino at WARN
installTemporalRuntime(createLogger({ level: 'info', name: 'worker-ab' }));
const connection = await NativeConnection.connect({ address });
const { worker } = await createFanoutWorker({
  connection,
  namespace: 'default',
  taskQueue,
  activities,
  maxConcurrentActivityTaskExecutions: 100,
  // WORKER_AB_GLOBALS=swap: the SDK's full swap of the sandbox's globals, as a tracing worker runs
  // (its bundle is the plain one all the same); default locked, as the worker runs without tracing
  workflowCode: { kind: 'bundle', codePath: bundle, traced: process.env.WORKER_AB_GLOBALS === 'swap' },
  sandboxDiagnostics: process.env.WORKER_SANDBOX_DIAGNOSTICS === 'true',
});
const running = worker.run();
process.send?.('ready');
process.once('message', () => worker.shutdown());
await running;
await connection.close();
