import type { Client } from '@temporalio/client';
import type { Wake } from '../db/ordering.js';
import { ORDERING_TURN_SIGNAL } from '../workflows/names.js';

/**
 * Signals the run waiting for an ordered delivery's turn (docs/ordering.md): the worker when a
 * delivery ends, the admin API's skip, the consumer's ordering waker. Bounded in time: with
 * Temporal down the SDK's own retries would hold the caller; past the deadline it throws, and the
 * caller leaves the wake-up to a durable path (the workflow's own signal, the waker).
 */
export async function signalTurn(client: Client, wake: Wake, timeoutMs: number): Promise<void> {
  await client.connection.withDeadline(Date.now() + timeoutMs, () =>
    client.workflow.getHandle(wake.workflowId).signal(ORDERING_TURN_SIGNAL, wake.deliveryId),
  );
}
