import { describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { cloudActions } from '../../../bench/cloud-actions.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const T = temporal.api.enums.v1.EventType;

// Histories as the server writes them (event ids in order, markers pointing at the workflow task
// completion that recorded them), counted by Temporal Cloud's documented rules.
// (fromObject turns the plain numbers into the int64 Longs of the protobuf types)
let nextId = 1;
const ev = (eventType: temporal.api.enums.v1.EventType, attrs: Record<string, unknown> = {}): HistoryEvent =>
  temporal.api.history.v1.HistoryEvent.fromObject({ eventId: nextId++, eventType, ...attrs });
const started = (): HistoryEvent => ev(T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
const task = (): HistoryEvent[] => [
  ev(T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
  ev(T.EVENT_TYPE_WORKFLOW_TASK_STARTED),
  ev(T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
];
/** a workflow task that completes with `markers` markers recorded */
const taskWithMarkers = (markers: number): HistoryEvent[] => {
  const t = task();
  const completed = Number(t[2]?.eventId);
  return [
    ...t,
    ...Array.from({ length: markers }, () =>
      ev(T.EVENT_TYPE_MARKER_RECORDED, {
        markerRecordedEventAttributes: { markerName: 'core_local_activity', workflowTaskCompletedEventId: completed },
      }),
    ),
  ];
};
const activity = (attempt: number): HistoryEvent[] => {
  const scheduled = ev(T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
  return [
    scheduled,
    ev(T.EVENT_TYPE_ACTIVITY_TASK_STARTED, {
      activityTaskStartedEventAttributes: { scheduledEventId: Number(scheduled.eventId), attempt },
    }),
    ev(T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED),
  ];
};
const upsert = (...fields: string[]): HistoryEvent =>
  ev(T.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, {
    upsertWorkflowSearchAttributesEventAttributes: { searchAttributes: { indexedFields: Object.fromEntries(fields.map((f) => [f, {}])) } },
  });
const completed = (): HistoryEvent => ev(T.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);

describe('Temporal Cloud Actions counted from a history', () => {
  it.each([
    {
      name: 'one workflow task running 3 local activities: the start, and one Action for all its markers',
      history: () => [started(), ...taskWithMarkers(3), completed()],
      total: 2,
    },
    {
      name: 'twelve local activities in one workflow task still cost one Action together',
      history: () => [started(), ...taskWithMarkers(12), completed()],
      total: 2,
    },
    {
      name: 'markers recorded by two workflow tasks are two Actions',
      history: () => [started(), ...taskWithMarkers(2), ...taskWithMarkers(1), completed()],
      total: 3,
    },
    {
      name: 'an activity is billed per attempt (its Started event carries the last attempt)',
      history: () => [started(), ...task(), ...activity(3), ...task(), completed()],
      total: 4,
    },
    {
      name: 'a timer is one Action',
      history: () => [started(), ...task(), ev(T.EVENT_TYPE_TIMER_STARTED), ev(T.EVENT_TYPE_TIMER_FIRED), ...task(), completed()],
      total: 2,
    },
    {
      name: "a patch's TemporalChangeVersion upsert is exempt, another search attribute is not",
      history: () => [started(), ...taskWithMarkers(1), upsert('TemporalChangeVersion'), upsert('CustomKeyword'), completed()],
      total: 3,
    },
    {
      name: 'a signal received and a child workflow (its start and its execution)',
      history: () => [
        started(),
        ev(T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
        ...task(),
        ev(T.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED),
        completed(),
      ],
      total: 4,
    },
  ])('$name', ({ history, total }) => {
    expect(cloudActions(history()).total).toBe(total);
  });

  it.each([
    {
      name: 'a delivery whose turn came at once: one workflow task',
      history: () => [started(), ...taskWithMarkers(4), completed()],
      tasks: 1,
    },
    {
      name: 'one that waited for a signal: a second task',
      history: () => [started(), ...taskWithMarkers(3), ev(T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), ...taskWithMarkers(2), completed()],
      tasks: 2,
    },
  ])('counts the workflow tasks: $name', ({ history, tasks }) => {
    expect(cloudActions(history()).workflowTasks).toBe(tasks);
  });

  it('says what the Actions are for', () => {
    const a = cloudActions([started(), ...taskWithMarkers(12), ...activity(2), completed()]);
    expect(a).toMatchObject({ markers: 12, markerTasks: 1, workflowTasks: 1 });
    expect(a.byKind).toEqual({ 'workflow started': 1, 'activity attempts': 2, 'local activities and markers (one per workflow task)': 1 });
  });
});
