import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Knex } from 'knex';
import type { Db } from './knex.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

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
