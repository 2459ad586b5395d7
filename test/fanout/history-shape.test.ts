import { describe, expect } from 'vitest';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { addEndpoint, addEvent, uniqueSource } from './support/harness.js';
import { it } from './support/fixtures.js';

const EventType = temporal.api.enums.v1.EventType;

/** The history of a run as a list of event type names, e.g. MARKER_RECORDED. */
async function eventTypes(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map((e) => (EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, ''));
}

// What a delivery costs Temporal is the history each run writes: on the happy path a
// fanout started by this version is one workflow task whose local activities leave a marker each.
describe('the history of a fanout', () => {
  it('an event whose endpoint answers 200 is one workflow task: a marker per local activity, no activity task, no patch marker, no search-attribute update', async ({
    h,
    receiver,
  }) => {
    const source = uniqueSource();
    const ok = await receiver();
    await addEndpoint(h.repos, { source, url: ok.url });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('COMPLETED');

    expect(ok.requests).toHaveLength(1);
    expect(await eventTypes(h.client, eventId)).toEqual([
      'WORKFLOW_EXECUTION_STARTED',
      'WORKFLOW_TASK_SCHEDULED',
      'WORKFLOW_TASK_STARTED',
      'WORKFLOW_TASK_COMPLETED',
      'MARKER_RECORDED', // prepare
      'MARKER_RECORDED', // the first delivery attempt
      'MARKER_RECORDED', // finishEvent
      'WORKFLOW_EXECUTION_COMPLETED',
    ]);
  });

  it('ten endpoints answering 200 still make one workflow task, a marker per delivery', async ({ h, receiver }) => {
    const source = uniqueSource();
    const ok = await receiver();
    for (let i = 0; i < 10; i++) await addEndpoint(h.repos, { source, url: ok.url });
    const eventId = await addEvent(h.repos, { source });

    expect(await h.runFanout(eventId)).toBe('COMPLETED');

    expect(ok.requests).toHaveLength(10);
    const types = await eventTypes(h.client, eventId);
    expect(types.filter((t) => t === 'WORKFLOW_TASK_COMPLETED')).toHaveLength(1);
    expect(types.filter((t) => t === 'MARKER_RECORDED')).toHaveLength(12);
    expect(types.filter((t) => t.startsWith('ACTIVITY_TASK') || t === 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES')).toEqual([]);
  });
});
