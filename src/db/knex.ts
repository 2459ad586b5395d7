import { statSync } from 'node:fs';
import knexFactory, { type Knex } from 'knex';
import PgClient from 'knex/lib/dialects/postgres/index.js';
import pg from 'pg';
import { pgSslOptions, type DatabaseTls } from '../config/tls.js';
import { classifyDatabaseError } from './db-errors.js';
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
  /** TLS from DATABASE_SSL_MODE and its files (config/tls.ts); absent or null: what the URL says */
  tls?: DatabaseTls | null | undefined;
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

/**
 * knex's Postgres client with every failure classified where it arises: a statement (query, also
 * inside a transaction, whose client inherits from this one) and taking a connection from the
 * pool. Whatever reaches a repository's caller is an AppError (db-errors.ts).
 */
class ClassifyingPgClient extends PgClient {
  override query(connection: unknown, queryParam: unknown): Promise<unknown> {
    return (super.query(connection, queryParam) as Promise<unknown>).catch((err: unknown) => {
      throw classifyDatabaseError(err);
    });
  }

  override acquireConnection(): Promise<unknown> {
    return (super.acquireConnection() as Promise<unknown>).catch((err: unknown) => {
      throw classifyDatabaseError(err);
    });
  }
}

export function createDb(opts: DbOptions): Db {
  const connection = {
    connectionString: opts.url,
    statement_timeout: opts.statementTimeoutMs ?? 10_000,
    connectionTimeoutMillis: 5_000,
  };
  const tls = opts.tls;
  return knexFactory({
    client: ClassifyingPgClient,
    // with TLS settings, a provider: its files are read now, and again once one of them changed (a
    // rotated Secret): knex then replaces the pool's connections with ones made on the new files
    connection: tls
      ? () => {
          const changed = filesChangedCheck([tls.caFile, tls.certFile, tls.keyFile]);
          return { ...connection, ssl: pgSslOptions(tls), expirationChecker: changed };
        }
      : connection,
    pool: { min: 0, max: opts.poolMax ?? 10 },
    acquireConnectionTimeout: 5_000,
    ...(opts.logger ? { log: knexLog(opts.logger.child({ component: 'knex' })) } : {}),
  });
}

/** How often the TLS files' modification times are looked at (knex asks on every acquire). */
const TLS_FILES_CHECK_MS = 10_000;

/** True once a file's modification time differs from what it was when this was made; checked at most every TLS_FILES_CHECK_MS. */
function filesChangedCheck(files: ReadonlyArray<string | undefined>, now: () => number = Date.now): () => boolean {
  const paths = files.filter((f): f is string => f !== undefined);
  const stamp = (): string => paths.map((f) => statSync(f, { throwIfNoEntry: false })?.mtimeMs ?? 'missing').join(',');
  const initial = stamp();
  let checkedAt = now();
  let changed = false;
  return () => {
    if (changed || now() - checkedAt < TLS_FILES_CHECK_MS) return changed;
    checkedAt = now();
    changed = stamp() !== initial;
    return changed;
  };
}

const preparedTexts = new Map<string, string>();

/**
 * A statement of the delivery path, run as a named prepared statement: knex hands its options to
 * pg's query config, and pg's `{ name, text, values }` parses the text on a connection once and
 * from then on only binds and executes it, so Postgres plans it once per connection (a generic
 * plan after five runs) instead of on every call: planning was most of Postgres's CPU per
 * delivery. The query still runs through knex (its pool and its size, its error handling,
 * statement_timeout on the connection): going around it to pg's client saved too little to be
 * worth a second path (figures for both: docs/benchmarks.md, "Figures behind the code").
 *
 * The text must name its result columns (no `*` of a table): Postgres refuses to run a prepared
 * statement whose result columns changed ("cached plan must not change result type"), so a
 * migration adding a column would break every live connection's copy until the worker restarted.
 * A name stands for one text: reusing it for another fails here at once (pg would fail only on a
 * connection that ran both).
 */
export function prepared<TResult>(
  db: Db,
  name: string,
  sql: string,
  bindings: readonly Knex.RawBinding[] | Knex.ValueDict,
): Knex.Raw<TResult> {
  const known = preparedTexts.get(name);
  if (known === undefined) preparedTexts.set(name, sql);
  else if (known !== sql) throw new Error(`prepared statement ${name} was used for a different statement`);
  return db.raw<TResult>(sql, bindings).options({ name });
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
