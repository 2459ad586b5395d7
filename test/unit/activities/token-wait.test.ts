import { describe, expect, it } from 'vitest';
import { TOKEN_WAIT_MAX_MS, tokenWaitMs } from '../../../src/activities/token-wait.js';
import { DEFAULT_BACKOFF } from '../../../src/config/settings.js';
import type { TokenWaitReason } from '../../../src/delivery/types.js';
import { DATABASE_RETRY_BUDGET } from '../../../src/workflows/names.js';

describe("tokenWaitMs: how long a delivery waits after an OAuth2 endpoint's token endpoint failed it", () => {
  it.each<[TokenWaitReason, number, number]>([
    // Temporal attempt, wait with the default backoff (1 s, x2, capped at 10 min) capped by the reason
    ['unavailable', 1, 1_000],
    ['unavailable', 6, 32_000],
    ['unavailable', 7, 60_000],
    ['unavailable', 400, 60_000],
    ['refused', 1, 1_000],
    ['refused', 7, 64_000],
    ['refused', 9, 256_000],
    ['refused', 10, 300_000],
    ['refused', 400, 300_000],
  ])('%s, attempt %i -> %i ms', (reason, attempt, ms) => {
    expect(tokenWaitMs(DEFAULT_BACKOFF, attempt, reason)).toBe(ms);
  });

  it('follows a shorter backoff cap', () => {
    expect(tokenWaitMs({ initialIntervalMs: 50, backoffCoefficient: 2, maximumIntervalMs: 500 }, 20, 'refused')).toBe(500);
  });

  it('refused credentials wait longer than a day within the Temporal budget; an unavailable token endpoint about six hours', () => {
    const total = (reason: TokenWaitReason) =>
      Array.from({ length: DATABASE_RETRY_BUDGET }, (_, i) => tokenWaitMs(DEFAULT_BACKOFF, i + 1, reason)).reduce((a, b) => a + b, 0);
    expect(total('refused')).toBeGreaterThan(TOKEN_WAIT_MAX_MS.refused * 390);
    expect(total('refused') / 3600_000).toBeGreaterThan(32);
    expect(total('unavailable') / 3600_000).toBeGreaterThan(6);
  });
});
