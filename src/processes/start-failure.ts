import { describeError } from '../domain/errors.js';

/**
 * What a process logs when it can not start, cause included: a classified error's own message
 * ("the database refused a statement") does not say that the server's certificate comes from
 * another CA; the driver's error under it does. describeError leaves out SQL text and a URL's
 * user and password, so the line names the cause without the DATABASE_URL's credentials.
 */
export function startFailure(err: unknown): { cause: string; err: Record<string, unknown> | string } {
  const cause = describeError(err);
  if (!(err instanceof Error)) return { cause, err: cause };
  return { cause, err: { type: err.name, message: cause, code: innermostCode(err), stack: err.stack } };
}

/** The innermost error code (SELF_SIGNED_CERT_IN_CHAIN, ECONNREFUSED, a SQLSTATE): what to search for. */
function innermostCode(err: Error): string | undefined {
  const inner = err.cause instanceof Error ? innermostCode(err.cause) : undefined;
  const own = (err as { code?: unknown }).code;
  return inner ?? (typeof own === 'string' ? own : undefined);
}
