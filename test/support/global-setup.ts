import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { startTemporalDevServer } from '../../src/dev/temporal-dev-server.js';
import { startKubeBroker } from './kube-broker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** admin URL of the shared embedded Postgres; tests create their own databases on it */
    pgAdminUrl: string;
    /** host:port of the shared Temporal dev server (in memory) */
    temporalAddress: string;
    /** where test files ask for the shared Kubernetes control plane, started on first request (test/support/kube-shared.ts) */
    kubeBrokerUrl: string;
  }
}

/** What a dependency's start rejected with, in words: a reason, never "undefined". */
function reasonOf(err: unknown): string {
  if (err instanceof Error) return err.cause instanceof Error ? `${err.message}\n  cause: ${err.cause.message}` : err.message;
  return err === undefined ? 'its start failed without giving a reason' : `its start failed with ${JSON.stringify(err)}`;
}

/**
 * One real Postgres and one real Temporal dev server for the whole run: both start in seconds.
 * When one can not start, the run stops with an error naming it and why (its exit, its last
 * output), rather than vitest's "No test files found" and an error without a message.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const starts = [
    ['Postgres (embedded-postgres)', startEmbeddedPostgres()],
    ['Temporal dev server', startTemporalDevServer()],
    ['Kubernetes broker', startKubeBroker()],
  ] as const;
  const settled = await Promise.allSettled(starts.map(([, start]) => start));
  const failures = settled.flatMap((r, i) =>
    r.status === 'rejected' ? [`${starts[i]?.[0] ?? '?'} failed to start: ${reasonOf(r.reason)}`] : [],
  );
  if (failures.length > 0) {
    // one failed to start: stop the others, or a Postgres outlives the run
    await Promise.allSettled(settled.map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
    throw new Error(`the tests' global setup could not start its dependencies:\n${failures.join('\n')}`);
  }
  const [pg, temporal, kube] = await Promise.all([starts[0][1], starts[1][1], starts[2][1]]);
  project.provide('pgAdminUrl', pg.url);
  project.provide('temporalAddress', temporal.address);
  project.provide('kubeBrokerUrl', kube.url);
  return async () => {
    await Promise.allSettled([temporal.stop(), pg.stop(), kube.stop()]);
  };
}
