import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // the container tests need the built image: npm run test:image (vitest.image.config.ts)
    exclude: ['test/image/**', '**/node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    // real servers and Temporal timers: generous, but a hang still fails
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // 2 cores: a few files at once keeps Postgres and Temporal responsive
    maxWorkers: 3,
    pool: 'forks',
    reporters: ['default', './test/support/count-reporter.ts'],
  },
});
