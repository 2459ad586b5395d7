import { randomUUID } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BACKOFF } from '../../src/config/settings.js';
import type {
  DeliverInput,
  DeliverResult,
  FanoutActivities,
  FinalEventStatus,
  FinishEventInput,
  OrderingReleaseInput,
  PlannedDelivery,
} from '../../src/activities/types.js';
import { finalDeliveryFailure, unrecordedDeliveryFailure } from '../../src/activities/failures.js';
import type { WebhookFanoutWorkflow } from '../../src/workflows/fanout.js';
import { WORKFLOW_TYPE } from '../../src/workflows/names.js';
import { fanoutInput } from '../../src/temporal/fanout-input.js';
import { fileURLToPath } from 'node:url';
import { startTimeSkippingEnv, type TimeSkippingEnv } from '../support/time-skipping.js';

/** the workflow sources (these tests bundle or replay the code as it is in the checkout) */
const WORKFLOWS_SOURCE = fileURLToPath(new URL('../../src/workflows/index.ts', import.meta.url));

// The workflow's retry policies on Temporal's clock: the time-skipping test server
// jumps over every backoff and timeout, so the production policy (1 s, x2, capped at 10 min)
// is checked in full in seconds. The activities here stand in for the database-backed ones:
// what is under test is what the workflow asks Temporal for, observed on the server's clock at
// each attempt. Not covered here: start-to-close timeouts. This server does not skip time while
// an attempt is running, so a hung attempt costs its full timeout (35 s and more) in real time;
// test/fanout/delivery-outcomes.test.ts covers timeouts with short endpoint timeouts instead.

/** What the stand-in activities saw, per delivery id. */
interface Observed {
  /** Temporal time (ms) at which each deliver attempt started */
  startedAt: number[];
  /** the endpoint's attempt numbers, counted like the row counts them */
  attempts: number[];
  /** Temporal time (ms) at which each failed attempt ended: a backoff runs from there */
  failedAt: number[];
  /** whether each attempt ran as a local activity */
  local: boolean[];
  /** whether each attempt was asked to release its ordered key (DeliverInput.releases) */
  releases: boolean[];
}

type DeliverBehaviour = (attempt: number) => Promise<DeliverResult>;

let server: TimeSkippingEnv;
let env: TestWorkflowEnvironment;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // installed already in this process
  }
  [server, workflowBundle] = await Promise.all([
    startTimeSkippingEnv(),
    bundleWorkflowCode({ workflowsPath: WORKFLOWS_SOURCE, logger: new DefaultLogger('ERROR') }),
  ]);
  env = server.env;
});
afterAll(async () => {
  await server?.stop();
});

/** Runs one fanout over the given deliveries; each delivery behaves as its function says. */
async function runFanout(deliveries: { plan: Omit<PlannedDelivery, 'deliveryId' | 'endpointId'>; behave: DeliverBehaviour }[]) {
  const planned = deliveries.map((d) => ({ ...d.plan, deliveryId: randomUUID(), endpointId: randomUUID() }));
  const observed = new Map<string, Observed>(
    planned.map((p) => [p.deliveryId, { startedAt: [], failedAt: [], attempts: [], local: [], releases: [] }]),
  );
  const behaviours = new Map<string, DeliverBehaviour>(planned.map((p, i) => [p.deliveryId, deliveries[i]!.behave]));
  const finished: FinishEventInput[] = [];
  const released: OrderingReleaseInput[] = [];
  const activities: FanoutActivities = {
    prepare: () => Promise.resolve({ deliveries: planned, backoff: DEFAULT_BACKOFF }),
    deliver: async (input: DeliverInput) => {
      const { info } = Context.current();
      const seen = observed.get(input.deliveryId)!;
      // the endpoint's attempt number as the real activity takes it from the row: attempts made so
      // far + 1 (Temporal's own attempt starts again at 1 when the local first attempt hands over)
      const attempt = seen.attempts.length + 1;
      seen.startedAt.push(await env.currentTimeMs());
      seen.attempts.push(attempt);
      seen.local.push(info.isLocal);
      seen.releases.push(input.releases === true);
      try {
        return await behaviours.get(input.deliveryId)!(attempt);
      } catch (err) {
        seen.failedAt.push(await env.currentTimeMs());
        // as the real activity does: it fails the delivery itself on the endpoint's last attempt
        // (Temporal's own limit is higher, leaving room for retries after database failures)
        if (err instanceof ApplicationFailure && !err.nonRetryable && attempt >= input.maxAttempts) {
          throw ApplicationFailure.nonRetryable(err.message, 'DeliveryAttemptsExhausted');
        }
        throw err;
      }
    },
    finishEvent: (input: FinishEventInput): Promise<FinalEventStatus> => {
      finished.push(input);
      return Promise.resolve(input.unsettled?.length ? 'FAILED' : 'COMPLETED');
    },
    // an ordered plan here has its turn at once (ordering: 'go'), and wakes nobody
    orderingTurn: () => Promise.resolve({ turn: 'go' }),
    orderingRelease: (input: OrderingReleaseInput) => {
      released.push(input);
      return Promise.resolve({});
    },
  };
  const taskQueue = `ts-${randomUUID()}`;
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, activities });
  const startedAt = await env.currentTimeMs();
  const { status, history } = await worker.runUntil(async () => {
    const handle = await env.client.workflow.start<typeof WebhookFanoutWorkflow>(WORKFLOW_TYPE, {
      taskQueue,
      workflowId: randomUUID(),
      args: [fanoutInput(randomUUID())],
    });
    return { status: await handle.result(), history: await handle.fetchHistory() };
  });
  const elapsedMs = (await env.currentTimeMs()) - startedAt;
  // the timers the workflow started (the wait between a local first attempt and its retries)
  const timersMs = (history.events ?? []).flatMap((e) => {
    const t = e.timerStartedEventAttributes?.startToFireTimeout;
    return t ? [Number(t.seconds ?? 0) * 1000 + Math.round((t.nanos ?? 0) / 1e6)] : [];
  });
  return { status, planned, observed: planned.map((p) => observed.get(p.deliveryId)!), finished, released, elapsedMs, timersMs };
}

