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

/** One real Postgres and one real Temporal dev server for the whole run: both start in seconds. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const starts = [startEmbeddedPostgres(), startTemporalDevServer(), startKubeBroker()] as const;
  const settled = await Promise.allSettled(starts);
  if (settled.some((r) => r.status === 'rejected')) {
    // one failed to start: stop the others, or a Postgres outlives the run
    await Promise.allSettled(settled.map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
  }
  const [pg, temporal, kube] = await Promise.all(starts);
  project.provide('pgAdminUrl', pg.url);
  project.provide('temporalAddress', temporal.address);
  project.provide('kubeBrokerUrl', kube.url);
  return async () => {
    await Promise.allSettled([temporal.stop(), pg.stop(), kube.stop()]);
  };
}
