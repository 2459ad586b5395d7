import { describe, expect, it } from 'vitest';
import { classifyDatabaseError, isDatabaseError } from '../../../src/db/db-errors.js';
import { permanent } from '../../../src/domain/errors.js';

// pg's errors carry Postgres's SQLSTATE as `code`; socket errors node's; pg and knex also throw
// plain Errors for a connection that ended or a pool that had none free.
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });
const knexTimeout = Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), {
  name: 'KnexTimeoutError',
});

describe('classifyDatabaseError', () => {
  it.each<[string, unknown, string, string]>([
    ['connection refused', pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), 'database_unavailable', 'transient'],
    ['connection reset', pgError('ECONNRESET', 'read ECONNRESET'), 'database_unavailable', 'transient'],
    ['host not found', pgError('ENOTFOUND', 'getaddrinfo ENOTFOUND db'), 'database_unavailable', 'transient'],
    ['connection ended', new Error('Connection terminated unexpectedly'), 'database_unavailable', 'transient'],
    ['connect timeout', new Error('Connection terminated due to connection timeout'), 'database_unavailable', 'transient'],
    ['pool has no connection', knexTimeout, 'database_unavailable', 'transient'],
    ['admin shutdown 57P01', pgError('57P01', 'terminating connection due to administrator command'), 'database_unavailable', 'transient'],
    ['starting up 57P03', pgError('57P03', 'the database system is starting up'), 'database_unavailable', 'transient'],
    ['statement timeout 57014', pgError('57014', 'canceling statement due to statement timeout'), 'database_unavailable', 'transient'],
    ['too many connections 53300', pgError('53300', 'sorry, too many clients already'), 'database_unavailable', 'transient'],
    ['connection failure 08006', pgError('08006', 'connection failure'), 'database_unavailable', 'transient'],
    ['serialization failure 40001', pgError('40001', 'could not serialize access'), 'database_unavailable', 'transient'],
    ['deadlock 40P01', pgError('40P01', 'deadlock detected'), 'database_unavailable', 'transient'],
    ['unique 23505', pgError('23505', 'duplicate key value violates unique constraint "x"'), 'unique_violation', 'permanent'],
    ['foreign key 23503', pgError('23503', 'insert or update violates foreign key constraint'), 'foreign_key_violation', 'permanent'],
    ['not null 23502', pgError('23502', 'null value in column "url"'), 'not_null_violation', 'permanent'],
    ['check 23514', pgError('23514', 'new row violates check constraint'), 'check_violation', 'permanent'],
    ['invalid uuid 22P02', pgError('22P02', 'invalid input syntax for type uuid'), 'invalid_database_input', 'permanent'],
    ['undefined column 42703 (our SQL)', pgError('42703', 'column "nope" does not exist'), 'database_error', 'internal'],
    ['syntax error 42601 (our SQL)', pgError('42601', 'syntax error at or near "selec"'), 'database_error', 'internal'],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'x')"), 'database_error', 'internal'],
    ['a thrown string', 'boom', 'database_error', 'internal'],
  ])('%s -> %s (%s)', (_what, err, code, kind) => {
    const classified = classifyDatabaseError(err);
    expect(classified).toMatchObject({ code, kind, cause: err });
    expect(isDatabaseError(classified)).toBe(true);
  });

  it('keeps the SQLSTATE and never shows the driver text in the message', () => {
    const classified = classifyDatabaseError(pgError('23505', 'duplicate key value violates unique constraint "webhook_source_key"'));
    expect(classified).toMatchObject({ sqlState: '23505', message: 'the change conflicts with an existing record' });
  });

  it('gives a transient one the default Retry-After', () => {
    expect(classifyDatabaseError(pgError('ECONNREFUSED', 'x')).retryAfterSeconds).toBe(5);
  });

  it('keeps an AppError as it is', () => {
    const err = permanent('not_found', 'no such event');
    expect(classifyDatabaseError(err)).toBe(err);
  });
});
