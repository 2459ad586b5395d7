import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import type { Logger } from '../observability/logger.js';

// bigint/int8 columns (count(*)) as numbers: counts here stay far below 2^53
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

export type Db = Knex;

export interface DbOptions {
  url: string;
  poolMax?: number;
  /** statement_timeout, so a stuck query surfaces as a transient error instead of a hang */
  statementTimeoutMs?: number;
  /** knex's own warnings (pool, deprecations) go here as JSON; without one they go to console in colour */
  logger?: Logger;
}

const text = (m: unknown): string => (m instanceof Error ? m.message : typeof m === 'string' ? m : JSON.stringify(m));

function knexLog(logger: Logger): Knex.Config['log'] {
  return {
    warn: (m: unknown) => logger.warn(text(m)),
    error: (m: unknown) => logger.error(text(m)),
    deprecate: (method: string, alternative: string) => logger.warn({ method, alternative }, 'knex deprecation'),
    debug: (m: unknown) => logger.debug(text(m)),
  };
}

export function createDb(opts: DbOptions): Db {
  return knexFactory({
    client: 'pg',
    connection: {
      connectionString: opts.url,
      statement_timeout: opts.statementTimeoutMs ?? 10_000,
      connectionTimeoutMillis: 5_000,
    },
    pool: { min: 0, max: opts.poolMax ?? 10 },
    acquireConnectionTimeout: 5_000,
    ...(opts.logger ? { log: knexLog(opts.logger.child({ component: 'knex' })) } : {}),
  });
}

/** True when Postgres answers; used by /readyz. */
export async function pingDb(db: Db): Promise<boolean> {
  try {
    await db.raw('select 1');
    return true;
  } catch {
    return false;
  }
}
