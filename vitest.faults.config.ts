import { defineConfig } from 'vitest/config';

/**
 * `npm run test:faults`: the compiled build as separate processes, killed (and their
 * dependencies stopped) under load. Starts its own Postgres, Temporal and SNS/SQS emulator, so it
 * has no global setup; one file at a time, the whole run bounded to a few minutes.
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    testTimeout: 480_000,
    hookTimeout: 180_000,
    maxWorkers: 1,
    pool: 'forks',
    reporters: ['default', './test/support/count-reporter.ts'],
  },
});
