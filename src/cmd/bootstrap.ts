import type { CommonConfig, DatabaseConfig } from '../config/config.js';
import { createDb, type Db } from '../db/knex.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { createLogger, type Logger } from '../observability/logger.js';

export interface Bootstrap {
  logger: Logger;
  metrics: Metrics;
  db: Db;
  /** what runService needs of them: spread into its options */
  service: { name: string; logger: Logger; managementPort: number; registry: Metrics['registry'] };
}

/**
 * What every long-running process opens first: its logger (named for the process, so lines of
 * several processes can be told apart), its metrics registry (served on the management port) and
 * its database pool.
 */
export function bootstrap(name: string, cfg: CommonConfig & DatabaseConfig): Bootstrap {
  const logger = createLogger({ level: cfg.logLevel, name });
  const metrics = createMetrics();
  return {
    logger,
    metrics,
    db: createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax, tls: cfg.databaseTls, logger }),
    service: { name, logger, managementPort: cfg.managementPort, registry: metrics.registry },
  };
}
