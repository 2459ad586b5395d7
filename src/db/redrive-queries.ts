import { notClaimedByHandoff } from './ordering.js';
import type { Db } from './knex.js';

// The redrive of deliveries held while their endpoint was disabled (docs/endpoint-health.md).
// A held delivery is FAILED with redrive_on_enable; the redriver takes it off hold, reopens it and
// names the replay run that re-delivers it in ONE statement, so a delivery is handed to exactly one
// run; a run whose start is not confirmed is started again under the same id, which Temporal
// refuses to run twice.

export interface ClaimedRedrive {
  deliveryId: string;
  eventId: string;
  endpointId: string;
  workflowId: string;
}

interface ClaimRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  redrive_workflow_id: string;
}

const toClaim = (r: ClaimRow): ClaimedRedrive => ({
  deliveryId: r.id,
  eventId: r.event_id,
  endpointId: r.endpoint_id,
  workflowId: r.redrive_workflow_id,
});

/** A redrive of the endpoint is in flight: a delivery reopened by the redriver and not settled yet. */
const IN_FLIGHT = `EXISTS (SELECT 1 FROM webhook_delivery f
                            WHERE f.endpoint_id = ep.id AND f.redrive_workflow_id IS NOT NULL AND f.status = 'PENDING')`;

export function createRedriveQueries(db: Db) {
  return {
    /** Enabled, active endpoints with held deliveries and no redrive in flight: where a redrive can go on. */
    async endpointsToRedrive(limit: number): Promise<string[]> {
      const res = await db.raw<{ rows: Array<{ id: string }> }>(
        `SELECT ep.id FROM webhook_endpoint ep
          WHERE ep.active AND ep.disabled_at IS NULL AND NOT ${IN_FLIGHT}
            AND EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.endpoint_id = ep.id AND d.redrive_on_enable AND d.status = 'FAILED')
          LIMIT ?`,
        [limit],
      );
      return res.rows.map((r) => r.id);
    },

    /**
     * Takes the endpoint's oldest held delivery (by the event's receipt) off hold, back to PENDING, naming its replay run.
     * One at a time per endpoint, so the receiver gets them oldest first: an advisory lock
     * serializes redrivers of one endpoint (any number of consumer replicas), and nothing is taken
     * while an earlier one is in flight or the endpoint is not enabled. undefined: nothing to take.
     */
    async claimNext(endpointId: string, workflowIdFor: (eventId: string) => string): Promise<ClaimedRedrive | undefined> {
      return db.transaction(async (trx) => {
        const locked = await trx.raw<{ rows: Array<{ ok: boolean }> }>(
          `SELECT pg_try_advisory_xact_lock(hashtextextended('webhook-fanout:redrive:' || ?, 0)) AS ok`,
          [endpointId],
        );
        if (!locked.rows[0]?.ok) return undefined;
        const next = await trx.raw<{ rows: Array<{ id: string; event_id: string }> }>(
          `SELECT d.id, d.event_id FROM webhook_delivery d
             JOIN webhook_endpoint ep ON ep.id = d.endpoint_id
             JOIN webhook_event ev ON ev.id = d.event_id
            WHERE d.endpoint_id = ? AND d.redrive_on_enable AND d.status = 'FAILED' AND ${notClaimedByHandoff('d')}
              AND ep.active AND ep.disabled_at IS NULL AND NOT ${IN_FLIGHT}
            ORDER BY ev.received_at, d.created_at, d.id
            LIMIT 1
              FOR UPDATE OF d SKIP LOCKED`,
          [endpointId],
        );
        const row = next.rows[0];
        if (!row) return undefined;
        const claimed = await trx.raw<{ rows: ClaimRow[] }>(
          `UPDATE webhook_delivery
              SET status = 'PENDING', completed_at = NULL, redrive_on_enable = false,
                  redrive_workflow_id = ?, redrive_started_at = NULL, updated_at = now()
            WHERE id = ? AND redrive_on_enable AND status = 'FAILED' AND ${notClaimedByHandoff('webhook_delivery')}
        RETURNING id, event_id, endpoint_id, redrive_workflow_id`,
          [workflowIdFor(row.event_id), row.id],
        );
        const c = claimed.rows[0];
        return c ? toClaim(c) : undefined;
      });
    },

    /** The run of a claimed delivery was started (or found started): no need to start it again. */
    async markStarted(deliveryId: string, workflowId: string): Promise<void> {
      await db('webhook_delivery')
        .where({ id: deliveryId, redrive_workflow_id: workflowId })
        .whereNull('redrive_started_at')
        .update({ redrive_started_at: db.fn.now() });
    },

    /** Claims older than `olderThanMs` whose run was never confirmed started (the redriver died, or Temporal was down). */
    async unconfirmed(olderThanMs: number, limit: number): Promise<ClaimedRedrive[]> {
      const rows = await db<ClaimRow>('webhook_delivery')
        .select('id', 'event_id', 'endpoint_id', 'redrive_workflow_id')
        .whereNotNull('redrive_workflow_id')
        .whereNull('redrive_started_at')
        .andWhere('status', 'PENDING')
        .andWhere('updated_at', '<', db.raw(`now() - make_interval(secs => ?)`, [olderThanMs / 1000]))
        .orderBy('created_at')
        .limit(limit);
      return rows.map(toClaim);
    },

    /** Whether the claimed delivery has settled (its run is done with it). */
    async settled(deliveryId: string): Promise<boolean> {
      const row = await db('webhook_delivery').select('status').where({ id: deliveryId }).first<{ status: string } | undefined>();
      return row === undefined || row.status !== 'PENDING';
    },

    /** Active endpoints now disabled, for the gauge. */
    /** What the health panels show: endpoints disabled and paused now, deliveries held (through the held index). */
    async health(): Promise<{ disabled: number; paused: number; held: number }> {
      const res = await db.raw<{ rows: Array<{ disabled: number; paused: number; held: number }> }>(
        `SELECT (SELECT count(*) FROM webhook_endpoint WHERE active AND disabled_at IS NOT NULL) AS disabled,
                (SELECT count(*) FROM webhook_endpoint WHERE active AND paused_until > now()) AS paused,
                (SELECT count(*) FROM webhook_delivery WHERE redrive_on_enable) AS held`,
      );
      return res.rows[0] ?? { disabled: 0, paused: 0, held: 0 };
    },

    async countDisabled(): Promise<number> {
      const row = await db('webhook_endpoint').where({ active: true }).whereNotNull('disabled_at').count<{ n: string }[]>({ n: '*' });
      return Number(row[0]?.n ?? 0);
    },
  };
}

export type RedriveQueries = ReturnType<typeof createRedriveQueries>;