const retryable = (): Promise<DeliverResult> => Promise.reject(ApplicationFailure.retryable('HTTP 503', 'DeliveryFailed'));
/**
 * The backoff before each retry: from the end of the failed attempt to the start of the next. (A
 * local first attempt's own run time is real time on this server, which skips time only while
 * nothing runs; on a loaded machine it would otherwise count as delay.)
 */
const gaps = (o: Observed): number[] => o.startedAt.slice(1).map((t, i) => t - o.failedAt[i]!);
/**
 * Temporal adds no jitter to activity retries; allow the server's scheduling granularity. The
 * first delay follows a local first attempt: a workflow timer, whose length the history states
 * (timersMs), while the worker's own turns around it take real time on this server (it skips time
 * only while nothing runs), a second or more on a loaded machine; so it is checked as a floor here.
 */
const expectDelays = (actual: number[], expected: number[], timersMs: number[]): void => {
  expect(actual).toHaveLength(expected.length);
  expect(timersMs).toEqual(expected.slice(0, 1));
  actual.forEach((ms, i) => {
    expect(ms, `delay before attempt ${i + 2}`).toBeGreaterThanOrEqual(expected[i]!);
    if (i > 0) expect(ms, `delay before attempt ${i + 2}`).toBeLessThan(expected[i]! + 1_000);
  });
};

