import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { WorkerOptions } from '@temporalio/worker';

/**
 * The workflow sandbox's two diagnostics, and the Temporal SDK patch that lets the worker turn them
 * off (patches/@temporalio+worker+*.patch, applied by `npm install`: scripts/postinstall.mjs).
 *
 * On every workflow activation the SDK calls into the workflow's V8 context three times with a
 * timeout (its deadlock detector), and Node starts and joins a watchdog thread for each such call;
 * and a promise hook captures a stack trace for every promise workflow code creates (for the
 * `__stack_trace` query). Together they were a third of the worker's CPU per one-endpoint event
 * (docs/benchmarks.md, issue 26); SDK 1.24 has no option for either (upstream:
 * temporalio/sdk-typescript#1587, nodejs/node#47739). The patch adds two: `isolateExecutionTimeout`
 * 0 makes the calls without a timeout, `workflowStackTraces: false` installs no hook.
 * WebhookFanoutWorkflow is ours, small and replay-tested, so the worker runs without both unless
 * WORKER_SANDBOX_DIAGNOSTICS=true (then the SDK's defaults: a 5 s deadlock detector, stack traces).
 *
 * Without them it also runs its workflows on its main thread instead of a worker thread of their
 * own: `debugMode` is the SDK's only switch for that (it names what a debugger needs; it changes
 * nothing else but the deadlock timeout, which is off here anyway). Each activation then crosses
 * no thread boundary: about 1.9 ms of CPU less per event at one endpoint and at ten
 * (docs/benchmarks.md, issue 26). An activation of this workflow takes well under a millisecond,
 * so the event loop the activities share is not held up. The SDK then listens for unhandled
 * rejections in the main thread and throws for any not made by workflow code; the process's
 * lifecycle turns that throw into its usual shutdown (cmd/lifecycle.ts).
 *
 * The patch's third option, `lockWorkflowGlobals`: all runs share one V8 context, and on every
 * switch from one run to another the SDK saves and restores each of the context's global variables
 * (about 60 µs a switch, some five switches per event: 0.7 ms of the worker's CPU per one-endpoint
 * event). Locked, the globals are read-only once the bundle has loaded and a switch swaps only the
 * SDK's per-run state (its activator); a run that assigns a global throws, and a global a run adds
 * is removed before another run is activated and fails the run's next activation. The plain bundle's workflow code and the SDK's keep no state in globals
 * (test/fanout/workflow-sandbox.test.ts runs them locked); the traced bundle's OpenTelemetry
 * interceptors register a global, so a tracing worker keeps the SDK's swap.
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
