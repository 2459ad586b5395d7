import { buildConsole, FIRST_LOAD_BUDGET_BYTES } from '../../src/dev/console-build.js';

/**
 * `npm run build`'s last step: the web console into dist/console, then the JavaScript a first load
 * fetches, gzipped, printed and held to its budget (src/dev/console-build.ts builds it).
 */

const result = await buildConsole();
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
for (const c of result.firstLoad) console.log(`  ${c.file}  ${kb(c.gzipBytes)} gzipped`);
console.log(`console first-load JavaScript: ${kb(result.firstLoadGzipBytes)} gzipped (budget ${kb(FIRST_LOAD_BUDGET_BYTES)})`);
if (result.firstLoadGzipBytes > FIRST_LOAD_BUDGET_BYTES) {
  console.error('console build: first-load JavaScript over budget');
  process.exit(1);
}
