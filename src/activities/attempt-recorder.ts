import type { AttemptResult, DeliveryRepository, Settled } from '../db/deliveries.js';
import { describeError, isAppError } from '../domain/errors.js';
import type { ActivityLogger } from './deps.js';

/** The most attempts one statement settles. */
export const MAX_RECORD_BATCH = 50;

/** Statements of attempts in flight at once; the attempts that end meanwhile wait and go together. */
export const RECORDS_IN_FLIGHT = 2;

/** Records one attempt's outcome (DeliveryRepository.recordAttempt's contract). */
export type RecordAttempt = (id: string, result: AttemptResult) => Promise<Settled | null>;

interface Waiting {
  id: string;
  result: AttemptResult;
  resolve: (settled: Settled | null) => void;
  reject: (err: unknown) => void;
}

/**
 * Records attempts with natural batching: while `maxInFlight` statements are out, the attempts
 * that end queue and are settled together by the next one (recordAttempts). Idle, an attempt goes
 * at once (one event-loop turn later); under load, and whenever the deliveries of one event end
 * together, one statement, one round trip and one commit settle many. Each caller still gets its
 * own row's result.
 *
 * A statement fails as a whole: an outage (a transient error) fails each attempt of it, and each
 * caller retries as before; any other error is not for all of them to share, so each attempt of a
 * failed batch is tried again alone and only its own error reaches its caller.
 */
export function createAttemptRecorder(deps: {
  deliveries: Pick<DeliveryRepository, 'recordAttempts'>;
  maxInFlight?: number;
  maxBatch?: number;
}): RecordAttempt {
  const maxInFlight = Math.max(1, deps.maxInFlight ?? RECORDS_IN_FLIGHT);
  const maxBatch = Math.max(1, deps.maxBatch ?? MAX_RECORD_BATCH);
  let pending: Waiting[] = [];
  let scheduled = false;
  let inFlight = 0;

  async function alone(w: Waiting): Promise<void> {
    try {
      const [settled = null] = await deps.deliveries.recordAttempts([{ id: w.id, result: w.result }]);
      w.resolve(settled);
    } catch (err) {
      w.reject(err);
    }
  }

  async function send(batch: Waiting[]): Promise<void> {
    try {
      const settled = await deps.deliveries.recordAttempts(batch.map((w) => ({ id: w.id, result: w.result })));
      batch.forEach((w, i) => w.resolve(settled[i] ?? null));
    } catch (err) {
      if (batch.length === 1 || (isAppError(err) && err.kind === 'transient')) {
        for (const w of batch) w.reject(err);
        return;
      }
      await Promise.all(batch.map(alone));
    }
  }

  /** Up to maxBatch waiting attempts of distinct deliveries (one UPDATE sets a row once), oldest first. */
  function take(): Waiting[] {
    const batch: Waiting[] = [];
    const ids = new Set<string>();
    const rest: Waiting[] = [];
    for (const w of pending) {
      if (batch.length < maxBatch && !ids.has(w.id)) {
        ids.add(w.id);
        batch.push(w);
      } else rest.push(w);
    }
    pending = rest;
    return batch;
  }

  function run(): void {
    scheduled = false;
    while (pending.length > 0 && inFlight < maxInFlight) {
      inFlight += 1;
      void send(take()).finally(() => {
        inFlight -= 1;
        // a slot is free: whatever queued meanwhile leaves now, together
        if (pending.length > 0 && !scheduled) run();
      });
    }
  }

  return (id, result) =>
    new Promise<Settled | null>((resolve, reject) => {
      pending.push({ id, result, resolve, reject });
      if (!scheduled && inFlight < maxInFlight) {
        scheduled = true;
        setImmediate(run);
      }
    });
}

/** How long a settled outcome (above all a 200) is retried for recording before giving up. */
export const RECORD_RETRY_FOR_MS = 20_000;

/** Records an attempt's outcome through an outage; `log` names the attempt in what is logged. */
export type RecordAttemptPatiently = (id: string, result: AttemptResult, log: object) => Promise<Settled | null>;

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Records an attempt's outcome. Postgres may be down right after the endpoint answered: retry
 * in-process with backoff so a 200 is not re-sent by the next attempt, up to `retryForMs` (the
 * deliver activity's timeout leaves a 30 s margin). null when another run settled the row first;
 * then that run's status is what counts. Throws the last database error when time runs out, and at
 * once any error that is not an outage (it would fail the same way again).
 */
export function createPatientRecorder(deps: {
  recordAttempt: RecordAttempt;
  logger: ActivityLogger;
  retryForMs?: number;
  sleep?: (ms: number) => Promise<void>;
}): RecordAttemptPatiently {
  const { recordAttempt, logger, retryForMs = RECORD_RETRY_FOR_MS, sleep = realSleep } = deps;
  return async (id, r, log) => {
    const deadline = Date.now() + retryForMs;
    for (let wait = 250; ; wait = Math.min(wait * 2, 4_000)) {
      try {
        return await recordAttempt(id, r);
      } catch (err) {
        const outage = isAppError(err) && err.kind === 'transient';
        if (!outage || Date.now() + wait > deadline) {
          logger.warn(
            { ...log, outcome: r.status, err: describeError(err) },
            r.status === 'SUCCESS'
              ? 'delivery succeeded but could not be recorded; the next attempt re-sends it'
              : 'delivery attempt could not be recorded; the next attempt re-sends it',
          );
          throw err;
        }
        logger.info({ ...log, err: describeError(err) }, 'recording the delivery attempt failed; retrying');
        await sleep(wait);
      }
    }
  };
}
