// Prebuilds the worker's workflow bundle (part of `npm run build`, so of the image build):
//
//   tsx scripts/bundle-workflows.ts [OUT]      # default dist/workflow-bundle.js
//
// The worker loads dist/workflow-bundle.js when it is there (src/processes/fanout-worker.ts
// resolveWorkflowCode) instead of running webpack over the workflow sources at every start: the
// worker starts faster and smaller, and the image ships no workflow sources. The bundle comes from
// the same @temporalio/workflow version the worker runs (one lock file), which the SDK requires.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowInterceptorModule } from '../src/processes/fanout-worker.js';

const repo = fileURLToPath(new URL('../', import.meta.url));
const out = path.resolve(process.argv[2] ?? path.join(repo, 'dist/workflow-bundle.js'));
const started = performance.now();
const workflowsPath = path.join(repo, 'src/workflows/index.ts');
const { code } = await bundleWorkflowCode({
  workflowsPath,
  // Temporal's OpenTelemetry interceptors, for runs started with a trace context (docs/tracing.md)
  workflowInterceptorModules: [workflowInterceptorModule(workflowsPath)],
  logger: { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: console.warn, error: console.error },
});
await mkdir(path.dirname(out), { recursive: true });
await writeFile(out, code);
console.log(
  `workflow bundle: ${path.relative(process.cwd(), out)} (${(code.length / 1024).toFixed(0)} KiB) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
