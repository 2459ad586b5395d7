import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, Runtime, Worker, type ReplayResult } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { historyFromFixture } from './support/history-fixtures.js';

/** the workflow sources (these tests bundle or replay the code as it is in the checkout) */
const WORKFLOWS_SOURCE = fileURLToPath(new URL('../../src/workflows/index.ts', import.meta.url));

// Histories recorded from real fanouts (test/workflows/record-histories.ts) replayed
// against the workflow code as it is now. A change to WebhookFanoutWorkflow that alters the
// commands it issues (activities scheduled, their order or count, timers) fails here: open runs in
// production would fail the same way after a deploy. Such a change must go behind
// `patched('<change-id>')` from @temporalio/workflow or a new field of the workflow's input,
// keeping the old path for old histories (docs/decisions.md, "Changing the workflow").
const FIXTURES = fileURLToPath(new URL('../fixtures/histories/', import.meta.url));
const histories = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => ({ workflowId: f.replace(/\.json$/, ''), history: JSON.parse(readFileSync(`${FIXTURES}${f}`, 'utf8')) as unknown }));

/** The three shapes recorded from the first workflow version, before any patched() change. */
const FIRST_VERSION = ['partial', 'retries-then-failure', 'success'];
/** The same shapes from each later version: `<shape>.<version>`, recorded by record-histories.ts. */
const VERSIONS = ['local-first-attempt', 'local-first-attempt-input'];
/**
 * Ordered runs that waited for their turn (docs/ordering.md): signalled and delivered by the run
 * (recorded by the build before the handoff), handed off, ended or retried by the run, and left
 * to the key's chain (the run ends after prepare; a retry in a continuation of its own); and one
 * that went at once and whose deliver released its key.
 */
const ORDERED = [
  'ordered-waited.before-handoff',
  'ordered-waited.handoff',
  'ordered-retried.handoff',
  'ordered-waited.detached',
  'ordered-retried.detached',
  'ordered-continuation.detached',
  // went at once, its key released by its deliver activity: no orderingRelease of its own
  'ordered-alone.released-by-deliver',
];

/** Replays the fixtures as workflow type `workflowType` (the histories record WebhookFanoutWorkflow). */
async function replayAll(workflowsPath: string, workflowType?: string, only?: readonly string[]): Promise<Map<string, ReplayResult>> {
  const results = new Map<string, ReplayResult>();
  const chosen = only === undefined ? histories : histories.filter((h) => only.includes(h.workflowId));
  const renamed = chosen.map(({ workflowId, history }) => ({
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
  const all = [...FIRST_VERSION, ...VERSIONS.flatMap((v) => FIRST_VERSION.map((shape) => `${shape}.${v}`)), ...ORDERED].sort();

  it('the fixtures are the three recorded shapes of every workflow version, and the ordered ones', () => {
    expect(histories.map((h) => h.workflowId).sort()).toEqual(all);
  });

  it('replay deterministically against the current workflow code, old versions and new', async () => {
    const results = await replayAll(WORKFLOWS_SOURCE);
    expect([...results.keys()].sort()).toEqual(all);
    for (const [id, r] of results) expect(r.error, `${id}: ${String(r.error)}`).toBeUndefined();
  });

  const changed = fileURLToPath(new URL('./support/changed-fanout.ts', import.meta.url));

  // the mechanism, shown on the first version's histories (support/changed-fanout.ts edits that version)
  it('a change of the commands without patched() fails the replay of the concurrent fanout', async () => {
    const results = await replayAll(changed, 'UnpatchedFanout', FIRST_VERSION);
    expect(results.get('partial')?.error?.name).toBe('DeterminismViolationError');
  });

  it('the same change behind patched() replays every history recorded before it', async () => {
    const results = await replayAll(changed, 'PatchedFanout', FIRST_VERSION);
    expect([...results.keys()].sort()).toEqual(FIRST_VERSION);
    for (const [id, r] of results) expect(r.error, `${id}: ${String(r.error)}`).toBeUndefined();
  });

  it('the workflow without the local-first-attempt path fails the histories recorded with it', async () => {
    // what the patch protects: a worker of the previous version would not replay the new runs,
    // nor this version the old ones without the patched() branch
    const results = await replayAll(
      changed,
      'UnpatchedFanout',
      VERSIONS.map((v) => `success.${v}`),
    );
    for (const v of VERSIONS) expect(results.get(`success.${v}`)?.error?.name, v).toBe('DeterminismViolationError');
  });
});
