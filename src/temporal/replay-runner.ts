import type { ReplayCriteria, ReplayIdentity, ReplayProgress, ReplayRecord, ReplayRuns } from '../db/replay-runs.js';
import { describeError } from '../domain/errors.js';
import type { DeniedReason, Endpoint } from '../domain/records.js';
import type { Logger } from '../observability/logger.js';
import type { SkipInNamespace, SkipOutcome } from './ordering-skip.js';

const DENIED_MESSAGE: Record<DeniedReason, string> = {
  NotAllowedBySource: "the InboundCredential of the endpoint's source does not allow endpoints of this namespace (spec.allowedEndpoints)",
  SourceNotFound: "no InboundCredential configures the endpoint's source",
};

/**
 * Drives the replay a WebhookReplay asks for (docs/operator.md, WebhookReplay), one step per call,
 * from what Postgres holds for its uid: the operator's reconcile (and dev mode) call step() until
 * it is finished. The same path as the admin API's bulk replay: deliveries reopened to PENDING and
 * handed to replay runs of the WebhookFanoutWorkflow, one run per event, so the endpoint's limits,
 * retry policy and auto-disable apply; an event whose payload retention dropped is skipped and
 * counted; at most BULK_REPLAY_LIMIT.max deliveries are reopened a step and REPLAY_START_CONCURRENCY
 * runs started at once (the bulk replay's caps).
 *
 * Once only: the replay's row is keyed by the resource's uid, its deliveries are a snapshot taken
 * when it began, and a run's id is `<eventId>:replay:<uid>`, which Temporal starts at most once
 * (REJECT_DUPLICATE), so a step repeated after a crash, by a new leader or for a re-applied
 * manifest starts nothing twice.
 */

/** Starts one replay run under the id given; a start of an id started before rejects with WorkflowExecutionAlreadyStartedError. */
export type StartReplayRun = (req: { eventId: string; deliveryIds: string[]; workflowId: string }) => Promise<unknown>;

/** The bulk replay's caps (api/route-schemas.ts BULK_REPLAY_LIMIT.max, replay-service.ts startConcurrency). */
export const REPLAY_STEP_DELIVERIES = 1000;
export const REPLAY_START_CONCURRENCY = 8;

/** A replay's endpoint: its row, and why its source does not allow it (null: allowed). */
export type ReplayTarget = Pick<Endpoint, 'id' | 'deniedReason'>;

export interface ReplayRequest extends ReplayIdentity {
  /** the endpoint named, looked up in the replay's own namespace; undefined: not found */
  endpoint: ReplayTarget | undefined;
  criteria: Omit<ReplayCriteria, 'endpointId'>;
  dryRun: boolean;
  /** what to say when the endpoint is not found */
  endpointRef: string;
}

export interface ReplayState {
  record: ReplayRecord;
  /** while Running: where its deliveries are */
  progress?: ReplayProgress;
  /** true when this step began the replay (for an Event) */
  began: boolean;
  /** true when this step finished it */
  finished: boolean;
}

const isAlreadyStarted = (err: unknown): boolean => err instanceof Error && err.name === 'WorkflowExecutionAlreadyStartedError';

/** A WebhookReplay with action Skip: the delivery it names. */
export interface SkipRequest extends ReplayIdentity {
  deliveryId: string;
}

/** The record of a Skip as it ended: Complete (Skipped, AlreadySkipped) or Failed (DeliveryNotFound, NotSkippable). */
function skipEnd(req: SkipRequest, s: SkipOutcome): Parameters<ReplayRuns['recordFinished']>[1] {
  const base = { dryRun: false, matched: s.outcome === 'not_found' ? 0 : 1 };
  const where = (d: { name: string; eventId: string }) => `of endpoint ${d.name} (event ${d.eventId})`;
  switch (s.outcome) {
    case 'skipped': {
      const key = s.key === undefined ? '' : s.key === null ? ', the no-key sequence' : `, key ${JSON.stringify(s.key)}`;
      return {
        ...base,
        endpointId: s.delivery.endpointId,
        skipped: 1,
        phase: 'Complete',
        reason: 'Skipped',
        message:
          `delivery ${req.deliveryId} ${where(s.delivery)}${key} skipped: it stays FAILED and no longer holds its key; ` +
          (s.next === null ? 'the next delivery of its key, if any, starts' : `delivery ${s.next}, next of its key, starts`),
      };
    }
    case 'already_skipped':
      return {
        ...base,
        endpointId: s.delivery.endpointId,
        skipped: 1,
        phase: 'Complete',
        reason: 'AlreadySkipped',
        message: `delivery ${req.deliveryId} ${where(s.delivery)} no longer held its key (skipped before, or FAILED under onFailure Skip): nothing to do`,
      };
    case 'not_skippable':
      return {
        ...base,
        endpointId: s.delivery.endpointId,
        phase: 'Failed',
        reason: 'NotSkippable',
        message: `delivery ${req.deliveryId} ${where(s.delivery)} can not be skipped: ${s.why}`,
      };
    case 'not_found':
      return {
        ...base,
        phase: 'Failed',
        reason: 'DeliveryNotFound',
        message: `deliveryId ${req.deliveryId}: no delivery to an endpoint of namespace ${req.namespace} (a WebhookReplay skips a delivery of its own namespace)`,
      };
  }
}

