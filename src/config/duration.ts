/**
 * Retention ages: a whole number and one unit, `90d`, `36h`, `30m` or `45s` (the short ones are
 * for tests). One syntax for the environment (RETENTION_MAX_AGE), the chart (retention.maxAge) and
 * the InboundCredential (spec.retention.maxAge); the CRD and the chart's schema check it with
 * DURATION_PATTERN, so a typo is refused where it is written, not at the next purge.
 */
export const DURATION_PATTERN = '^[1-9][0-9]{0,5}[dhms]$';

/** An override's way of saying "keep this source's events forever", whatever the global age. */
export const KEEP_FOREVER = 'forever';

const UNIT_SECONDS: Record<string, number> = { d: 86_400, h: 3_600, m: 60, s: 1 };

/** Seconds of a duration, or an explanation of what is wrong with it. */
export function parseDuration(text: string): { seconds: number } | { problem: string } {
  const m = /^([1-9][0-9]{0,5})([dhms])$/.exec(text.trim());
  if (!m) return { problem: `must be a duration such as 90d, 36h, 30m or 45s (a whole number > 0 and one of d, h, m, s), got "${text}"` };
  return { seconds: Number(m[1]) * (UNIT_SECONDS[m[2] as string] ?? 1) };
}

/** A duration in its largest whole unit, for log lines and messages: 7776000 -> "90d". */
export function formatDuration(seconds: number): string {
  for (const [unit, size] of Object.entries(UNIT_SECONDS)) if (seconds % size === 0) return `${seconds / size}${unit}`;
  return `${seconds}s`;
}
