import { isDatabaseError } from '../db/db-errors.js';
import type { Db } from '../db/knex.js';
import { createRetentionQueries, PURGE_START, type PurgeKind, type PurgeScope, type SourceRetentionRow } from '../db/retention-queries.js';
import { describeError } from '../domain/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { formatDuration } from '../config/duration.js';
import { DEFAULT_RETENTION_SCHEDULE, DEFAULT_SETTLED_GRACE_SECONDS, type RetentionSettings } from '../config/settings.js';

export const RETENTION_OFF: RetentionSettings = {
  maxAgeSeconds: null,
  payloadMaxAgeSeconds: null,
  ...DEFAULT_RETENTION_SCHEDULE,
  settledGraceSeconds: DEFAULT_SETTLED_GRACE_SECONDS,
};

/**
 * What a person who set an age shorter than the grace needs to know: the age alone does not say
 * when an event goes (null when every age is at least the grace).
 */
export function graceWarning(
  settings: Pick<RetentionSettings, 'maxAgeSeconds' | 'payloadMaxAgeSeconds' | 'settledGraceSeconds'>,
): string | null {
  const grace = settings.settledGraceSeconds;
  const short = (
    [
      ['RETENTION_MAX_AGE', settings.maxAgeSeconds],
      ['RETENTION_PAYLOAD_MAX_AGE', settings.payloadMaxAgeSeconds],
    ] as const
  ).filter(([, age]) => age !== null && age < grace);
  if (short.length === 0) return null;
  return (
    `${short.map(([name, age]) => `${name} (${formatDuration(age ?? 0)})`).join(' and ')} shorter than RETENTION_SETTLED_GRACE ` +
    `(${formatDuration(grace)}): an event is dropped or deleted no sooner than ${formatDuration(grace)} after its last change ` +
    '(its receipt, a delivery, a replay); set RETENTION_SETTLED_GRACE lower to see short ages at work'
  );
}

/** Postgres's query_canceled, what statement_timeout raises. */
const STATEMENT_TIMEOUT = '57014';

/** One pass of the job: a kind of work on a set of sources at one age. */
export interface RetentionPolicy {
  kind: PurgeKind;
  scope: PurgeScope;
  ageSeconds: number;
}

/**
 * The passes of a run, deletes first (no payload is dropped from an event about to go): the global
 * age for every source without one of its own, then each source's own age (0 = forever: no pass).
 */
export function retentionPlan(
  settings: Pick<RetentionSettings, 'maxAgeSeconds' | 'payloadMaxAgeSeconds'>,
  overrides: readonly SourceRetentionRow[],
): RetentionPolicy[] {
  const plan: RetentionPolicy[] = [];
  const kinds = [
    { kind: 'delete', global: settings.maxAgeSeconds, own: (o: SourceRetentionRow) => o.maxAgeSeconds },
    { kind: 'payload', global: settings.payloadMaxAgeSeconds, own: (o: SourceRetentionRow) => o.payloadMaxAgeSeconds },
  ] as const;
  for (const { kind, global, own } of kinds) {
    const overridden = overrides.filter((o) => own(o) !== null);
    if (global !== null) plan.push({ kind, scope: { exceptSources: overridden.map((o) => o.source) }, ageSeconds: global });
    for (const o of overridden) {
      const age = own(o);
      if (age !== null && age > 0) plan.push({ kind, scope: { source: o.source }, ageSeconds: age });
    }
  }
  return plan;
}

export interface RetentionRun {
  /** false: another replica holds the lock; nothing was done */
  ran: boolean;
  deleted: { events: number; deliveries: number; attempts: number };
  payloadsDropped: number;
  /** (source, client address) pairs proven longer ago than INGEST_PROVEN_ADDRESS_DAYS, forgotten */
  provenAddresses: number;
  batches: number;
  durationMs: number;
}

/**
 * Deletes what is older than the configured ages, in bounded batches with a rest between them,
 * from one replica at a time (a Postgres advisory lock, held by the connection that does the
 * work). Never an event still to be delivered (see SETTLED in db/retention-queries.ts). Runs every
 * intervalMs like the sweeper; stop() ends the run after its current batch.
 */
