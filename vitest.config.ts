import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // record-histories.ts rewrites the replay fixtures: only on purpose (npm run record:histories)
    include: ['test/**/*.test.ts', ...(process.env.RECORD_HISTORIES === '1' ? ['test/workflows/record-histories.ts'] : [])],
    // suites of their own: the fault suite (npm run test:faults) and the container tests, which
    // need the built image (npm run test:image)
    exclude: [...configDefaults.exclude, 'test/faults/**', 'test/image/**'],
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
