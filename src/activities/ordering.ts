import { Context } from '@temporalio/activity';
import type { ActivityDeps, ActivityLogger } from './deps.js';
import { settleUnsettled } from './finish-event.js';
import type { OrderingReleaseInput, OrderingReleaseResult, OrderingTurnInput, OrderingTurnResult, OrderingWait } from './types.js';
import type { SequenceJudge, Turn } from '../db/ordering.js';
import { describeError } from '../domain/errors.js';

type OrderingDeps = Pick<ActivityDeps, 'repos' | 'metrics' | 'signalTurn'> & { logger: ActivityLogger };

/** The workflow's side of a turn check: go, or wait for a signal or a timer. */
export const waitOf = (t: Turn): OrderingWait => (t.turn === 'go' ? 'go' : t.wake);

/** The id of the run this activity belongs to: the waiter a turn check records. */
export const runningWorkflowId = (fallback: string): string => Context.current().info.workflowExecution?.workflowId ?? fallback;

/**
 * Asks Postgres whether an ordered delivery's turn has come (db/ordering.ts), after a signal or a
 * timer woke its run; a delivery whose turn has not come is recorded as waiting again.
 */
export function createOrderingTurn({ repos, logger, judge }: OrderingDeps & { judge: SequenceJudge }) {
  return async function orderingTurn(input: OrderingTurnInput): Promise<OrderingTurnResult> {
    const turn = await repos.ordering.turn(input.deliveryId, runningWorkflowId(input.deliveryId), judge);
    logger.debug(
      { deliveryId: input.deliveryId, turn },
      turn.turn === 'go' ? 'ordered delivery: its turn' : 'ordered delivery waits for its turn',
    );
    return { turn: waitOf(turn) };
  };
}

/**
 * After an ordered delivery ended: settles it when its activity could not (as finishEvent
 * would, so the key is not held by a row no run settles), marks whether it released its key, and
 * wakes the run waiting behind it. A FAILED delivery that holds its key under Block is logged: the
 * key is blocked until it is replayed or skipped.
 *
 * The wake-up is signalled from here, at once. Left to the workflow (a command of its history),
 * the signal went out only when the workflow task completed, after finishEvent, and then through
 * the server's transfer queue: most of a key's hop from one delivery to the next (docs/ordering.md,
 * "How fast a key moves"). Sent, it is in the waiting run's history (durable); when it can not be
 * sent, the wake-up is returned and the workflow sends it. The same number of signals either way.
 */
export function createOrderingRelease(deps: OrderingDeps) {
  const { repos, logger } = deps;
  return async function orderingRelease(input: OrderingReleaseInput): Promise<OrderingReleaseResult> {
    if (input.unsettled !== undefined) await settleUnsettled(deps, { deliveryId: input.deliveryId, reason: input.unsettled });
    const released = await repos.ordering.release(input.deliveryId);
    if (released.holds) {
      // ordering.key_blocked (issue 41): the operational event goes here once the outbox exists
      logger.warn(
        { deliveryId: input.deliveryId, endpointId: released.endpointId },
        'ordering key blocked: a FAILED delivery holds its key until it is replayed or skipped (docs/ordering.md)',
      );
    }
    const { wake } = released;
    if (!wake) return {};
    // a run waiting behind itself counts its own wake-up (workflows/fanout.ts signalTurn)
    if (deps.signalTurn && wake.workflowId !== runningWorkflowId(input.deliveryId)) {
      try {
        await deps.signalTurn(wake);
        return {};
      } catch (err) {
        logger.debug(
          { deliveryId: input.deliveryId, wake, err: describeError(err) },
          'ordered delivery: the workflow signals the next one',
        );
      }
    }
    return { wake };
  };
}
