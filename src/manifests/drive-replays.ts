import type { WebhookReplayResource } from '../custom-resources/specs.js';
import { describeError } from '../domain/errors.js';
import { MANIFEST_UID_PREFIX } from '../domain/records.js';
import type { Logger } from '../observability/logger.js';
import type { ReplayRunner, ReplayState, ReplayTarget } from '../temporal/replay-runner.js';

/** How often a running replay's progress is looked at (the operator's poll). */
const STEP_INTERVAL_MS = 2_000;

export interface ReplayDriverDeps {
  runner: ReplayRunner;
  /** the active endpoint row of the WebhookEndpoint `name` in `namespace` */
  endpoint(namespace: string, name: string): Promise<ReplayTarget | undefined>;
  logger: Logger;
}

/**
 * Dev mode's WebhookReplay: each manifest applied once, as the operator applies a resource. Its
 * uid is `manifest:WebhookReplay/<namespace>/<name>`, so a reload of the folder, a restart of dev
 * mode or an edit of the file replays nothing twice (an edited spec is reported, not run: a new
 * replay is a new name). Progress goes to the log.
 */
export function createReplayDriver(deps: ReplayDriverDeps) {
  const driving = new Map<string, Promise<void>>();
  let stopped = false;

  async function drive(r: WebhookReplayResource): Promise<void> {
    const namespace = r.metadata.namespace ?? 'default';
    const where = `WebhookReplay ${namespace}/${r.metadata.name}`;
    const uid = `${MANIFEST_UID_PREFIX}WebhookReplay/${namespace}/${r.metadata.name}`;
    const identity = { uid, generation: 1, namespace, name: r.metadata.name, spec: r.spec };
    const { endpointRef, window, deliveryId } = r.spec;
    // read-manifests.ts refused a spec without what its action needs (REPLAY_RULES)
    const step = async (): Promise<ReplayState> => {
      if (r.spec.action === 'Skip' && deliveryId !== undefined) return deps.runner.skip({ ...identity, deliveryId });
      if (!endpointRef || !window) throw new Error('endpointRef and window are required with action Replay');
      return deps.runner.step({
        ...identity,
        endpoint: await deps.endpoint(namespace, endpointRef.name),
        endpointRef: `endpointRef ${endpointRef.name}`,
        criteria: {
          from: new Date(window.from),
          to: new Date(window.to),
          statuses: r.spec.statuses ?? ['FAILED'],
          eventTypes: r.spec.eventTypes ?? [],
        },
        dryRun: r.spec.dryRun ?? false,
      });
    };
    for (let wait = STEP_INTERVAL_MS; !stopped;) {
      try {
        const state = await step();
        const { record } = state;
        if (record.phase !== 'Running') {
          if (state.finished) {
            const counts = { matched: record.matched, skipped: record.skipped, succeeded: record.succeeded, failed: record.failed };
            if (record.phase === 'Failed') deps.logger.warn({ ...counts, reason: record.reason }, `${where} failed: ${record.message}`);
            else deps.logger.info({ ...counts, reason: record.reason }, `${where} complete${record.message ? `: ${record.message}` : ''}`);
          } else if (JSON.stringify(record.spec) !== JSON.stringify(r.spec)) {
            deps.logger.warn(`${where}: its spec changed after it ran; a replay runs once, so nothing was replayed again (use a new name)`);
          }
          return;
        }
        wait = STEP_INTERVAL_MS;
      } catch (err) {
        deps.logger.warn({ err: describeError(err) }, `${where}: replay step failed; retrying`);
        wait = Math.min(wait * 2, 30_000);
      }
      await new Promise((res) => setTimeout(res, wait).unref());
    }
  }

  return {
    /** Drives every replay of the folder not being driven already. */
    apply(replays: readonly WebhookReplayResource[]): void {
      for (const r of replays) {
        const key = `${r.metadata.namespace ?? 'default'}/${r.metadata.name}`;
        if (driving.has(key) || stopped) continue;
        driving.set(
          key,
          drive(r).finally(() => driving.delete(key)),
        );
      }
    },
    async stop(): Promise<void> {
      stopped = true;
      await Promise.all(driving.values());
    },
  };
}
