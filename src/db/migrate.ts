import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Knex } from 'knex';
import type { Db } from './knex.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * A file whose first line is this runs outside a transaction, one statement at a time (split at
 * each `;` that ends a line): what CREATE INDEX CONCURRENTLY needs. Such a file holds plain
 * statements only (no function bodies), each safe to run again after a failure half-way.
 */
export const NO_TRANSACTION_MARKER = '-- migrate: no-transaction';

/** The statements of a no-transaction file, its comments left out. */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/\r?\n/)
    .filter((l) => !/^\s*--/.test(l))
    .join('\n')
    .split(/;[ \t]*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Plain .sql files, applied in name order by knex, which records them and holds a lock. */
class SqlMigrationSource implements Knex.MigrationSource<string> {
  constructor(private readonly dir: string) {}

  async getMigrations(): Promise<string[]> {
    const files = await readdir(this.dir);
    return files.filter((f) => f.endsWith('.sql')).sort();
  }

  getMigrationName(migration: string): string {
    return migration;
  }

  async getMigration(migration: string): Promise<Knex.Migration> {
    const sql = await readFile(path.join(this.dir, migration), 'utf8');
    if (sql.startsWith(NO_TRANSACTION_MARKER)) {
      return {
        up: async (knex: Knex) => {
          for (const statement of splitStatements(sql)) await knex.raw(statement.replace(/\?/g, '\\?'));
        },
        down: async () => {
          throw new Error(`${migration} has no down migration; restore from backup instead`);
        },
        // read by knex's migrator (Migration's type does not declare it)
        config: { transaction: false },
      } as Knex.Migration;
    }
    return {
      up: async (knex: Knex) => {
        // knex reads "?" as a binding placeholder even without bindings; "\\?" is its escape
        await knex.raw(sql.replace(/\?/g, '\\?'));
      },
      down: async () => {
        throw new Error(`${migration} has no down migration; restore from backup instead`);
      },
    };
  }
}

/** Applies pending migrations; running it again is a no-op. Returns the names applied now. */
export async function migrateLatest(db: Db, dir: string = MIGRATIONS_DIR): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({
    migrationSource: new SqlMigrationSource(dir),
    tableName: 'knex_migrations',
  })) as [number, string[]];
  return applied;
}
