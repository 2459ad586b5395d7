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

  it.each([
    { type: 'addsGlobal', failure: /Workflow code added global variables \(leakedByAWorkflow\)/ },
    { type: 'replacesGlobal', failure: /Cannot assign to read only property 'console'/ },
  ])('a run that keeps state in a global ($type) fails its workflow task, and nothing leaks to the next run', async ({ type, failure }) => {
    const handle = await start(type, []);
    // a workflow task failure is retried by the server, so the run stays open: its history shows why
    const failureMessage = async (): Promise<string | undefined> => {
      const { history } = await client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId: handle.workflowId },
      });
      return (
        history?.events?.find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes?.failure?.message ?? undefined
      );
    };
    await expect.poll(failureMessage, { timeout: 20_000 }).toMatch(failure);
    await handle.terminate('test done');
    // the next run starts from the locked globals: a run that only reads them completes
    const next = await start('keepsOwnState', ['x', 2]);
    await next.signal('proceed');
    expect(await next.result()).toBe('xx');
  });
});