export function createRetentionJob(deps: {
  db: Db;
  metrics: Metrics;
  logger: Logger;
  settings: RetentionSettings;
  /** INGEST_PROVEN_ADDRESS_DAYS in seconds: older proven client addresses are deleted; absent: none is */
  provenAddressMaxAgeSeconds?: number;
}) {
  const q = createRetentionQueries(deps.db);
  const { settings, metrics } = deps;
  const logger = deps.logger.child({ component: 'retention' });
  const grace = settings.settledGraceSeconds;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopping = false;
  let wake: (() => void) | undefined;

  const rest = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    }).finally(() => (wake = undefined));

  async function work(conn: unknown, run: RetentionRun): Promise<void> {
    const plan = retentionPlan(settings, await q.sourceOverrides(conn));
    // a batch whose events carry many deliveries and attempts can outlast the statement timeout:
    // it is halved for the rest of the run instead of failing the run on the same batch each time
    let limit = settings.batchSize;
    for (const policy of plan) {
      let after = PURGE_START;
      while (!stopping) {
        const { ids, last } = await q.scan(conn, { ...policy, after, limit });
        if (!last) break;
        run.batches++;
        if (policy.kind === 'delete') {
          let n;
          try {
            n = await q.purge(conn, ids, grace);
          } catch (err) {
            if (!(isDatabaseError(err) && err.sqlState === STATEMENT_TIMEOUT && limit > 1)) throw err;
            limit = Math.max(1, Math.floor(limit / 2));
            logger.warn({ batchSize: limit }, 'retention batch outlasted the statement timeout; halving the batch for this run');
            continue;
          }
          after = last;
          run.deleted.events += n.events;
          run.deleted.deliveries += n.deliveries;
          run.deleted.attempts += n.attempts;
          metrics.retentionDeletedRows.inc({ table: 'webhook_event' }, n.events);
          metrics.retentionDeletedRows.inc({ table: 'webhook_delivery' }, n.deliveries);
          metrics.retentionDeletedRows.inc({ table: 'webhook_delivery_attempt' }, n.attempts);
        } else {
          const n = await q.dropPayloads(conn, ids, grace);
          after = last;
          run.payloadsDropped += n;
          metrics.retentionPayloadsDropped.inc(n);
        }
        if (ids.length < limit) break;
        if (settings.batchPauseMs > 0 && !stopping) await rest(settings.batchPauseMs);
      }
    }
    // the proven client addresses past their window (ingest/proven-addresses.ts): nothing to wait for, only their age
    const provenAge = deps.provenAddressMaxAgeSeconds;
    while (provenAge !== undefined && !stopping) {
      const n = await q.purgeProvenAddresses(conn, provenAge, settings.batchSize);
      run.provenAddresses += n;
      metrics.retentionDeletedRows.inc({ table: 'webhook_proven_address' }, n);
      if (n < settings.batchSize) break;
      if (settings.batchPauseMs > 0 && !stopping) await rest(settings.batchPauseMs);
    }
    const oldest = await q.oldest(conn);
    metrics.retentionOldestRowAge.set({ table: 'webhook_event' }, oldest.event ?? 0);
    metrics.retentionOldestRowAge.set({ table: 'webhook_delivery' }, oldest.delivery ?? 0);
    metrics.retentionOldestPayloadAge.set(oldest.payload ?? 0);
  }

  /** One run, if no other replica is running one. */
  async function runOnce(): Promise<RetentionRun> {
    const started = performance.now();
    const run: RetentionRun = {
      ran: false,
      deleted: { events: 0, deliveries: 0, attempts: 0 },
      payloadsDropped: 0,
      provenAddresses: 0,
      batches: 0,
      durationMs: 0,
    };
    const conn: unknown = await deps.db.client.acquireConnection();
    let locked = false;
    try {
      locked = await q.tryLock(conn);
      if (!locked) {
        metrics.retentionRuns.inc({ result: 'skipped' });
        logger.debug('retention run skipped: another replica holds the lock');
        return run;
      }
      run.ran = true;
      await work(conn, run);
      run.durationMs = performance.now() - started;
      metrics.retentionRuns.inc({ result: 'completed' });
      metrics.retentionLastRunDuration.set(run.durationMs / 1000);
      metrics.retentionLastRunTimestamp.set(Date.now() / 1000);
      logger.info(
        {
          ...run.deleted,
          payloadsDropped: run.payloadsDropped,
          provenAddresses: run.provenAddresses,
          batches: run.batches,
          durationMs: Math.round(run.durationMs),
          interrupted: stopping,
        },
        'retention run',
      );
      return run;
    } catch (err) {
      run.durationMs = performance.now() - started;
      metrics.retentionRuns.inc({ result: 'failed' });
      logger.warn(
        {
          ...run.deleted,
          payloadsDropped: run.payloadsDropped,
          batches: run.batches,
          durationMs: Math.round(run.durationMs),
          err: describeError(err),
        },
        'retention run failed; the next one goes on from there',
      );
      throw err;
    } finally {
      if (locked) await q.unlock(conn).catch(() => undefined);
      await deps.db.client.releaseConnection(conn);
    }
  }

  const tick = (): void => {
    if (running || stopping) return;
    running = runOnce()
      .catch(() => undefined)
      .finally(() => {
        running = undefined;
      });
  };

  return {
    runOnce,
    start(): void {
      if (timer) return;
      if (settings.maxAgeSeconds !== null || settings.payloadMaxAgeSeconds !== null) {
        const age = (s: number | null) => (s === null ? 'forever' : formatDuration(s));
        logger.info(
          {
            maxAge: age(settings.maxAgeSeconds),
            payloadMaxAge: age(settings.payloadMaxAgeSeconds),
            settledGrace: formatDuration(grace),
            intervalSeconds: settings.intervalMs / 1000,
            batchSize: settings.batchSize,
          },
          `retention on: events deleted after ${age(settings.maxAgeSeconds)}, payloads dropped after ${age(settings.payloadMaxAgeSeconds)}, ` +
            `none within ${formatDuration(grace)} of its last change (RETENTION_SETTLED_GRACE)`,
        );
        const warning = graceWarning(settings);
        if (warning) logger.warn(warning);
      }
      stopping = false;
      timer = setInterval(tick, settings.intervalMs);
      timer.unref();
      tick();
    },
    /** Ends a run in progress after its current batch (bounded by the statement timeout). */
    async stop(): Promise<void> {
      stopping = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      wake?.();
      await running;
    },
  };
}
