import { KubeConfig } from '@kubernetes/client-node';
import { bindSignalTurn, bindStartReplay, lazyTemporalClient } from '../api/start-replay.js';
import { loadOperatorConfig } from '../config/config.js';
import { pingDb } from '../db/knex.js';
import { createOperatorMetrics } from '../metrics/operator-metrics.js';
import { startOperator } from '../operator/operator.js';
import { bootstrap } from './bootstrap.js';
import { runService } from '../processes/lifecycle.js';

/**
 * Composition root: `webhook-fanout operator`. The cluster comes from KUBECONFIG (or
 * ~/.kube/config), else the in-cluster ServiceAccount; see docs/operator.md.
 */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadOperatorConfig(env);
  const { logger, metrics, db, service } = bootstrap('operator', cfg);
  const operatorMetrics = createOperatorMetrics(metrics.registry);
  // WebhookReplay runs start here; the client is made, and connects, on the first one
  const temporal = lazyTemporalClient(cfg.temporal);
  const kc = new KubeConfig();
  kc.loadFromDefault();
  let operator: Awaited<ReturnType<typeof startOperator>> | undefined;
  await runService({
    ...service,
    checks: {
      postgres: () => pingDb(db),
      kubernetes: async () => {
        if (!operator) return false;
        await operator.api.get('/version');
        return true;
      },
      informers: async () => operator?.ready() ?? false,
    },
    start: async () => {
      operator = await startOperator({
        kc,
        db,
        logger,
        metrics: operatorMetrics,
        namespaces: cfg.watchNamespaces,
        defaultAllowedNamespaces: cfg.defaultAllowedNamespaces,
        operations: cfg.operations,
        workers: cfg.workers,
        resyncPeriodMs: cfg.resyncPeriodMs,
        ...(cfg.identity ? { identity: cfg.identity } : {}),
        leaderElection: cfg.leaderElection,
        startReplayRun: bindStartReplay(temporal.client, cfg.temporal.taskQueue),
        signalTurn: bindSignalTurn(temporal.client, cfg.temporal.taskQueue),
      });
      const running = operator;
      // stopping releases the Lease, so a standby takes over at once instead of after its expiry
      return [{ stop: () => running.stop() }];
    },
    cleanup: async () => {
      await temporal.close();
      await db.destroy();
    },
  });
}
