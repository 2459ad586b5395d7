import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReplayRuns } from '../../src/db/replay-runs.js';
import { createLogger } from '../../src/observability/logger.js';
import { createReplayRunner, type ReplayRequest, type ReplayState, type StartReplayRun } from '../../src/temporal/replay-runner.js';
import { startReplay } from '../../src/temporal/replay-starter.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { sleep } from '../support/wait.js';
import { addEndpoint, addEvent, startFanoutHarness, uniqueSource, type FanoutHarness } from './support/harness.js';

/**
 * The WebhookReplay runner without Kubernetes: real Postgres, a real Temporal worker and a real
 * receiver. What a resource asks for is replayed once: the snapshot taken when it began, a dry run
 * that only counts, a dropped payload skipped and counted, a second runner (a new leader, a
 * restarted operator) that takes over half-way and starts nothing twice.
 */
let h: FanoutHarness;
let receiver: Receiver;
let answer = 503;
const logger = createLogger({ level: 'silent' });

beforeAll(async () => {
  [h, receiver] = await Promise.all([startFanoutHarness(), startReceiver(() => ({ status: answer, body: 'x' }))]);
});
afterAll(async () => {
  await h?.close();
  await receiver?.close();
});

const runner = (startRun?: StartReplayRun) =>
  createReplayRunner({
    runs: createReplayRuns(h.database.db),
    startRun: startRun ?? ((req) => startReplay(h.client, { ...req, taskQueue: h.taskQueue })),
    logger,
  });

/** Steps until finished, as the reconcile does. */
async function untilFinished(r: ReturnType<typeof runner>, req: ReplayRequest): Promise<ReplayState> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const s = await r.step(req);
    if (s.record.phase !== 'Running') return s;
    if (Date.now() > deadline) throw new Error(`replay still running: ${JSON.stringify(s.progress)}`);
    await sleep(200);
  }
}

let seq = 0;
/** An endpoint with `n` events whose one delivery each ended FAILED (the receiver answered 503). */
async function outage(n: number) {
  const source = uniqueSource('replay');
  const endpointId = await addEndpoint(h.repos, { source, url: receiver.url, maxAttempts: 1 });
  const from = new Date(Date.now() - 1000);
  answer = 503;
  const eventIds: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = await addEvent(h.repos, { source, eventType: 'order.created' });
    expect(await h.runFanout(id)).toBe('FAILED');
    eventIds.push(id);
  }
  answer = 200;
  const request = (over: Partial<ReplayRequest> = {}): ReplayRequest => ({
    uid: `uid-${++seq}`,
    generation: 1,
    namespace: 'payments',
    name: `replay-${seq}`,
    spec: { seq },
    endpoint: { id: endpointId, deniedReason: null },
    endpointRef: 'endpointRef orders',
    criteria: { from, to: new Date(Date.now() + 1000), statuses: ['FAILED'], eventTypes: [] },
    dryRun: false,
    ...over,
  });
  return { endpointId, eventIds, request };
}

const sentFor = (eventId: string) => receiver.requests.filter((r) => r.headers['x-webhook-event-id'] === eventId).length;