export function createReplayRunner(deps: {
  runs: ReplayRuns;
  startRun: StartReplayRun;
  /** a WebhookReplay with action Skip; without it (a runner of replays alone) it ends DeliveryNotFound */
  skip?: SkipInNamespace;
  logger: Logger;
}) {
  const { runs, logger } = deps;

  async function start(uid: string, claims: { eventId: string; deliveryIds: string[]; workflowId: string }[]): Promise<void> {
    const queue = [...claims];
    let failure: unknown;
    const worker = async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        try {
          await deps.startRun(c);
        } catch (err) {
          if (!isAlreadyStarted(err)) {
            // the claim stays reopened: the next step starts it under the same id
            failure ??= err;
            continue;
          }
        }
        await runs.markStarted(uid, c.workflowId);
      }
    };
    await Promise.all(Array.from({ length: Math.min(REPLAY_START_CONCURRENCY, queue.length) }, worker));
    if (failure !== undefined) throw failure;
  }

  /** A replay of this name and spec that ran before (a re-created manifest): it stays what it was, nothing is done again. */
  async function sameAsEarlier(req: ReplayIdentity & { dryRun: boolean }): Promise<ReplayRecord | undefined> {
    const earlier = await runs.sameAsEarlier(req);
    if (!earlier) return undefined;
    return runs.recordFinished(req, {
      phase: earlier.phase === 'Failed' ? 'Failed' : 'Complete',
      reason: earlier.phase === 'Failed' ? earlier.reason : 'AlreadyReplayed',
      message: `a WebhookReplay of this name and spec ran before (uid ${earlier.uid}); a replay runs once: give a new replay another name`,
      dryRun: earlier.dryRun,
      endpointId: earlier.endpointId,
      matched: earlier.matched,
      skipped: earlier.skipped,
      started: earlier.started,
      succeeded: earlier.succeeded,
      failed: earlier.failed,
    });
  }

  return {
    /**
     * A WebhookReplay with action Skip, in one step: the skip, then its record. Done once per uid;
     * a step repeated after a crash between the two finds the delivery skipped and ends
     * AlreadySkipped, which leaves the key as the first step did.
     */
    async skip(req: SkipRequest): Promise<ReplayState> {
      const record = await runs.get(req.uid);
      if (record) return { record, began: false, finished: false };
      const earlier = await sameAsEarlier({ ...req, dryRun: false });
      if (earlier) return { record: earlier, began: false, finished: true };
      const outcome: SkipOutcome = deps.skip
        ? await deps.skip(req.namespace, req.deliveryId, `WebhookReplay ${req.namespace}/${req.name}`)
        : { outcome: 'not_found' };
      const end = skipEnd(req, outcome);
      logger.info({ replay: `${req.namespace}/${req.name}`, uid: req.uid, deliveryId: req.deliveryId, reason: end.reason }, 'skip done');
      return { record: await runs.recordFinished(req, end), began: false, finished: true };
    },

    async step(req: ReplayRequest): Promise<ReplayState> {
      let record = await runs.get(req.uid);
      let began = false;
      if (!record) {
        const earlier = await sameAsEarlier(req);
        if (earlier) return { record: earlier, began: false, finished: true };
        if (req.endpoint === undefined) {
          record = await runs.recordFinished(req, {
            phase: 'Failed',
            reason: 'EndpointNotFound',
            message: `${req.endpointRef}: no WebhookEndpoint of that name in namespace ${req.namespace} (a replay names an endpoint of its own namespace)`,
            dryRun: req.dryRun,
          });
          return { record, began: false, finished: true };
        }
        if (req.endpoint.deniedReason !== null) {
          // what the admin API's replays answer with 409 endpoint_not_allowed: nothing would be sent
          record = await runs.recordFinished(req, {
            phase: 'Failed',
            reason: req.endpoint.deniedReason,
            message: `${req.endpointRef}: ${DENIED_MESSAGE[req.endpoint.deniedReason]}; nothing is sent to it and replays to it are refused until its source allows it (docs/tenancy.md)`,
            dryRun: req.dryRun,
          });
          return { record, began: false, finished: true };
        }
        record = await runs.begin(req, { ...req.criteria, endpointId: req.endpoint.id }, req.dryRun);
        began = true;
        logger.info({ replay: `${req.namespace}/${req.name}`, uid: req.uid, matched: record.matched, dryRun: req.dryRun }, 'replay began');
      }
      if (record.phase !== 'Running') return { record, began, finished: began };

      await start(req.uid, await runs.unconfirmed(req.uid));
      const claims = await runs.claim(req.uid, req.criteria.statuses, REPLAY_STEP_DELIVERIES);
      try {
        await start(req.uid, claims);
      } catch (err) {
        logger.warn({ replay: `${req.namespace}/${req.name}`, err: describeError(err) }, 'replay runs could not all be started; retrying');
        throw err;
      }
      const progress = await runs.progress(req.uid);
      if (progress.waiting === 0 && progress.pending === 0) {
        record = await runs.finish(req.uid, progress);
        logger.info(
          { replay: `${req.namespace}/${req.name}`, uid: req.uid, succeeded: record.succeeded, failed: record.failed },
          'replay complete',
        );
        return { record, progress, began, finished: true };
      }
      return { record, progress, began, finished: false };
    },
  };
}

export type ReplayRunner = ReturnType<typeof createReplayRunner>;
