import { watch, type FSWatcher } from 'node:fs';
import type { Repositories } from '../db/repositories.js';
import type { Logger } from '../observability/logger.js';
import { readManifests } from './read-manifests.js';
import { syncManifests, type SyncOptions, type SyncReport } from './sync-manifests.js';
import { createReplayDriver, type ReplayDriverDeps } from './drive-replays.js';

/** Loads a folder of manifests into Postgres now, and again whenever a file in it changes. */
export async function watchManifests(deps: {
  dir: string;
  repos: Repositories;
  logger: Logger;
  options: SyncOptions;
  debounceMs?: number;
  onSync?: (r: SyncReport) => void;
  /** WebhookReplay manifests are applied (once each) only when given: their runs start on Temporal */
  replays?: Omit<ReplayDriverDeps, 'logger'>;
}): Promise<{ initial: SyncReport; close(): Promise<void> }> {
  const driver = deps.replays ? createReplayDriver({ ...deps.replays, logger: deps.logger }) : undefined;
  const sync = async (): Promise<SyncReport> => {
    const set = await readManifests(deps.dir);
    const report = await syncManifests(deps.repos, set, deps.logger, deps.options);
    // after the endpoints: a replay names one of the same folder
    driver?.apply(set.replays);
    deps.onSync?.(report);
    return report;
  };
  const initial = await sync();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(deps.dir, { recursive: true }, () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        running = running
          .then(sync)
          .then((r) =>
            deps.logger.info(
              {
                endpoints: r.endpoints,
                credentials: r.credentials,
                removed: r.removed,
                rejected: r.errors.length,
                notAllowed: r.denied.length,
              },
              'manifests reloaded',
            ),
          )
          .catch((err: unknown) => deps.logger.warn({ err: String(err) }, 'manifest reload failed'));
      }, deps.debounceMs ?? 300);
    });
  } catch (err) {
    deps.logger.warn({ err: String(err) }, 'cannot watch the manifest folder; changes need a restart');
  }
  return {
    initial,
    async close() {
      clearTimeout(timer);
      watcher?.close();
      await running;
      await driver?.stop();
    },
  };
}
