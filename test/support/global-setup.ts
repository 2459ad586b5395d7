import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { startTemporalDevServer } from '../../src/dev/temporal-dev-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** admin URL of the shared embedded Postgres; tests create their own databases on it */
    pgAdminUrl: string;
    /** host:port of the shared Temporal dev server (in memory) */
    temporalAddress: string;
  }
}

/** One real Postgres and one real Temporal dev server for the whole run: both start in seconds. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [pg, temporal] = await Promise.all([startEmbeddedPostgres(), startTemporalDevServer()]);
  project.provide('pgAdminUrl', pg.url);
  project.provide('temporalAddress', temporal.address);
  return async () => {
    await Promise.allSettled([temporal.stop(), pg.stop()]);
  };
}
