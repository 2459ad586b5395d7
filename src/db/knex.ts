import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// bigint/int8 columns (count(*)) as numbers: counts here stay far below 2^53
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

export type Db = Knex;

export interface DbOptions {
  url: string;
  poolMax?: number;
  /** statement_timeout, so a stuck query surfaces as a transient error instead of a hang */
  statementTimeoutMs?: number;
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
