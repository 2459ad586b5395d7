// Workflows that keep state in global variables, which a worker with lockWorkflowGlobals refuses
// (test/workflows/locked-globals.test.ts), and one that keeps its state where it belongs.
import { condition, defineSignal, setHandler, sleep } from '@temporalio/workflow';

const globals = globalThis as unknown as Record<string, unknown>;

export const proceed = defineSignal('proceed');

/** Adds a global variable, then waits for the signal to finish. */
export async function addsGlobal(): Promise<string> {
  let go = false;
  setHandler(proceed, () => {
    go = true;
  });
  globals.leakedByAWorkflow = 'state of one run';
  await condition(() => go);
  return 'done';
}

/** Replaces an existing global. */
export async function replacesGlobal(): Promise<string> {
  globals.console = { log: () => undefined };
  await sleep(1);
  return 'done';
}

/**
 * Counts in its own scope across many activations, interleaved with other runs of itself; says
 * when it sees a global an earlier run added.
 */
export async function keepsOwnState(id: string, steps: number): Promise<string> {
  let seen = '';
  let go = false;
  setHandler(proceed, () => {
    go = true;
  });
  await condition(() => go);
  for (let i = 0; i < steps; i++) {
    seen += id;
    await sleep(1);
  }
  return 'leakedByAWorkflow' in globals ? `${seen} and a leaked global` : seen;
}
