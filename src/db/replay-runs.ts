import type { DeliveryStatus } from '../domain/statuses.js';
import { eventWithPayload } from './deliveries.js';
import type { Db } from './knex.js';
import type { OperationalEvents } from './operational-events.js';

// The replays WebhookReplay resources ask for (migration 075): one row per resource uid, the
// deliveries it matched when it began, and where each one is. Every step is a statement that
// re-checks what it changes, so a step repeated after a crash or by a new leader does nothing twice.

export type ReplayPhase = 'Running' | 'Complete' | 'Failed';

export interface ReplayCriteria {
  endpointId: string;
  /** on the event's received_at: from inclusive, to exclusive */
  from: Date;
  to: Date;
  statuses: readonly Extract<DeliveryStatus, 'FAILED' | 'SUCCESS'>[];
  /** empty: every type */
  eventTypes: readonly string[];
}

export interface ReplayIdentity {
  uid: string;
  generation: number;
  namespace: string;
  name: string;
  spec: unknown;
}

export interface ReplayRecord {
  uid: string;
  generation: number;
  namespace: string;
  name: string;
  spec: unknown;
  endpointId: string | null;
  dryRun: boolean;
  phase: ReplayPhase;
  reason: string;
  message: string;
  matched: number;
  skipped: number;
  started: number;
  succeeded: number;
  failed: number;
  createdAt: Date;
  finishedAt: Date | null;
}

interface ReplayRow {
  uid: string;
  generation: string | number;
  namespace: string;
  name: string;
  spec: unknown;
  endpoint_id: string | null;
  dry_run: boolean;
  phase: ReplayPhase;
  reason: string;
  message: string;
  matched: number;
  skipped: number;
  started: number;
  succeeded: number;
  failed: number;
  created_at: Date;
  finished_at: Date | null;
}

const toRecord = (r: ReplayRow): ReplayRecord => ({
  uid: r.uid,
  generation: Number(r.generation),
  namespace: r.namespace,
  name: r.name,
  spec: r.spec,
  endpointId: r.endpoint_id,
  dryRun: r.dry_run,
  phase: r.phase,
  reason: r.reason,
  message: r.message,
  matched: r.matched,
  skipped: r.skipped,
  started: r.started,
  succeeded: r.succeeded,
  failed: r.failed,
  createdAt: r.created_at,
  finishedAt: r.finished_at,
});

/** A group of one event's deliveries handed to one replay run. */
export interface ReplayClaim {
  eventId: string;
  deliveryIds: string[];
  workflowId: string;
}

export interface ReplayProgress {
  /** deliveries not yet handed to a run */
  waiting: number;
  started: number;
  /** of the started: settled SUCCESS / FAILED, and not yet settled */
  succeeded: number;
  failed: number;
  pending: number;
  skipped: number;
}

/** The run of one event's deliveries for one replay: the same id whoever starts it, so Temporal runs it at most once. */
export const replayWorkflowId = (eventId: string, uid: string): string => `${eventId}:replay:${uid}`;

/** replay.completed (docs/operations-events.md) of a replay that just ended, in the transaction that ended it: once per replay (its uid). */
function replayCompleted(r: ReplayRecord): Parameters<OperationalEvents['record']>[0] {
  return {
    type: 'replay.completed',
    key: r.uid,
    subject: {
      kind: 'WebhookReplay',
      namespace: r.namespace,
      name: r.name,
      uid: r.uid,
      adminApiPath: r.endpointId === null ? '/api/deliveries' : `/api/deliveries?endpointId=${r.endpointId}`,
    },
    data: {
      replay: {
        phase: r.phase,
        reason: r.reason,
        message: r.message,
        dryRun: r.dryRun,
        endpointId: r.endpointId,
        matched: r.matched,
        skipped: r.skipped,
        started: r.started,
        succeeded: r.succeeded,
        failed: r.failed,
      },
    },
  };
}

const identityColumns = (id: ReplayIdentity) => ({
  uid: id.uid,
  generation: id.generation,
  namespace: id.namespace,
  name: id.name,
  spec: JSON.stringify(id.spec),
});

