import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type { EventRepository } from '../db/events.js';
import type { Metrics } from '../metrics/metrics.js';
import type { WebhookFanoutWorkflow } from '../workflows/fanout.js';
import { TASK_QUEUE } from '../config/settings.js';
import { WORKFLOW_TYPE } from '../workflows/names.js';
import { fanoutInput } from './fanout-input.js';
import { contextOf, inSpan, SpanKind, tracingOn, type TraceCarrier } from '../observability/spans.js';

export interface FanoutStarterDeps {
  client: Client;
  /** default WEBHOOKS */
  taskQueue?: string;
  metrics?: Pick<Metrics, 'workflowsStarted'>;
  /** when given, a start that finds its run already there postpones the sweeper's next publish of the event */
  events?: Pick<EventRepository, 'markRepublished'>;
  /**
   * Ask the server to hand each new run's first workflow task back in the start call's answer, to
   * the worker of this process (eager workflow start): no task-queue round trip, about a fifth less
   * CPU per event over Temporal and the process (bench/eager-start.ts). Only with a Client on the
   * NativeConnection of a worker polling `taskQueue`; the server falls back to the queue when that
   * worker has no free slot.
   */
  eager?: boolean;
}

export type StartResult = 'started' | 'already_started';

export type FanoutStarter = (eventId: string, trace?: TraceCarrier) => Promise<StartResult>;

/**
 * Starts the fanout of one event with workflow id = event id. A redelivered queue message finds
 * the workflow already there (running or closed) and counts as handled, so an event is fanned out
 * at most once through the queue; replays use their own workflow ids.
 */
export function createFanoutStarter(deps: FanoutStarterDeps): FanoutStarter {
  const taskQueue = deps.taskQueue ?? TASK_QUEUE;
  /**
   * One event's message handled, as a consumer span (docs/tracing.md) whose parent is the publish
   * span ingest sent along: the workflow start (the client interceptor's span) is its child, and
   * the workflow and its deliveries follow through the start's headers.
   */
  return (eventId, trace) => (tracingOn() ? traced(eventId, trace) : start(eventId));

  function traced(eventId: string, trace: TraceCarrier | undefined): Promise<StartResult> {
    const attributes = { 'messaging.system': 'aws_sqs', 'messaging.operation.type': 'process', 'webhook.event_id': eventId };
    return inSpan('process event', { kind: SpanKind.CONSUMER, parent: contextOf(trace), attributes }, async (span) => {
      const result = await start(eventId);
      span?.setAttribute('webhook.start', result);
      return result;
    });
  }

  async function start(eventId: string): Promise<StartResult> {
    let result: StartResult;
    try {
      const handle = await deps.client.workflow.start<typeof WebhookFanoutWorkflow>(WORKFLOW_TYPE, {
        taskQueue,
        workflowId: eventId,
        args: [fanoutInput(eventId)],
        // closed runs too: a second fanout would re-send every delivery
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        ...(deps.eager ? { requestEagerStart: true } : {}),
      });
      result = 'started';
      // eager asked and granted: the server handed the first workflow task to this process's
      // worker; otherwise (not asked, or no free slot there) it went through the task queue
      deps.metrics?.workflowsStarted.inc({ start: handle.eagerlyStarted ? 'eager' : 'task_queue' });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      result = 'already_started';
    }
    // the run exists already; its prepare may not have run yet (worker down). Only prepare records
    // the run on the event: an ordered delivery of a later event takes an event with a run for one
    // whose deliveries are in place (db/ordering.ts), and would go first. The event counts as
    // published now instead, so the sweeper publishes it again only after its grace period.
    if (result === 'already_started') await deps.events?.markRepublished(eventId);
    return result;
  }
}
