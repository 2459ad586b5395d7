import { expect } from 'vitest';
import { continuationWorkflowId } from '../../../src/domain/ordering.js';
import type { EndpointOrdering } from '../../../src/domain/records.js';
import type { RecordedRequest } from '../../support/receiver.js';
import { addEvent, type FanoutHarness } from './harness.js';

// What the ordered-delivery tests share (docs/ordering.md): events of one key sent in order, the
// receiver's requests read by their `seq`, and the runs' histories read for who delivered what.

export const seqOf = (r: RecordedRequest): number => (JSON.parse(r.body.toString('utf8')) as { seq: number }).seq;
export const seqsAt = (requests: RecordedRequest[]): number[] => requests.map(seqOf);
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
