import { ConfigError } from '../config/env-reader.js';
import { ERROR_CODES, type CodeOf, type ErrorCode, type ErrorKind } from './error-codes.js';

export type { CodeOf, ErrorCode, ErrorKind } from './error-codes.js';

/**
 * One error taxonomy for the whole service. The kind decides what every boundary does with it:
 * - permanent: the input or configuration is wrong; retrying will not help (4xx, non-retryable activity)
 * - transient: a dependency is briefly unavailable; retry later (503, retryable activity, message redelivered)
 * - internal: a bug; logged with detail, shown to callers without it (500)
 * The kind is the code's, from the one registry (error-codes.ts).
 */
export class AppError extends Error {
  readonly kind: ErrorKind;
  /**
   * stable machine-readable code, e.g. "unauthorized", "not_found". Each boundary maps the kind,
   * and where it needs more (an HTTP status, a failure type, a condition reason), the code's entry
   * in ERROR_CODES. No error carries a boundary's vocabulary itself.
   */
  readonly code: ErrorCode;
  /** seconds, for transient errors that reach HTTP */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, opts: { retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.kind = ERROR_CODES[code].kind;
    this.code = code;
    this.retryAfterSeconds = opts.retryAfterSeconds ?? (this.kind === 'transient' ? DEFAULT_RETRY_AFTER_SECONDS : undefined);
  }
}

/** What a transient error tells HTTP callers to wait when its raiser does not know better. */
export const DEFAULT_RETRY_AFTER_SECONDS = 5;

export const permanent = (code: CodeOf<'permanent'>, message: string, cause?: unknown): AppError => new AppError(code, message, { cause });

export const transient = (
  code: CodeOf<'transient'>,
  message: string,
  cause?: unknown,
  retryAfterSeconds = DEFAULT_RETRY_AFTER_SECONDS,
): AppError => new AppError(code, message, { cause, retryAfterSeconds });

export const internal = (code: CodeOf<'internal'>, message: string, cause?: unknown): AppError => new AppError(code, message, { cause });

/** An error of the taxonomy by its shape: a registered code, and the kind the registry gives it. */
type ByShape = AppError & { [K in ErrorKind]: { kind: K; code: CodeOf<K> } }[ErrorKind];

/**
 * The taxonomy's members raised where this module can not be imported: ConfigError (config
 * depends on nothing). The compiler checks each has an AppError's shape, its code of its kind.
 */
const MEMBERS_BY_SHAPE: readonly (abstract new (...args: never[]) => ByShape)[] = [ConfigError];

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError || MEMBERS_BY_SHAPE.some((member) => err instanceof member);
}

// knex prefixes driver errors with the full SQL text: keep only the reason after it
const withoutSql = (message: string): string => /^(insert|update|delete|select|with)\b[\s\S]* - ([^]*)$/i.exec(message)?.[2] ?? message;

// a URL's user information (postgres://user:password@host) is a credential wherever a driver quotes it
const withoutUserInfo = (text: string): string => text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1[redacted]@');

/** A one-line, secret-free description of any thrown value, for logs and last_error. */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${withoutSql(err.cause.message)}` : '';
    return withoutUserInfo(`${withoutSql(err.message)}${cause}`.replace(/\s+/g, ' ')).slice(0, 500);
  }
  return withoutUserInfo(String(err).replace(/\s+/g, ' ')).slice(0, 500);
}
