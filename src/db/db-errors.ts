import { AppError, isAppError, type CodeOf } from '../domain/errors.js';

/**
 * An error raised by Postgres or by the way to it, classified once where knex runs a statement
 * (knex.ts), so every boundary maps it by its kind like any other AppError: the admin API answers
 * 503 + Retry-After for database_unavailable, the deliver activity spends no endpoint attempt on
 * it, and a constraint violation is the caller's conflict rather than an outage. The driver's
 * error stays the cause (logged, never shown: its text may name tables and constraints).
 */
export class DatabaseError extends AppError {
  /** Postgres's SQLSTATE, or the socket's error code, when there is one */
  readonly sqlState: string | undefined;

  constructor(code: DatabaseErrorCode, cause: unknown) {
    super(code, MESSAGES[code], { cause });
    this.name = 'DatabaseError';
    this.sqlState = codeOf(cause);
  }
}

type DatabaseErrorCode =
  | 'database_unavailable'
  | 'database_error'
  | Extract<
      CodeOf<'permanent'>,
      'unique_violation' | 'foreign_key_violation' | 'not_null_violation' | 'check_violation' | 'invalid_database_input'
    >;

const MESSAGES: Record<DatabaseErrorCode, string> = {
  database_unavailable: 'the database is unavailable; retry later',
  database_error: 'the database refused a statement',
  unique_violation: 'the change conflicts with an existing record',
  foreign_key_violation: 'the change refers to a record that does not exist',
  not_null_violation: 'the change lacks a required value',
  check_violation: 'the change breaks a rule of the stored data',
  invalid_database_input: 'a value of the change can not be stored',
};

/** SQLSTATEs with a permanent code of their own (Appendix A of the Postgres manual). */
const CONSTRAINTS: Record<string, DatabaseErrorCode> = {
  '23505': 'unique_violation',
  '23503': 'foreign_key_violation',
  '23502': 'not_null_violation',
  '23514': 'check_violation',
};

/**
 * SQLSTATE classes and codes that say the database, not the statement, failed: connection
 * exceptions (08), insufficient resources (53), operator intervention (57: shutdown, cannot
 * connect now, statement timeout or cancel), serialization failure and deadlock (40001, 40P01),
 * lock not available (55P03). Retrying the same statement later can succeed.
 */
const TRANSIENT_STATE = /^(08|53|57)|^40001$|^40P01$|^55P03$/;

/** Socket errors on the way to Postgres. */
const TRANSIENT_SOCKET = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * pg's and knex's errors without a code: a connection that ended or never came up, and the
 * pool's timeout for a free connection (KnexTimeoutError, by name).
 */
const TRANSIENT_MESSAGE =
  /Connection terminated|timeout expired|connection timeout|Timeout acquiring a connection|Client has encountered a connection error|Connection is closed|Unable to acquire a connection/i;

function codeOf(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

function classify(err: unknown): DatabaseErrorCode {
  const code = codeOf(err);
  if (code !== undefined) {
    const constraint = CONSTRAINTS[code];
    if (constraint) return constraint;
    if (TRANSIENT_STATE.test(code) || TRANSIENT_SOCKET.has(code)) return 'database_unavailable';
    if (code.startsWith('22')) return 'invalid_database_input';
  }
  if (err instanceof Error && (err.name === 'KnexTimeoutError' || TRANSIENT_MESSAGE.test(err.message))) return 'database_unavailable';
  return 'database_error';
}

/** The AppError for anything knex or pg threw; an AppError (already classified) is kept as it is. */
export function classifyDatabaseError(err: unknown): AppError {
  return isAppError(err) ? err : new DatabaseError(classify(err), err);
}

export function isDatabaseError(err: unknown): err is DatabaseError {
  return err instanceof DatabaseError;
}
