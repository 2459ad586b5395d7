/** Waits ms milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface EventuallyOptions {
  /** how long to keep asking; 20 s unless said */
  timeoutMs?: number;
  /** between two asks; 100 ms unless said */
  intervalMs?: number;
  /** what is waited for, named in the error when it does not come */
  what?: string;
}

/**
 * Asks fn until it answers a value other than undefined, null or false, and returns that value. A
 * throw counts as "not yet". When the time is up it fails naming what it waited for and the last
 * answer or error. A number for opts is the timeout.
 */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, opts: EventuallyOptions | number = {}): Promise<T> {
  const { timeoutMs = 20_000, intervalMs = 100, what = 'a condition' } = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== null && v !== false) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
      );
    }
    await sleep(intervalMs);
  }
}
