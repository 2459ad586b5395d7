import { defineConfig } from 'vitest/config';

// The unit layer alone (npm run test:unit): pure modules, no global setup, so no Postgres,
// Temporal or Kubernetes is started and the run takes seconds. `npm test` runs these too.
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    testTimeout: 5_000,
    pool: 'threads',
    maxWorkers: 2,
    reporters: ['default', './test/support/count-reporter.ts'],
  },
});
