import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, inject } from 'vitest';
import pg from 'pg';
import { createDb, type Db } from '../../src/db/knex.js';
import { migrateLatest } from '../../src/db/migrate.js';
import { isDatabaseError } from '../../src/db/db-errors.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';

export interface TestDatabase {
  url: string;
  db: Db;
  destroy(): Promise<void>;
}

/** A fresh, migrated database on the shared embedded Postgres, so test files never share rows. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('pgAdminUrl');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = adminUrl.replace(/\/postgres$/, `/${name}`);
  const db = createDb({ url, poolMax: 20 });
  await migrateLatest(db);
  return {
    url,
    db,
    async destroy() {
      await db.destroy();
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * A fresh database for the calling test file and its repositories: made before the file's tests,
 * dropped after them. Call it inside the file's describe.
 */
export function fileDatabase(): { readonly database: TestDatabase; readonly repos: Repositories } {
  let made: { database: TestDatabase; repos: Repositories } | undefined;
  beforeAll(async () => {
    const database = await createTestDatabase();
    made = { database, repos: createRepositories(database.db) };
  });
  afterAll(async () => made?.database.destroy());
  const get = () => {
    if (!made) throw new Error('fileDatabase() is used before its beforeAll ran');
    return made;
  };
  return {
    get database() {
      return get().database;
    },
    get repos() {
      return get().repos;
    },
  };
}

/**
 * How Postgres refused a statement, as "code: what the server said": src/db/db-errors.ts wraps the
 * driver's error in a classified DatabaseError whose message is for users (it names no table or
 * constraint) and keeps the driver's error as its cause. Fails when the statement succeeds.
 */
export async function refusal(statement: PromiseLike<unknown>): Promise<string> {
  try {
    await statement;
  } catch (err: unknown) {
    if (!isDatabaseError(err)) throw err;
    const cause = err.cause instanceof Error ? err.cause.message : String(err.cause);
    return `${err.code}: ${cause}`;
  }
  throw new Error('the statement was expected to be refused, and it succeeded');
}
