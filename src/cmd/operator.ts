import { KubeConfig } from '@kubernetes/client-node';
import { loadOperatorConfig } from '../config/config.js';
import { createDb, pingDb } from '../db/knex.js';
import { createMetrics } from '../metrics/metrics.js';
import { createOperatorMetrics } from '../metrics/operator-metrics.js';
import { createLogger } from '../observability/logger.js';
import { startOperator } from '../operator/operator.js';
import { runService } from './lifecycle.js';

/**
 * Composition root: `webhook-fanout operator`. The cluster comes from KUBECONFIG (or
 * ~/.kube/config), else the in-cluster ServiceAccount; see docs/operator.md.
 */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadOperatorConfig(env);
  const logger = createLogger({ level: cfg.logLevel, name: 'operator' });
  const metrics = createMetrics();
  const operatorMetrics = createOperatorMetrics(metrics.registry);
  const db = createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax, logger });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  let operator: Awaited<ReturnType<typeof startOperator>> | undefined;
  await runService({
    name: 'operator',
    logger,
    managementPort: cfg.managementPort,
    registry: metrics.registry,
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
        workers: cfg.workers,
        resyncPeriodMs: cfg.resyncPeriodMs,
        ...(cfg.identity ? { identity: cfg.identity } : {}),
        leaderElection: cfg.leaderElection,
      });
      const running = operator;
      // stopping releases the Lease, so a standby takes over at once instead of after its expiry
      return [{ stop: () => running.stop() }];
    },
    cleanup: async () => {
      await db.destroy();
    },
  });
}
