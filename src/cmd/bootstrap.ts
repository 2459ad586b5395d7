import type { CommonConfig, DatabaseConfig } from '../config/config.js';
import { createDb, type Db } from '../db/knex.js';
import { createMetrics, type Metrics } from '../metrics/metrics.js';
import { createLogger, type Logger } from '../observability/logger.js';

export interface Bootstrap {
  logger: Logger;
  metrics: Metrics;
  db: Db;
}

/**
 * What every long-running process opens first: its logger (named for the process, so lines of
 * several processes can be told apart), its metrics registry and its database pool.
 */
export function bootstrap(name: string, cfg: CommonConfig & DatabaseConfig): Bootstrap {
  const logger = createLogger({ level: cfg.logLevel, name });
  return { logger, metrics: createMetrics(), db: createDb({ url: cfg.databaseUrl, poolMax: cfg.dbPoolMax, logger }) };
}
