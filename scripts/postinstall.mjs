// `npm install` applies the patches in patches/ to node_modules with patch-package (what each one
// changes and why: docs/decisions.md, "Patched dependencies"). A production install (--omit=dev:
// the image's deps stage) has no patch-package: the Dockerfile copies the patched packages from its
// build stage, and the worker checks at start-up that its patch is in place (src/processes/workflow-sandbox.ts).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const bin = 'node_modules/patch-package/index.js';
if (!existsSync(bin)) {
  const production = (process.env.npm_config_omit ?? '').includes('dev') || process.env.NODE_ENV === 'production';
  if (production) {
    console.log('postinstall: a production install without patch-package: the image build copies the patched packages (Dockerfile)');
    process.exit(0);
  }
  console.error('postinstall: node_modules/patch-package is missing, so patches/ can not be applied: run `npm install` again');
  process.exit(1);
}
const run = spawnSync(process.execPath, [bin, '--error-on-fail'], { stdio: 'inherit' });
process.exit(run.status ?? 1);
