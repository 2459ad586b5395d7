import type { Reporter, SerializedError, TestModule } from 'vitest/node';

/**
 * Prints the plain closing line CI reads: "N passed, N failed". Skipped and todo tests count
 * as failed (a skipped test is not a passing one), and so does a file that failed to load, each
 * error outside a test (an unhandled rejection), and a run that ran no file at all (its global
 * setup could not start a dependency): a run that ran nothing is not a green one.
 */
export default class CountReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    for (const mod of testModules) {
      let tests = 0;
      for (const t of mod.children.allTests()) {
        tests++;
        const state = t.result().state;
        if (state === 'passed') passed++;
        else failed++;
      }
      if (tests === 0 || mod.state() === 'failed') {
        if (tests === 0) failed++;
        else if ([...mod.children.allTests()].every((t) => t.result().state === 'passed')) failed++;
      }
    }
    if (testModules.length === 0) failed = Math.max(failed, 1);
    process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
  }
}
