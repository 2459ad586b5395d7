import { describeError } from '../domain/errors.js';
import type { Logger } from '../observability/logger.js';

/**
 * Retries `attempt` until it succeeds, with capped exponential backoff and a log line per failure.
 * A dependency that is down at start-up (Temporal, Postgres) delays the process instead of
 * crashing it: a crash-looping pod sits in CrashLoopBackOff for minutes after the dependency is
 * back, while a waiting one starts at once.
 */
export async function waitFor<T>(
  what: string,
  attempt: () => Promise<T>,
  opts: { logger: Logger; initialDelayMs?: number; maxDelayMs?: number },
): Promise<T> {
  let delay = opts.initialDelayMs ?? 500;
  for (let n = 1; ; n++) {
    try {
      const result = await attempt();
      if (n > 1) opts.logger.info({ dependency: what, attempts: n }, `${what} reachable`);
      return result;
    } catch (err) {
      opts.logger.warn({ dependency: what, attempt: n, retryInMs: delay, err: describeError(err) }, `${what} unreachable; retrying`);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, opts.maxDelayMs ?? 5_000);
    }
  }
}