/** `events`: where a replay's end is recorded as replay.completed; without it, it is not (tests of the runner alone). */
export function createReplayRuns(db: Db, events?: OperationalEvents) {
  return {
    async get(uid: string): Promise<ReplayRecord | undefined> {
      const row = await db<ReplayRow>('webhook_replay').where({ uid }).first();
      return row ? toRecord(row) : undefined;
    },

    /** A finished or running replay of an earlier resource with this namespace, name and spec (a re-created manifest). */
    async sameAsEarlier(r: Pick<ReplayIdentity, 'uid' | 'namespace' | 'name' | 'spec'>): Promise<ReplayRecord | undefined> {
      const row = await db<ReplayRow>('webhook_replay')
        .where({ namespace: r.namespace, name: r.name })
        .andWhereNot({ uid: r.uid })
        .andWhereRaw('spec = ?::jsonb', [JSON.stringify(r.spec)])
        .orderBy('created_at', 'asc')
        .first();
      return row ? toRecord(row) : undefined;
    },

    /**
     * A replay that ends before it begins (its endpoint not found, a re-created manifest), or a
     * Skip, which ends in the step that does it:
     * recorded so that it stays what it was. Returns the stored row (an earlier call's, if any).
     */
    async recordFinished(
      id: ReplayIdentity,
      end: Pick<ReplayRecord, 'phase' | 'reason' | 'message' | 'dryRun'> &
        Partial<Pick<ReplayRecord, 'endpointId' | 'matched' | 'skipped' | 'started' | 'succeeded' | 'failed'>>,
    ): Promise<ReplayRecord> {
      await db.transaction(async (trx) => {
        const inserted = await trx('webhook_replay')
          .insert({
            ...identityColumns(id),
            endpoint_id: end.endpointId ?? null,
            dry_run: end.dryRun,
            phase: end.phase,
            reason: end.reason,
            message: end.message,
            matched: end.matched ?? 0,
            skipped: end.skipped ?? 0,
            started: end.started ?? 0,
            succeeded: end.succeeded ?? 0,
            failed: end.failed ?? 0,
            finished_at: db.fn.now(),
          })
          .onConflict('uid')
          .ignore()
          .returning('uid');
        if (inserted.length > 0 && events) {
          const row = await trx<ReplayRow>('webhook_replay').where({ uid: id.uid }).first();
          if (row) await events.record(replayCompleted(toRecord(row)), trx);
        }
      });
      return (await this.get(id.uid))!;
    },

    /**
     * Begins a replay: its row and, in the same transaction, the snapshot of the deliveries it
     * matches (those of an event whose payload retention dropped are recorded skipped). A dry run
     * only counts and is finished at once. A second call for the same uid changes nothing.
     */
    async begin(id: ReplayIdentity, c: ReplayCriteria, dryRun: boolean): Promise<ReplayRecord> {
      await db.transaction(async (trx) => {
        const inserted = (await trx('webhook_replay')
          .insert({
            ...identityColumns(id),
            endpoint_id: c.endpointId,
            dry_run: dryRun,
            phase: dryRun ? 'Complete' : 'Running',
            reason: dryRun ? 'DryRun' : 'Running',
            finished_at: dryRun ? trx.fn.now() : null,
          })
          .onConflict('uid')
          .ignore()
          .returning('uid')) as unknown[];
        if (inserted.length === 0) return;
        const matching = trx('webhook_delivery as d')
          .join('webhook_event as e', 'e.id', 'd.event_id')
          .where('d.endpoint_id', c.endpointId)
          .whereIn('d.status', c.statuses as string[])
          .where('e.received_at', '>=', c.from)
          .where('e.received_at', '<', c.to);
        if (c.eventTypes.length > 0) matching.whereIn('e.event_type', c.eventTypes as string[]);
        if (dryRun) {
          const counted = (await matching
            .clone()
            .select(
              trx.raw('count(*)::int AS matched'),
              trx.raw('(count(*) FILTER (WHERE e.payload_dropped_at IS NOT NULL))::int AS skipped'),
            )
            .first()) as { matched: number; skipped: number };
          const done = await trx<ReplayRow>('webhook_replay').where({ uid: id.uid }).update(counted).returning('*');
          if (done[0] && events) await events.record(replayCompleted(toRecord(done[0] as ReplayRow)), trx);
          return;
        }
        await trx.raw(
          `INSERT INTO webhook_replay_delivery (replay_uid, delivery_id, event_id, state)
           ${matching
             .clone()
             .select(
               trx.raw('?', [id.uid]),
               'd.id',
               'd.event_id',
               trx.raw(`CASE WHEN e.payload_dropped_at IS NULL THEN 'queued' ELSE 'skipped' END`),
             )
             .toQuery()}`,
        );
        await trx.raw(
          `UPDATE webhook_replay r SET matched = c.matched, skipped = c.skipped
             FROM (SELECT count(*)::int AS matched, (count(*) FILTER (WHERE state = 'skipped'))::int AS skipped
                     FROM webhook_replay_delivery WHERE replay_uid = ?) c
            WHERE r.uid = ?`,
          [id.uid, id.uid],
        );
      });
      return (await this.get(id.uid))!;
    },

    /** Claims reopened before a crash (or a failed start) whose run is not confirmed started. */
    async unconfirmed(uid: string): Promise<ReplayClaim[]> {
      const rows = (await db('webhook_replay_delivery')
        .where({ replay_uid: uid, state: 'reopened' })
        .select('event_id', 'workflow_id', db.raw('array_agg(delivery_id ORDER BY delivery_id) AS ids'))
        .groupBy('event_id', 'workflow_id')) as Array<{ event_id: string; workflow_id: string; ids: string[] }>;
      return rows.map((r) => ({ eventId: r.event_id, deliveryIds: r.ids, workflowId: r.workflow_id }));
    },

    /**
     * Up to `limit` queued deliveries, whole events at a time, back to PENDING with their run's id
     * chosen, in one transaction: a delivery whose status is no longer one the replay takes
     * (another replay took it) or whose event lost its payload meanwhile is marked skipped.
     */
    async claim(uid: string, statuses: readonly string[], limit: number): Promise<ReplayClaim[]> {
      return db.transaction(async (trx) => {
        const events = (await trx('webhook_replay_delivery')
          .where({ replay_uid: uid, state: 'queued' })
          .distinct('event_id')
          .orderBy('event_id')
          .limit(limit)) as Array<{ event_id: string }>;
        const claims: ReplayClaim[] = [];
        let taken = 0;
        for (const { event_id: eventId } of events) {
          if (taken >= limit) break;
          const ids = (
            (await trx('webhook_replay_delivery')
              .where({ replay_uid: uid, state: 'queued', event_id: eventId })
              .select('delivery_id')) as Array<{
              delivery_id: string;
            }>
          ).map((r) => r.delivery_id);
          const reopened = (
            (await trx('webhook_delivery')
              .whereIn('id', ids)
              .whereIn('status', statuses as string[])
              .whereExists(eventWithPayload(trx))
              .update({ status: 'PENDING', completed_at: null, updated_at: trx.fn.now() })
              .returning('id')) as Array<{ id: string }>
          ).map((r) => r.id);
          const workflowId = replayWorkflowId(eventId, uid);
          if (reopened.length > 0) {
            await trx('webhook_replay_delivery')
              .where({ replay_uid: uid })
              .whereIn('delivery_id', reopened)
              .update({ state: 'reopened', workflow_id: workflowId });
            claims.push({ eventId, deliveryIds: reopened.sort(), workflowId });
          }
          const skipped = ids.filter((id) => !reopened.includes(id));
          if (skipped.length > 0) {
            await trx('webhook_replay_delivery').where({ replay_uid: uid }).whereIn('delivery_id', skipped).update({ state: 'skipped' });
            await trx('webhook_replay').where({ uid }).increment('skipped', skipped.length);
          }
          taken += ids.length;
        }
        return claims;
      });
    },

    async markStarted(uid: string, workflowId: string): Promise<void> {
      await db('webhook_replay_delivery')
        .where({ replay_uid: uid, workflow_id: workflowId, state: 'reopened' })
        .update({ state: 'started' });
    },

    /** Where the replay's deliveries are: what its status shows while it runs. */
    async progress(uid: string): Promise<ReplayProgress> {
      const row = (await db('webhook_replay_delivery as r')
        .leftJoin('webhook_delivery as d', 'd.id', 'r.delivery_id')
        .where('r.replay_uid', uid)
        .select(
          db.raw(`(count(*) FILTER (WHERE r.state IN ('queued', 'reopened')))::int AS waiting`),
          db.raw(`(count(*) FILTER (WHERE r.state = 'started'))::int AS started`),
          db.raw(`(count(*) FILTER (WHERE r.state = 'started' AND d.status = 'SUCCESS'))::int AS succeeded`),
          db.raw(`(count(*) FILTER (WHERE r.state = 'started' AND d.status = 'FAILED'))::int AS failed`),
          db.raw(`(count(*) FILTER (WHERE r.state = 'started' AND d.status = 'PENDING'))::int AS pending`),
          db.raw(`(count(*) FILTER (WHERE r.state = 'skipped'))::int AS skipped`),
        )
        .first()) as ReplayProgress;
      return row;
    },

    /** The end of a running replay: its counts frozen. */
    async finish(uid: string, p: ReplayProgress): Promise<ReplayRecord> {
      await db.transaction(async (trx) => {
        const ended = await trx<ReplayRow>('webhook_replay')
          .where({ uid, phase: 'Running' })
          .update({
            phase: 'Complete',
            reason: 'Replayed',
            started: p.started,
            succeeded: p.succeeded,
            failed: p.failed,
            skipped: p.skipped,
            finished_at: db.fn.now(),
          })
          .returning('*');
        const row = ended[0];
        if (row && events) await events.record(replayCompleted(toRecord(row as ReplayRow)), trx);
      });
      return (await this.get(uid))!;
    },
  };
}

export type ReplayRuns = ReturnType<typeof createReplayRuns>;