describe('fanout workflow on a time-skipping server', () => {
  it('retries with the production backoff: 1 s doubling, capped at 10 min, up to max_attempts', async () => {
    const run = await runFanout([{ plan: { maxAttempts: 13, timeoutSeconds: 10, priorAttempts: 0 }, behave: retryable }]);

    const [d] = run.observed;
    expect(d!.attempts).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    // the first attempt in the worker (a local activity), the retries as activity tasks
    expect(d!.local).toEqual([true, ...Array<boolean>(12).fill(false)]);
    // 1, 2, 4 ... 512 s, then the 10 min cap
    expectDelays(
      gaps(d!),
      [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600].map((s) => s * 1_000),
      run.timersMs,
    );
    // about 47 minutes of Temporal time
    expect(run.elapsedMs).toBeGreaterThanOrEqual(2_823_000);
    expect(run.status).toBe('FAILED');
    expect(run.finished).toEqual([
      { eventId: expect.any(String), unsettled: [{ deliveryId: run.planned[0]!.deliveryId, reason: 'HTTP 503' }] },
    ]);
  });

  it('a non-retryable failure ends the delivery at once, whatever max_attempts says', async () => {
    const run = await runFanout([
      {
        plan: { maxAttempts: 5, timeoutSeconds: 10, priorAttempts: 0 },
        behave: () => Promise.reject(ApplicationFailure.nonRetryable('HTTP 404', 'DeliveryFailed')),
      },
    ]);
    expect(run.observed[0]!.attempts).toEqual([1]);
    expect(run.observed[0]!.local).toEqual([true]);
    expect(run.finished[0]?.unsettled).toEqual([{ deliveryId: run.planned[0]!.deliveryId, reason: 'HTTP 404' }]);
  });

  it('the first retry after a local first attempt waits the delay that attempt asked for (Retry-After)', async () => {
    const run = await runFanout([
      {
        plan: { maxAttempts: 3, timeoutSeconds: 10, priorAttempts: 0 },
        behave: (attempt) =>
          attempt === 1
            ? Promise.reject(
                ApplicationFailure.create({
                  message: 'HTTP 429',
                  type: 'DeliveryRetryableFailure',
                  details: [{ responseStatus: 429, statusClass: '4xx', retryDelayMs: 45_000 }],
                }),
              )
            : Promise.resolve({ status: 'SUCCESS' }),
      },
    ]);
    const [d] = run.observed;
    expect(d!.attempts).toEqual([1, 2]);
    expect(d!.local).toEqual([true, false]);
    expectDelays(gaps(d!), [45_000], run.timersMs);
    expect(run.status).toBe('COMPLETED');
  });

  it('a failure whose row the activity wrote FAILED is not settled again (a replay may have reopened the row since); one it could not write is', async () => {
    const plan = { maxAttempts: 3, timeoutSeconds: 10, priorAttempts: 0 };
    const run = await runFanout([
      // a 4xx the activity recorded: the row says FAILED
      {
        plan,
        behave: () => Promise.reject(finalDeliveryFailure('delivery_rejected', 'HTTP 404', { responseStatus: 404, statusClass: '4xx' })),
      },
      // the same, ordered: its release does not settle it either
      { plan: { ...plan, ordering: 'go' as const }, behave: () => Promise.reject(finalDeliveryFailure('delivery_rejected', 'HTTP 410')) },
      // an internal error whose attempt could not be recorded: the row is still PENDING
      { plan, behave: () => Promise.reject(unrecordedDeliveryFailure('delivery_internal_error', 'internal error: boom')) },
      {
        plan: { ...plan, ordering: 'go' as const },
        behave: () => Promise.reject(unrecordedDeliveryFailure('delivery_internal_error', 'internal error: bang')),
      },
    ]);
    const [, orderedSettled, unrecorded, orderedUnrecorded] = run.planned;
    expect(run.finished).toEqual([
      {
        eventId: expect.any(String),
        unsettled: [
          { deliveryId: unrecorded!.deliveryId, reason: 'internal error: boom' },
          { deliveryId: orderedUnrecorded!.deliveryId, reason: 'internal error: bang' },
        ],
      },
    ]);
    expect(run.released).toEqual(
      expect.arrayContaining([
        { deliveryId: orderedSettled!.deliveryId },
        { deliveryId: orderedUnrecorded!.deliveryId, unsettled: 'internal error: bang' },
      ]),
    );
    expect(run.released).toHaveLength(2);
  });

  it("an ordered delivery's deliver releases its key when it can: then the run has no orderingRelease of its own", async () => {
    const plan = { maxAttempts: 3, timeoutSeconds: 10, priorAttempts: 0 };
    const run = await runFanout([
      // SUCCESS, released by the activity (nothing waited behind it)
      {
        plan: { ...plan, ordering: 'go' as const },
        behave: () => Promise.resolve({ status: 'SUCCESS' as const, released: true as const }),
      },
      // SUCCESS, the release left to the run (something waits behind it: the wake-up, the handoff)
      { plan: { ...plan, ordering: 'go' as const }, behave: () => Promise.resolve({ status: 'SUCCESS' as const }) },
      // SUCCESS after a retry (a normal activity), released by it
      {
        plan: { ...plan, ordering: 'go' as const },
        behave: (attempt) => (attempt === 1 ? retryable() : Promise.resolve({ status: 'SUCCESS' as const, released: true as const })),
      },
      // not ordered: never asked
      { plan, behave: () => Promise.resolve({ status: 'SUCCESS' as const }) },
    ]);
    const [releasedByDeliver, leftToRun, retried] = run.planned;
    expect(run.released).toEqual([{ deliveryId: leftToRun!.deliveryId }]);
    expect(run.observed.map((o) => o.releases)).toEqual([[true], [true], [true, true], [false]]);
    expect(run.status).toBe('COMPLETED');
    expect([releasedByDeliver, retried].every((d) => d !== undefined)).toBe(true);
  });

  it('deliveries run concurrently, each with its own attempts: one slow retrier does not hold back the others', async () => {
    const run = await runFanout([
      { plan: { maxAttempts: 1, timeoutSeconds: 10, priorAttempts: 0 }, behave: () => Promise.resolve({ status: 'SUCCESS' }) },
      {
        plan: { maxAttempts: 4, timeoutSeconds: 10, priorAttempts: 0 },
        behave: (attempt) => (attempt < 4 ? retryable() : Promise.resolve({ status: 'SUCCESS' })),
      },
    ]);
    const [fast, slow] = run.observed;
    expect(fast!.attempts).toEqual([1]);
    expect(slow!.attempts).toEqual([1, 2, 3, 4]);
    expect(Math.abs(fast!.startedAt[0]! - slow!.startedAt[0]!)).toBeLessThan(1_000);
    expectDelays(gaps(slow!), [1_000, 2_000, 4_000], run.timersMs);
    expect(run.status).toBe('COMPLETED');
  });
});
