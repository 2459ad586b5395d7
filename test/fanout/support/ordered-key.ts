import type { Knex } from 'knex';
import { expect } from 'vitest';
import { continuationWorkflowId } from '../../../src/domain/ordering.js';
import type { EndpointOrdering } from '../../../src/domain/records.js';
import type { Receiver, RecordedRequest, Reply, Script } from '../../support/receiver.js';
import { eventually } from '../../support/wait.js';
import { addEndpoint, addEvent, deliveryOf, uniqueSource, type FanoutHarness } from './harness.js';

// What the ordered-delivery tests share (docs/ordering.md): events of one key sent in order, the
// receiver's requests read by their `seq`, and the runs' histories read for who delivered what.

export const seqOf = (r: RecordedRequest): number => (JSON.parse(r.body.toString('utf8')) as { seq: number }).seq;
export const seqsAt = (requests: RecordedRequest[]): number[] => requests.map(seqOf);
export const keyOf = (r: RecordedRequest): string => (JSON.parse(r.body.toString('utf8')) as { key: string }).key;
/** spec.ordering by `event.data.key` */
export const ordered = (onFailure: EndpointOrdering['onFailure'] = 'Block'): EndpointOrdering => ({ key: 'event.data.key', onFailure });
/** the first request is held this long, so that every later run is prepared and waits behind it */
export const HOLD_FIRST_MS = 1_500;

/** Events `{key: 'k', seq}` stored in order, every run started at once. */
export async function sendKey(h: FanoutHarness, source: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let seq = 0; seq < count; seq++) ids.push(await addEvent(h.repos, { source, payload: JSON.stringify({ key: 'k', seq }) }));
  await Promise.all(ids.map((id) => h.start(id)));
  return ids;
}

/** The delivery's continuation run, if one was started (a run of its own for a delivery left to its key's chain). */
export async function continuationOf(h: FanoutHarness, eventId: string, deliveryId: string): Promise<string | undefined> {
  const workflowId = continuationWorkflowId(eventId, deliveryId);
  return h.client.workflow
    .getHandle(workflowId)
    .describe()
    .then(
      () => workflowId,
      () => undefined,
    );
}

/** The activities a run ran, in its history's order: local ones (markers) and normal ones. */
export async function activitiesOf(h: FanoutHarness, workflowId: string): Promise<string[]> {
  const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
  const types: string[] = [];
  for (const e of history.events ?? []) {
    const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
    if (data) types.push((JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type: string }).activity_type);
    const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduled) types.push(`${scheduled} (activity task)`);
  }
  return types;
}

/** Per delivery, in order: each request started after the one before was answered. */
export function oneAtATime(requests: RecordedRequest[]): void {
  const sorted = [...requests].sort((a, b) => a.startedAt - b.startedAt);
  for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.startedAt).toBeGreaterThanOrEqual(sorted[i - 1]!.finishedAt ?? Infinity);
}

/** The attempt log of a delivery (webhook_delivery_attempt), in order. */
export async function attemptsOf(
  h: FanoutHarness,
  deliveryId: string,
): Promise<Array<{ outcome: string; response_status: number | null }>> {
  return h.database
    .db('webhook_delivery_attempt')
    .where({ delivery_id: deliveryId })
    .orderBy('attempt')
    .select('outcome', 'response_status');
}

/**
 * A request held until the test lets it go: a receiver awaits `held` (the first request of a key,
 * so that every later run is prepared and waits behind it), the test calls `letGo()` once the line
 * is in place (or it has taken a lock first).
 */
export function heldRequest(): { held: Promise<void>; letGo: () => void } {
  let letGo: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  return { held, letGo };
}

/** The deliveries of `ids` (events of one key) once each after the first waits behind the one before. */
export async function waitingLine(h: FanoutHarness, ids: string[], endpointId: string): Promise<string[]> {
  const ds: string[] = [];
  for (const id of ids) ds.push(await eventually(async () => (await deliveryOf(h.repos, id, endpointId)).id, { what: 'prepared' }));
  for (let i = 1; i < ds.length; i++) {
    await eventually(async () => (await deliveryOf(h.repos, ids[i]!, endpointId)).ordering?.waitingBehind === ds[i - 1], {
      what: `delivery ${i} waiting behind ${i - 1}`,
    });
  }
  return ds;
}

/** A key's line whose first request is held (heldKeyLine). */
export interface HeldLine {
  source: string;
  target: Receiver;
  endpointId: string;
  ids: string[];
  /** the deliveries, each after the first waiting behind the one before */
  ds: string[];
  /**
   * Lets the first request go once `hold` has taken the test's lock, and cuts the one worker
   * statement that then waits on it (cutTheWaiter) when the receiver has seen seqs 0..`sentUpTo`.
   */
  cut: (hold: (trx: Knex.Transaction) => Promise<void>, sentUpTo: number, what: string) => Promise<number>;
}

/**
 * `count` events of one key to a new ordered endpoint whose receiver holds the first request until
 * the test cuts (HeldLine.cut) and answers the rest with `reply` (200 by default). Its timeout is
 * the longest handed off (15 s), so the held request does not time out however slow the machine;
 * a claim's lease is then 25 s, what the key waits when nothing ends a stranded claim sooner.
 */
