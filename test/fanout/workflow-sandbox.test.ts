import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkPatchApplied } from '../../src/processes/workflow-sandbox.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { addEndpoint, addEvent, startFanoutHarness, uniqueSource, type FanoutHarness } from './support/harness.js';

/** A retry far enough away that the run is still waiting on its timer when the test queries it. */
const SLOW_BACKOFF = { initialIntervalMs: 60_000, backoffCoefficient: 2, maximumIntervalMs: 60_000 };

/**
 * The workflow sandbox without the SDK's diagnostics (WORKER_SANDBOX_DIAGNOSTICS, default off) and
 * with them: the worker options reach the workflow thread through the patched SDK (patches/), and
 * the fanout behaves the same either way.
 */
describe('the workflow sandbox, with and without the SDK diagnostics', () => {
  let receiver: Receiver;
  const harnesses: Record<'off' | 'on', FanoutHarness | undefined> = { off: undefined, on: undefined };

  beforeAll(async () => {
    receiver = await startReceiver((n, req) => (req.path.endsWith('/fails') ? { status: 503 } : { status: 200, body: 'ok' }));
    [harnesses.off, harnesses.on] = await Promise.all([
      startFanoutHarness({ backoff: SLOW_BACKOFF }),
      startFanoutHarness({ backoff: SLOW_BACKOFF, sandboxDiagnostics: true }),
    ]);
  });
  afterAll(async () => {
    await Promise.all(Object.values(harnesses).map((h) => h?.close()));
    await receiver.close();
  });

  const harness = (mode: 'off' | 'on'): FanoutHarness => {
    const h = harnesses[mode];
    if (!h) throw new Error(`no ${mode} harness`);
    return h;
  };

  /** A run whose one delivery failed its first attempt (503) and waits a minute for its retry. */
  async function waitingRun(h: FanoutHarness): Promise<string> {
    const source = uniqueSource('sandbox');
    await addEndpoint(h.repos, { source, url: `${receiver.origin}/fails`, maxAttempts: 3 });
    const eventId = await addEvent(h.repos, { source });
    await h.start(eventId);
    await expect.poll(async () => (await h.repos.deliveries.listByEvent(eventId))[0]?.attempts, { timeout: 20_000 }).toBe(1);
    return eventId;
  }

  it('npm install applied the SDK patch in this checkout (else the worker would fall back to the diagnostics)', () => {
    expect(sdkPatchApplied()).toBe(true);
  });

  it.each(['off', 'on'] as const)('diagnostics %s: an event fans out and completes', async (mode) => {
    const h = harness(mode);
    const source = uniqueSource('sandbox');
    await addEndpoint(h.repos, { source, url: `${receiver.origin}/ok` });
    const eventId = await addEvent(h.repos, { source });
    expect(await h.runFanout(eventId)).toBe('COMPLETED');
  });

  it('off (the default): no stack traces are recorded, so the stack-trace query says so', async () => {
    const h = harness('off');
    const eventId = await waitingRun(h);
    const handle = h.client.workflow.getHandle(eventId);
    try {
      await expect(handle.query('__stack_trace')).rejects.toThrow(/stack traces are not enabled/);
    } finally {
      await handle.terminate('test done');
    }
  });

  it('on: the stack-trace query shows where the run waits (lines of workflows/fanout.ts)', async () => {
    const h = harness('on');
    const eventId = await waitingRun(h);
    const handle = h.client.workflow.getHandle(eventId);
    try {
      expect(await handle.query<string>('__stack_trace')).toMatch(/workflows\/fanout\.ts:\d+/);
    } finally {
      await handle.terminate('test done');
    }
  });
});
