// Prebuilds the worker's workflow bundles (part of `npm run build`, so of the image build):
//
//   tsx scripts/bundle-workflows.ts [DIR]      # default dist: workflow-bundle.js, workflow-bundle-traced.js
//
// The worker loads dist/workflow-bundle.js (dist/workflow-bundle-traced.js when it traces; see
// src/processes/fanout-worker.ts resolveWorkflowCode) instead of running webpack over the workflow
// sources at every start: the worker starts faster and smaller, and the image ships no workflow
// sources. The bundle comes from
// the same @temporalio/workflow version the worker runs (one lock file), which the SDK requires.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_BUNDLES, workflowInterceptorModule } from '../src/processes/fanout-worker.js';

const repo = fileURLToPath(new URL('../', import.meta.url));
const dir = path.resolve(process.argv[2] ?? path.join(repo, 'dist'));
const workflowsPath = path.join(repo, 'src/workflows/index.ts');
const logger = { log: () => {}, trace: () => {}, debug: () => {}, info: () => {}, warn: console.warn, error: console.error };
await mkdir(dir, { recursive: true });
// one bundle without Temporal's OpenTelemetry interceptors (a worker without tracing: every run
// evaluates its bundle's modules anew, and those are half of them) and one with them
for (const [kind, file] of Object.entries(WORKFLOW_BUNDLES)) {
  const started = performance.now();
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    ...(kind === 'traced' ? { workflowInterceptorModules: [workflowInterceptorModule(workflowsPath)] } : {}),
    logger,
  });
  const out = path.join(dir, file);
  await writeFile(out, code);
  console.log(
    `workflow bundle: ${path.relative(process.cwd(), out)} (${(code.length / 1024).toFixed(0)} KiB) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}
