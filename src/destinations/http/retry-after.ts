/** A Retry-After beyond this is clamped: the workflow's own backoff cap is the real bound. */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * Retry-After (RFC 9110 §10.2.3) as milliseconds from `now`: delay-seconds or an HTTP-date,
 * clamped to 0..MAX_RETRY_AFTER_MS. Undefined when absent or unparsable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  let ms: number;
  if (/^\d+$/.test(trimmed)) {
    ms = Number(trimmed) * 1000;
  } else {
    // every HTTP-date form starts with a day name; without this check Date.parse would read
    // "-5" or "1.5" as dates in the past (retry at once)
    if (!/^[A-Za-z]{3}/.test(trimmed)) return undefined;
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}
