import { describe, expect, it } from 'vitest';
import { splitStatements } from '../../../src/db/migrate.js';

describe('splitStatements: a no-transaction migration, one statement at a time', () => {
  it.each([
    { sql: 'SELECT 1;\nSELECT 2;\n', statements: ['SELECT 1', 'SELECT 2'] },
    {
      sql: '-- migrate: no-transaction\n-- a comment; with a semicolon;\nDROP INDEX CONCURRENTLY IF EXISTS i;\nCREATE INDEX CONCURRENTLY i\n  ON t (a) WHERE b IS NULL;',
      statements: ['DROP INDEX CONCURRENTLY IF EXISTS i', 'CREATE INDEX CONCURRENTLY i\n  ON t (a) WHERE b IS NULL'],
    },
    { sql: 'SELECT 1;  \r\nSELECT 2', statements: ['SELECT 1', 'SELECT 2'] },
    { sql: '-- only comments\n\n', statements: [] },
  ])('$sql', ({ sql, statements }) => {
    expect(splitStatements(sql)).toEqual(statements);
  });
});