describe('the WebhookReplay runner', () => {
  it('a dry run counts and sends nothing; the replay then delivers each FAILED delivery once and is Complete', async () => {
    const { eventIds, request } = await outage(3);
    const dry = await untilFinished(runner(), request({ dryRun: true }));
    expect(dry.record).toMatchObject({ phase: 'Complete', reason: 'DryRun', matched: 3, skipped: 0, started: 0 });
    expect(eventIds.map(sentFor)).toEqual([1, 1, 1]);

    const req = request();
    const done = await untilFinished(runner(), req);
    expect(done.record).toMatchObject({ phase: 'Complete', reason: 'Replayed', matched: 3, started: 3, succeeded: 3, failed: 0 });
    expect(eventIds.map(sentFor)).toEqual([2, 2, 2]);
    // a later step (a resync, a restart) changes nothing
    const again = await runner().step(req);
    expect(again).toMatchObject({ began: false, finished: false, record: { phase: 'Complete', succeeded: 3 } });
    expect(eventIds.map(sentFor)).toEqual([2, 2, 2]);
  });

  it('the same namespace, name and spec under a new uid (a re-created manifest) is AlreadyReplayed and sends nothing', async () => {
    const { eventIds, request } = await outage(1);
    const first = request();
    await untilFinished(runner(), first);
    const recreated = await runner().step({ ...first, uid: `${first.uid}-again` });
    expect(recreated.record).toMatchObject({ phase: 'Complete', reason: 'AlreadyReplayed', matched: 1, succeeded: 1 });
    expect(eventIds.map(sentFor)).toEqual([2]);
  });

  it('an event whose payload retention dropped is skipped and counted; the others are replayed', async () => {
    const { eventIds, request } = await outage(2);
    await h.database
      .db('webhook_event')
      .where({ id: eventIds[0] })
      .update({ payload_dropped_at: new Date(), payload: Buffer.alloc(0) });
    const done = await untilFinished(runner(), request());
    expect(done.record).toMatchObject({ matched: 2, skipped: 1, started: 1, succeeded: 1 });
    expect(eventIds.map(sentFor)).toEqual([1, 2]);
  });

  it('no endpoint: Failed, EndpointNotFound, and it stays so', async () => {
    const { request } = await outage(1);
    const req = request({ endpoint: undefined });
    const s = await runner().step(req);
    expect(s).toMatchObject({ finished: true, record: { phase: 'Failed', reason: 'EndpointNotFound' } });
    expect(s.record.message).toContain('no WebhookEndpoint of that name in namespace payments');
    expect(
      (await runner().step({ ...req, endpoint: { id: 'd0d0d0d0-0000-4000-8000-000000000000', deniedReason: null } })).record.phase,
    ).toBe('Failed');
  });

  it.each(['NotAllowedBySource', 'SourceNotFound'] as const)(
    'an endpoint its source does not allow (%s): Failed with that reason, nothing reopened or sent',
    async (deniedReason) => {
      const { endpointId, eventIds, request } = await outage(1);
      const s = await runner().step(request({ endpoint: { id: endpointId, deniedReason } }));
      expect(s).toMatchObject({ finished: true, record: { phase: 'Failed', reason: deniedReason, started: 0 } });
      expect(s.record.message).toMatch(
        /^endpointRef orders: .+; nothing is sent to it and replays to it are refused until its source allows it/,
      );
      expect(await h.database.db('webhook_delivery').where({ endpoint_id: endpointId }).pluck('status')).toEqual(['FAILED']);
      expect(eventIds.map(sentFor)).toEqual([1]);
    },
  );

  it('a runner that dies after reopening, before starting: the next one starts each run once; SUCCESS deliveries too', async () => {
    const { eventIds, request } = await outage(4);
    await untilFinished(runner(), request());
    expect(eventIds.map(sentFor)).toEqual([2, 2, 2, 2]);
    // now all SUCCESS: a replay of the delivered ones sends each again
    const req = request({ criteria: { ...request().criteria, statuses: ['SUCCESS'] } });
    // the first runner reopens the deliveries, then its starts fail (Temporal "down")
    const down: StartReplayRun = () => Promise.reject(new Error('connection refused'));
    await expect(runner(down).step(req)).rejects.toThrow('connection refused');
    expect(
      Number((await h.database.db('webhook_replay_delivery').where({ replay_uid: req.uid, state: 'reopened' }).count('* as n'))[0]?.n),
    ).toBe(4);
    // a new leader takes over; and a start that Temporal already took (the same run id) is not repeated
    const started: string[] = [];
    const counting: StartReplayRun = async (r) => {
      started.push(r.workflowId);
      return startReplay(h.client, { ...r, taskQueue: h.taskQueue });
    };
    const done = await untilFinished(runner(counting), req);
    expect(done.record).toMatchObject({ matched: 4, started: 4, succeeded: 4 });
    expect(new Set(started).size).toBe(started.length);
    expect(eventIds.map(sentFor)).toEqual([3, 3, 3, 3]);
    // starting one of those runs again is refused by Temporal: at most once per id
    await expect(
      startReplay(h.client, { eventId: eventIds[0]!, deliveryIds: [], taskQueue: h.taskQueue, workflowId: started[0]! }),
    ).rejects.toMatchObject({ name: 'WorkflowExecutionAlreadyStartedError' });
  });
});
