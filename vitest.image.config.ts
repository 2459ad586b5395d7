import { defineConfig } from 'vitest/config';

/**
 * The container tests (test/image/): the built image (IMAGE, default webhook-fanout:dev; build it
 * with scripts/image/build.sh) run as the chart runs it, against the same real services as the
 * other tests (test/support/global-setup.ts). `npm run test:image`.
 */
export default defineConfig({
  test: {
    include: ['test/image/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 240_000,
    maxWorkers: 1,
    pool: 'forks',
    reporters: ['default', './test/support/count-reporter.ts'],
  },
});
