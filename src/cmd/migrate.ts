import { loadMigrateConfig } from '../config/config.js';
import { createDb } from '../db/knex.js';
import { migrateLatest } from '../db/migrate.js';
import { createLogger } from '../observability/logger.js';

/** Composition root: `webhook-fanout migrate` (idempotent; knex records and locks). */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadMigrateConfig(env);
  const logger = createLogger({ level: cfg.logLevel, name: 'migrate' });
  // no statement timeout: an index built on a year of rows takes longer than the services' 10 s
  const db = createDb({ url: cfg.databaseUrl, poolMax: 2, tls: cfg.databaseTls, logger, statementTimeoutMs: 0 });
  try {
    const applied = await migrateLatest(db);
    logger.info({ applied }, applied.length === 0 ? 'schema up to date' : `applied ${applied.length} migration(s)`);
  } finally {
    await db.destroy();
  }
}
