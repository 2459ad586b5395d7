import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { configDefaults, defineConfig } from 'vitest/config';
import { lastBuildWaitedFor } from './test/support/builds.js';

/**
 * Vitest's own order, except that the files waiting for a background Go build
 * (test/support/builds.ts) come last, those of the queue's first build first: on a new machine
 * every other file runs while the builds go on.
 */
class BuildsLastSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = new Map(sorted.map((f) => [f, lastBuildWaitedFor(readFileSync(f.moduleId, 'utf8'))]));
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => (rank.get(a.f) ?? -1) - (rank.get(b.f) ?? -1) || a.i - b.i)
      .map(({ f }) => f);
  }
}

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
    sequence: { sequencer: BuildsLastSequencer },
    reporters: ['default', './test/support/count-reporter.ts'],
  },
});
