import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { workflowSandboxOptions } from '../../src/processes/workflow-sandbox.js';

// lockWorkflowGlobals (the SDK patch, src/processes/workflow-sandbox.ts) against the real Temporal
// server: runs switch by swapping only the SDK's per-run state, so what a run would keep in a
// global is refused instead of leaking into the next run; state kept in the run stays its own.
describe('the workflow sandbox with locked globals', () => {
  let native: NativeConnection;
  let connection: Connection;
  let client: Client;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = `locked-globals-${randomUUID()}`;

  beforeAll(async () => {
    const address = inject('temporalAddress');
    native = await NativeConnection.connect({ address });
    connection = await Connection.connect({ address });
    client = new Client({ connection });
    const sandbox = workflowSandboxOptions(false, { traced: false });
    expect(sandbox.options.lockWorkflowGlobals).toBe(true);
    worker = await Worker.create({
      connection: native,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./support/global-workflows.ts', import.meta.url)),
      ...sandbox.options,
    });
    running = worker.run();
  }, 60_000);
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await connection?.close();
    await native?.close();
  });

  const start = (type: string, args: unknown[]) =>
    client.workflow.start(type, { taskQueue, workflowId: `${type}-${randomUUID()}`, args, workflowTaskTimeout: '2s' });

  it("runs that interleave keep their own state, the SDK's per-run state swapped at each switch", async () => {
    const handles = await Promise.all(['a', 'b', 'c', 'd'].map((id) => start('keepsOwnState', [id, 5])));
    await Promise.all(handles.map((h) => h.signal('proceed')));
    expect(await Promise.all(handles.map((h) => h.result()))).toEqual(['aaaaa', 'bbbbb', 'ccccc', 'ddddd']);
  });

  const historyEvents = async (workflowId: string) =>
    (await client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId } })).history?.events ?? [];
  /** The message of the run's first failed workflow task, once there is one. */
  const taskFailure = async (workflowId: string): Promise<string | undefined> =>
    (await historyEvents(workflowId)).find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes?.failure
      ?.message ?? undefined;
  const completedTasks = async (workflowId: string): Promise<number> =>
    (await historyEvents(workflowId)).filter((e) => e.workflowTaskCompletedEventAttributes).length;

  it('a run that adds a global: the next run does not see it, and the run fails its next workflow task', async () => {
    const offender = await start('addsGlobal', []);
    await expect.poll(() => completedTasks(offender.workflowId), { timeout: 20_000 }).toBeGreaterThan(0);
    // another run activated after it: the switch finds the global and removes it first
    const next = await start('keepsOwnState', ['x', 2]);
    await next.signal('proceed');
    expect(await next.result()).toBe('xx');
    // the run that added it fails when it is next activated (a workflow task failure: the server retries it)
    await offender.signal('proceed');
    await expect
      .poll(() => taskFailure(offender.workflowId), { timeout: 20_000 })
      .toMatch(/Workflow code added global variables \(leakedByAWorkflow\)/);
    // (its retry replays the run alone on the worker, adds the global again and completes)
  });

  it('a run that replaces a global fails the workflow task that tried, and the next run sees the global as it was', async () => {
    const offender = await start('replacesGlobal', []);
    await expect.poll(() => taskFailure(offender.workflowId), { timeout: 20_000 }).toMatch(/Cannot assign to read only property 'console'/);
    await offender.terminate('test done');
    const next = await start('keepsOwnState', ['y', 2]);
    await next.signal('proceed');
    expect(await next.result()).toBe('yy');
  });
});