export async function heldKeyLine(
  h: FanoutHarness,
  receiver: (script: Script) => Promise<Receiver>,
  name: string,
  count: number,
  reply: (req: RecordedRequest) => Reply = () => ({ status: 200 }),
): Promise<HeldLine> {
  const source = uniqueSource(name);
  const first = heldRequest();
  const target = await receiver(async (_n, req) => {
    if (seqOf(req) === 0) await first.held;
    return reply(req);
  });
  const endpointId = await addEndpoint(h.repos, { source, url: target.url, ordering: ordered(), timeoutSeconds: 15 });
  const ids = await sendKey(h, source, count);
  const ds = await waitingLine(h, ids, endpointId);
  const cut = (hold: (trx: Knex.Transaction) => Promise<void>, sentUpTo: number, what: string) =>
    cutTheWaiter(
      h,
      async (trx) => {
        await hold(trx);
        first.letGo();
      },
      () => expect(seqsAt(target.requests.filter((r) => keyOf(r) === 'k'))).toEqual(Array.from({ length: sentUpTo + 1 }, (_, i) => i)),
      what,
    );
  return { source, target, endpointId, ids, ds, cut };
}

/** Waits for a delivery to be SUCCESS (`what` names it in the timeout's message). */
export async function deliveredOnce(h: FanoutHarness, deliveryId: string, what: string, timeoutMs = 40_000): Promise<void> {
  await eventually(async () => (await h.repos.deliveries.get(deliveryId))?.status === 'SUCCESS', { timeoutMs, intervalMs: 100, what });
}

/**
 * What a worker lost mid-chain leaves (a worker process can not be killed in the fanout harness):
 * the delivery claimed by the chain, its handed-off attempt recorded (`recorded`: 200 for SUCCESS,
 * 422 for FAILED) in the row and the attempt log, its release never run; `until` the claim's lease
 * (SQL: run out, or still live).
 */
export async function lostMidChain(
  db: Knex,
  deliveryId: string,
  recorded: 'SUCCESS' | 'FAILED',
  until: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const status = recorded === 'SUCCESS' ? 200 : 422;
  await db('webhook_delivery')
    .where({ id: deliveryId })
    .update({
      status: recorded,
      attempts: 1,
      last_response_status: status,
      last_error: recorded === 'SUCCESS' ? null : 'HTTP 422',
      last_attempt_at: db.fn.now(),
      completed_at: db.fn.now(),
      ordering_handoff: 'claimed',
      ordering_handoff_until: db.raw(until),
      ...extra,
    });
  await db('webhook_delivery_attempt').insert({
    delivery_id: deliveryId,
    attempt: 1,
    outcome: recorded,
    started_at: db.fn.now(),
    response_status: status,
  });
}

/**
 * A Postgres blip where the worker waits: in a transaction of the test, `hold` takes a lock (and
 * lets the key go on); the one backend that then waits on it is terminated, once `atCut` has
 * checked what was sent by then. The time of the cut.
 */
export async function cutTheWaiter(
  h: FanoutHarness,
  hold: (trx: Knex.Transaction) => Promise<void>,
  atCut: () => void,
  what: string,
): Promise<number> {
  const db = h.database.db;
  let cutAt = 0;
  await db.transaction(async (trx) => {
    const me = ((await trx.raw('SELECT pg_backend_pid() AS pid')) as { rows: Array<{ pid: number }> }).rows[0]!.pid;
    await hold(trx);
    const blocked = await eventually(
      async () => {
        const res = (await db.raw('SELECT pid FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [me])) as {
          rows: Array<{ pid: number }>;
        };
        return res.rows.length > 0 && res.rows.map((r) => r.pid);
      },
      { timeoutMs: 20_000, intervalMs: 20, what },
    );
    expect(blocked).toHaveLength(1);
    atCut();
    await db.raw('SELECT pg_terminate_backend(?)', [blocked[0]!]);
    cutAt = Date.now();
  });
  return cutAt;
}

/**
 * A statement of the worker's to cut: a trigger of the test's own, on `endpointId`'s rows only and
 * only on the change `when` says (SQL over OLD and NEW), makes it wait on the advisory lock
 * `lockKey`, which cutTheWaiter's `hold` takes (`hold` below). `drop` removes it (after the cut,
 * and in a finally).
 */
export async function updateToCut(
  h: FanoutHarness,
  name: string,
  endpointId: string,
  when: string,
  lockKey: number,
): Promise<{ hold: (trx: Knex.Transaction) => Promise<void>; drop: () => Promise<void> }> {
  const db = h.database.db;
  const fn = `test_cut_${name}`;
  await db.raw(`CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock(${lockKey}); RETURN NEW; END $$`);
  await db.raw(
    `CREATE TRIGGER ${fn} BEFORE UPDATE ON webhook_delivery FOR EACH ROW
      WHEN (OLD.endpoint_id = '${endpointId}'::uuid AND ${when}) EXECUTE FUNCTION ${fn}()`,
  );
  return {
    hold: async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?)', [lockKey]);
    },
    drop: async () => {
      await db.raw(`DROP TRIGGER IF EXISTS ${fn} ON webhook_delivery`);
    },
  };
}
