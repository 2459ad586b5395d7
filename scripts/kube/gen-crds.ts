// Writes charts/webhook-fanout/crds/*.yaml (the only copy; crds/ at the repository root is a
// symlink to it, for `kubectl apply -f crds/`) from the TypeBox specs (src/custom-resources/specs.ts)
// through src/operator/crd.ts.
// Usage: npx tsx scripts/kube/gen-crds.ts [--check]   (--check fails when a committed file differs)
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderCrdFiles } from '../../src/operator/crd.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = path.join(root, 'charts', 'webhook-fanout', 'crds');
const check = process.argv.includes('--check');
let stale = 0;
await mkdir(dir, { recursive: true });
for (const { file, text } of renderCrdFiles()) {
  const target = path.join(dir, file);
  const current = await readFile(target, 'utf8').catch(() => undefined);
  if (current === text) continue;
  if (check) {
    process.stderr.write(`crds/${file} is out of date: run npx tsx scripts/kube/gen-crds.ts\n`);
    stale++;
  } else {
    await writeFile(target, text);
    process.stdout.write(`wrote crds/${file}\n`);
  }
}
if (stale > 0) process.exit(1);
