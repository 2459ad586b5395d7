// What one event costs on Temporal Cloud, which bills by Actions: counted from the real history of
// finished workflows by the rules of Temporal Cloud's documentation ("Temporal Cloud Actions",
// docs.temporal.io/cloud/actions). What a history does not show (queries, activity heartbeats,
// rejected updates, export) is not counted; webhook-fanout's workflow uses none of them.
import type { Client } from '@temporalio/client';
// a CommonJS module: Node's ESM loader finds no named exports in it
import proto from '@temporalio/proto';
import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const T = proto.temporal.api.enums.v1.EventType;

/** The search attribute the SDKs upsert for a patch: exempt from Actions. */
const CHANGE_VERSION = 'TemporalChangeVersion';

export interface CloudActions {
  total: number;
  /** marker events (one per local activity, and patches), and the workflow tasks that recorded them */
  markers: number;
  markerTasks: number;
  /** Actions by what caused them (workflow, activity, local activities and markers, timer, ...) */
  byKind: Record<string, number>;
  /**
   * workflow tasks of the run (not Actions: what the worker ran). A history does not say which of
   * them found the run evicted from the worker's cache (the task still comes on the sticky queue;
   * the SDK then fetches the history and replays it: its `sticky_cache_miss` metric).
   */
  workflowTasks: number;
}

/** The Actions one history event is billed as by itself (markers are counted per workflow task, apart). */
function actionsOf(e: HistoryEvent, attempts: Map<string, number>): [string, number] | undefined {
  switch (e.eventType) {
    case T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
      return ['workflow started', 1];
    case T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
      // "started or retried": each attempt; the history keeps the last attempt's number on its Started event
      return ['activity attempts', attempts.get(String(e.eventId)) ?? 1];
    case T.EVENT_TYPE_TIMER_STARTED:
      return ['timer started', 1];
    case T.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
      const fields = Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {});
      return fields.some((f) => f !== CHANGE_VERSION) ? ['search attribute upsert', 1] : undefined;
    }
    case T.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
    case T.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
      return ['signal', 1];
    case T.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
      // the start and the attempted execution
      return ['child workflow', 2];
    case T.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
      return ['update', 1];
    case T.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
      return ['workflow options updated', 1];
    case T.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED:
    case T.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED:
      return ['nexus operation', 1];
    default:
      return undefined;
  }
}

/**
 * Temporal Cloud's Actions for one workflow run's history. Local activities are recorded as
 * markers, and "all RecordMarkers from each Workflow Task" are one Action together: markers are
 * grouped by the workflow task that recorded them (a patch's marker shares its task's Action).
 * A workflow task heartbeat of a local activity running longer than the task timeout is one more
 * task, hence one more group.
 */
export function cloudActions(events: readonly HistoryEvent[]): CloudActions {
  const attempts = new Map<string, number>();
  for (const e of events) {
    const a = e.activityTaskStartedEventAttributes;
    if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_STARTED && a) attempts.set(String(a.scheduledEventId), Math.max(1, a.attempt ?? 1));
  }
  const byKind: Record<string, number> = {};
  const add = (kind: string, n: number): void => {
    byKind[kind] = (byKind[kind] ?? 0) + n;
  };
  const markerTasks = new Set<string>();
  let markers = 0;
  let workflowTasks = 0;
  for (const e of events) {
    if (e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) {
      workflowTasks++;
      continue;
    }
    if (e.eventType === T.EVENT_TYPE_MARKER_RECORDED) {
      markers++;
      markerTasks.add(String(e.markerRecordedEventAttributes?.workflowTaskCompletedEventId ?? e.eventId));
      continue;
    }
    const a = actionsOf(e, attempts);
    if (a) add(...a);
  }
  if (markerTasks.size > 0) add('local activities and markers (one per workflow task)', markerTasks.size);
  return {
    total: Object.values(byKind).reduce((s, n) => s + n, 0),
    markers,
    markerTasks: markerTasks.size,
    byKind,
    workflowTasks,
  };
}

/** Two counts as one: an event's run and the runs started for its deliveries. */
function sumActions(a: CloudActions, b: CloudActions): CloudActions {
  const byKind = { ...a.byKind };
  for (const [k, n] of Object.entries(b.byKind)) byKind[k] = (byKind[k] ?? 0) + n;
  return {
    total: a.total + b.total,
    markers: a.markers + b.markers,
    markerTasks: a.markerTasks + b.markerTasks,
    byKind,
    workflowTasks: a.workflowTasks + b.workflowTasks,
  };
}

/**
 * Actions of workflows by id (their latest run), from their histories once they have closed. With
 * `alsoRuns`, the runs it names for a workflow (an ordered delivery's continuation, started only
 * when its key's chain needed a run: docs/ordering.md) count towards that workflow's, when they exist.
 */
export async function cloudActionsOf(
  client: Client,
  workflowIds: readonly string[],
  alsoRuns?: (workflowId: string) => Promise<readonly string[]>,
): Promise<CloudActions[]> {
  const out: CloudActions[] = [];
  const actionsOfRun = async (id: string): Promise<CloudActions> => {
    const handle = client.workflow.getHandle(id);
    // the event's status is written by its last step, just before the workflow completes
    await handle.result();
    const history = await handle.fetchHistory();
    return cloudActions(history.events ?? []);
  };
  for (const id of workflowIds) {
    let actions = await actionsOfRun(id);
    for (const other of alsoRuns ? await alsoRuns(id) : []) {
      const exists = await client.workflow
        .getHandle(other)
        .describe()
        .then(
          () => true,
          () => false,
        );
      if (exists) actions = sumActions(actions, await actionsOfRun(other));
    }
    out.push(actions);
  }
  return out;
}

/** "workflow started 1, activity attempts 1, ...; 12 markers in 1 workflow task" */
export function describeActions(a: CloudActions): string {
  const kinds = Object.entries(a.byKind)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  return `${kinds}; ${a.markers} markers in ${a.markerTasks} workflow task(s)`;
}

/** The sample with the median total (they agree when every event went the same way). */
export function medianActions(samples: readonly CloudActions[]): CloudActions | undefined {
  const sorted = [...samples].sort((a, b) => a.total - b.total);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}
