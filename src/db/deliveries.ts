import type { Delivery } from '../domain/records.js';
import type { DeliveryStatus } from '../domain/statuses.js';
import type { Db } from './knex.js';
import { toDelivery, type DeliveryRow } from './rows.js';

export interface AttemptResult {
  status: DeliveryStatus;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
}

export function createDeliveryRepository(db: Db) {
  return {
    /** One PENDING row per (event, endpoint); safe to call again when the activity is retried. */
    async createPending(eventId: string, endpointIds: readonly string[]): Promise<Delivery[]> {
      if (endpointIds.length > 0) {
        await db('webhook_delivery')
          .insert(endpointIds.map((endpointId) => ({ event_id: eventId, endpoint_id: endpointId })))
          .onConflict(['event_id', 'endpoint_id'])
          .ignore();
      }
      const rows = await db<DeliveryRow>('webhook_delivery')
        .where({ event_id: eventId })
        .whereIn('endpoint_id', endpointIds as string[])
        .orderBy('created_at');
      return rows.map(toDelivery);
    },

    async get(id: string): Promise<Delivery | undefined> {
      const row = await db<DeliveryRow>('webhook_delivery').where({ id }).first();
      return row ? toDelivery(row) : undefined;
    },

    async listByEvent(eventId: string): Promise<Delivery[]> {
      const rows = await db<DeliveryRow>('webhook_delivery').where({ event_id: eventId }).orderBy('created_at');
      return rows.map(toDelivery);
    },

    async statusesByEvent(eventId: string): Promise<DeliveryStatus[]> {
      const rows = await db<DeliveryRow>('webhook_delivery').select('status').where({ event_id: eventId });
      return rows.map((r) => r.status);
    },

    /** Records one attempt's outcome and counts it; a settled delivery is never reopened here. */
    async recordAttempt(id: string, r: AttemptResult): Promise<Delivery | undefined> {
      const rows: unknown[] = await db('webhook_delivery')
        .where({ id, status: 'PENDING' })
        .update({
          status: r.status,
          attempts: db.raw('attempts + 1'),
          last_response_status: r.responseStatus,
          last_response_body: r.responseBody,
          last_error: r.error,
          last_attempt_at: db.fn.now(),
          completed_at: r.status === 'PENDING' ? null : db.fn.now(),
          updated_at: db.fn.now(),
        })
        .returning('*');
      const row = rows[0];
      return row ? toDelivery(row as DeliveryRow) : undefined;
    },

    /** Replay: a FAILED delivery goes back to PENDING. Returns false when it was not FAILED. */
    async reopenFailed(id: string): Promise<boolean> {
      const n = await db('webhook_delivery')
        .where({ id, status: 'FAILED' })
        .update({ status: 'PENDING', completed_at: null, updated_at: db.fn.now() });
      return n > 0;
    },
  };
}

export type DeliveryRepository = ReturnType<typeof createDeliveryRepository>;
