import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, Runtime, Worker, type ReplayResult } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { historyFromFixture } from './support/history-fixtures.js';

/** the workflow sources (these tests bundle or replay the code as it is in the checkout) */
const WORKFLOWS_SOURCE = fileURLToPath(new URL('../../src/workflows/index.ts', import.meta.url));

// Histories recorded from real fanouts (test/workflows/record-histories.test.ts) replayed
// against the workflow code as it is now. A change to WebhookFanoutWorkflow that alters the
// commands it issues (activities scheduled, their order or count, timers) fails here: open runs in
// production would fail the same way after a deploy. Such a change must go behind
// `patched('<change-id>')` from @temporalio/workflow, keeping the old path for old histories
// (docs/decisions.md, "Changing the workflow").
const FIXTURES = fileURLToPath(new URL('../fixtures/histories/', import.meta.url));
const histories = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => ({ workflowId: f.replace(/\.json$/, ''), history: JSON.parse(readFileSync(`${FIXTURES}${f}`, 'utf8')) as unknown }));

/** Replays every fixture as workflow type `workflowType` (the histories record WebhookFanoutWorkflow). */
async function replayAll(workflowsPath: string, workflowType?: string): Promise<Map<string, ReplayResult>> {
  const results = new Map<string, ReplayResult>();
  const renamed = histories.map(({ workflowId, history }) => ({
    workflowId,
    history: historyFromFixture(workflowType === undefined ? history : renameWorkflowType(history, workflowType)),
  }));
  for await (const r of Worker.runReplayHistories({ workflowsPath, replayName: 'fanout-replay' }, renamed)) {
    results.set(r.workflowId, r);
  }
  return results;
}

/** The variants in support/changed-fanout.ts have other names: point the recorded start event at one. */
function renameWorkflowType(history: unknown, name: string): unknown {
  const copy = structuredClone(history) as { events: { workflowExecutionStartedEventAttributes?: { workflowType: { name: string } } }[] };
  const started = copy.events[0]?.workflowExecutionStartedEventAttributes;
  if (!started) throw new Error('history does not start with WorkflowExecutionStarted');
  started.workflowType.name = name;
  return copy;
}

beforeAll(() => {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // installed already in this process
  }
});

describe('recorded fanout histories', () => {
  it('the fixtures are the three recorded shapes', () => {
    expect(histories.map((h) => h.workflowId)).toEqual(['partial', 'retries-then-failure', 'success']);
  });

  it('replay deterministically against the current workflow code', async () => {
    const results = await replayAll(WORKFLOWS_SOURCE);
    expect([...results.keys()].sort()).toEqual(['partial', 'retries-then-failure', 'success']);
    for (const [id, r] of results) expect(r.error, `${id}: ${String(r.error)}`).toBeUndefined();
  });

  const changed = fileURLToPath(new URL('./support/changed-fanout.ts', import.meta.url));

  it('a change of the commands without patched() fails the replay of the concurrent fanout', async () => {
    const results = await replayAll(changed, 'UnpatchedFanout');
    expect(results.get('partial')?.error?.name).toBe('DeterminismViolationError');
  });

  it('the same change behind patched() replays every recorded history', async () => {
    const results = await replayAll(changed, 'PatchedFanout');
    for (const [id, r] of results) expect(r.error, `${id}: ${String(r.error)}`).toBeUndefined();
  });
});
