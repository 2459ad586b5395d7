import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { WorkerOptions } from '@temporalio/worker';

/**
 * The workflow sandbox's diagnostics (the deadlock detector's watchdog, per-promise stack traces),
 * its thread and its globals' swap, and the SDK patch that lets the worker turn them off
 * (patches/@temporalio+worker+*.patch, applied by `npm install`: scripts/postinstall.mjs). Off
 * unless WORKER_SANDBOX_DIAGNOSTICS=true, because our one small, replay-tested workflow needs none
 * of them and they were most of the worker's CPU per event: docs/decisions.md, "Process runtime".
 */
const PATCH_MARKERS: ReadonlyArray<readonly [file: string, marker: string]> = [
  ['workflow/reusable-vm.js', 'isolateExecutionTimeoutMs > 0 ?'],
  ['workflow/vm-shared.js', 'install(stackTraces = true)'],
  ['workflow/reusable-vm.js', 'generateLockedCallIntoScopeScript'],
];

/** Whether the installed @temporalio/worker carries the patch (an install with --ignore-scripts would not). */
export function sdkPatchApplied(): boolean {
  const lib = dirname(createRequire(import.meta.url).resolve('@temporalio/worker'));
  return PATCH_MARKERS.every(([file, marker]) => {
    try {
      return readFileSync(join(lib, file), 'utf8').includes(marker);
    } catch {
      return false;
    }
  });
}

export type SandboxMode = 'diagnostics-on' | 'diagnostics-off' | 'diagnostics-on-unpatched-sdk';

/**
 * The worker options for the sandbox. Without the patch an unpatched SDK would pass a timeout of 0
 * to Node (which refuses it), so then the SDK's defaults stay, whatever was asked. `traced`: the
 * worker runs the bundle with the tracing interceptors (its globals stay swapped in full).
 */
export function workflowSandboxOptions(
  diagnostics: boolean,
  opts: { traced: boolean; patched?: boolean },
): {
  mode: SandboxMode;
  options: Pick<WorkerOptions, 'debugMode' | 'isolateExecutionTimeout' | 'workflowStackTraces' | 'lockWorkflowGlobals'>;
} {
  if (diagnostics) return { mode: 'diagnostics-on', options: {} };
  if (!(opts.patched ?? sdkPatchApplied())) return { mode: 'diagnostics-on-unpatched-sdk', options: {} };
  return {
    mode: 'diagnostics-off',
    options: { debugMode: true, isolateExecutionTimeout: 0, workflowStackTraces: false, lockWorkflowGlobals: !opts.traced },
  };
}
