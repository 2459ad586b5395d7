import { createAttemptHandoff } from './attempt-handoff.js';
import { createAttemptRecorder } from './attempt-recorder.js';
import { createDeliver } from './deliver.js';
import { backoffDelayMs, noopLogger, validateBackoff, type ActivityDeps } from './deps.js';
import { withFailureMapping } from './failures.js';
import { createFinishEvent } from './finish-event.js';
import { createPrepare } from './prepare.js';
import { createOrderingRelease, createOrderingTurn, releasingDeliver } from './ordering.js';
import { createFilterForecast } from './filter-forecast.js';
import { createSequenceJudge } from './sequence-judge.js';
import { createExpressionCache } from '../content/expression-cache.js';
import { DEFAULT_BACKOFF } from '../config/settings.js';
import type { FanoutActivities } from './types.js';

export type { ActivityDeps } from './deps.js';
export type * from './types.js';

/** The fanout workflow's activities, bound to their dependencies (register them on the worker). */
export function createActivities(deps: ActivityDeps): FanoutActivities {
  const logger = deps.logger ?? noopLogger;
  const backoff = validateBackoff(deps.backoff ?? DEFAULT_BACKOFF);
  const handoff = createAttemptHandoff();
  const recordAttempt = createAttemptRecorder({ deliveries: deps.repos.deliveries });
  // compiled filters and transforms, shared by prepare and deliver
  const expressions = createExpressionCache();
  const judge = createSequenceJudge({ expressions });
  const delivery = createDeliver({
    repos: deps.repos,
    destinations: deps.destinations,
    metrics: deps.metrics,
    logger,
    backoff,
    handoff,
    recordAttempt,
    expressions,
  });
  return {
    prepare: withFailureMapping(
      createPrepare({
        repos: deps.repos,
        metrics: deps.metrics,
        logger,
        backoff,
        handoff,
        expressions,
        forecast: createFilterForecast(),
        judge,
        // a waiting delivery is left to its key's chain only where the chain can start its run
        detach: deps.orderingHandoff !== false && deps.signalTurn !== undefined,
        now: deps.now ?? Date.now,
      }),
    ),
    // ORDERING_HANDOFF off (the rollout, docs/ordering.md) leaves every release to the run, as a
    // worker of the release before does
    deliver: withFailureMapping(
      deps.orderingHandoff === false ? delivery.deliver : releasingDeliver(delivery.deliver, { repos: deps.repos, logger }),
    ),
    finishEvent: withFailureMapping(createFinishEvent({ repos: deps.repos, metrics: deps.metrics, logger, now: deps.now ?? Date.now })),
    orderingTurn: withFailureMapping(createOrderingTurn({ repos: deps.repos, metrics: deps.metrics, logger, judge })),
    orderingRelease: withFailureMapping(
      createOrderingRelease({
        repos: deps.repos,
        metrics: deps.metrics,
        logger,
        judge,
        ...(deps.signalTurn ? { signalTurn: deps.signalTurn } : {}),
        // ORDERING_HANDOFF (default on): the releasing activity delivers the key's next delivery itself
        ...(deps.orderingHandoff === false ? {} : { handedOff: delivery.handedOff }),
        ...(deps.draining ? { draining: deps.draining } : {}),
        firstRetryMs: backoffDelayMs(backoff, 1),
      }),
    ),
  };
}
