// The database path of the worker alone: the fanout activities (prepare, one deliver per
// endpoint, finishEvent) run in an activity context against an embedded Postgres, with a sender
// that answers 200 at once (no HTTP, no Temporal). CPU per delivery of this process and of
// Postgres, which the e2e bench mixes with Temporal's and the sender's. Variants run in mirrored
// rounds (a, b, c then c, b, a), each round on a source of its own, so a drift of the machine
// falls on every variant alike. `npx tsx bench/db-path.ts` prints them; `npm run bench` takes the
// content variants' figures from here (a filter's price is a few hundredths of a millisecond,
// which only this path resolves).
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type PrepareResult } from '../src/activities/index.js';
import { createDb } from '../src/db/knex.js';
import { migrateLatest } from '../src/db/migrate.js';
import { createRepositories } from '../src/db/repositories.js';
import type { Destinations } from '../src/delivery/destination.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createMetrics } from '../src/metrics/metrics.js';
import { cpuSnapshot, cpuUsage } from './cpu.js';
import { BENCH_FILTER, BENCH_TRANSFORM, seedEndpoints, insertEvents, type EndpointContent } from './e2e-fixtures.js';
import type { Infra } from './infra.js';

export interface DbPathVariant {
  label: string;
  tag: string;
  /** first attempts take the rows prepare read (as the workflow runs them), or read them (as a retry does) */
  firstLocal: boolean;
  content?: EndpointContent;
  /** its endpoints get no delivery: its figures are per event */
  perEvent?: boolean;
}

/** plain endpoints beside the e2e bench's filter, its negation (refusing every event) and its transform */
export const CONTENT_VARIANTS: readonly DbPathVariant[] = [
  { label: 'plain', tag: 'plain', firstLocal: true },
  { label: 'filter', tag: 'filter', firstLocal: true, content: { filter: BENCH_FILTER } },
  {
    label: 'filter refusing every event (per event)',
    tag: 'refused',
    firstLocal: true,
    content: { filter: `!(${BENCH_FILTER})` },
    perEvent: true,
  },
  { label: 'transform', tag: 'transform', firstLocal: true, content: { transform: BENCH_TRANSFORM } },
];

export interface DbPathRound {
  round: number;
  tag: string;
  label: string;
  events: number;
  perSecond: number;
  /** CPU ms per delivery (per event for a perEvent variant) */
  nodeMs: number;
  postgresMs: number;
  foreignS: number;
}

export interface DbPathOptions {
  events: number;
  endpoints: number;
  concurrency: number;
  rounds: number;
  variants: readonly DbPathVariant[];
  /** called after each round (the CLI prints it) */
  onRound?: (r: DbPathRound) => void;
}

export async function measureDbPath(o: DbPathOptions): Promise<DbPathRound[]> {
  const pg = await startEmbeddedPostgres();
  const db = createDb({ url: pg.url, poolMax: 10 });
  try {
    await migrateLatest(db);
    const infra = { db } as Infra;
    const repos = createRepositories(db);
    // the database's share alone: a destination that answers at once
    const destinations: Pick<Destinations, 'send'> = {
      send: async () => ({ kind: 'success', status: 200, body: 'ok', durationMs: 1, statusClass: '2xx' }),
    };
    const activities = createActivities({ repos, destinations, metrics: createMetrics({ defaultMetrics: false }) });
    const logger = new DefaultLogger('ERROR');
    const env = (workflowId: string, isLocal = false) =>
      new MockActivityEnvironment({ workflowExecution: { workflowId, runId: 'r' }, isLocal }, { logger });

    const fanout = async (eventId: string, firstLocal: boolean): Promise<void> => {
      const { deliveries }: PrepareResult = await env(eventId).run(activities.prepare, { eventId });
      await Promise.all(
        deliveries.map((d) =>
          env(eventId, firstLocal).run(activities.deliver, {
            deliveryId: d.deliveryId,
            maxAttempts: d.maxAttempts,
            priorAttempts: d.priorAttempts,
          }),
        ),
      );
      await env(eventId).run(activities.finishEvent, { eventId });
    };
    const run = async (ids: string[], firstLocal: boolean): Promise<void> => {
      let next = 0;
      await Promise.all(
        Array.from({ length: o.concurrency }, async () => {
          while (next < ids.length) await fanout(ids[next++] as string, firstLocal);
        }),
      );
    };

    for (const v of o.variants) {
      await seedEndpoints(infra, `warm-${v.tag}`, o.endpoints, 'http://127.0.0.1:9/', v.content);
      await run(await insertEvents(infra, `warm-${v.tag}`, Math.min(200, o.events)), true);
    }
    const name = (e: { pid: number; comm: string }) => (e.pid === process.pid ? 'node' : e.comm === 'postgres' ? 'postgres' : 'other');
    const out: DbPathRound[] = [];
    for (let r = 0; r < o.rounds; r++) {
      for (const v of r % 2 === 0 ? o.variants : [...o.variants].reverse()) {
        // a source per run: the events' external ids repeat from run to run
        const source = `db-path-${r}-${v.tag}`;
        await seedEndpoints(infra, source, o.endpoints, 'http://127.0.0.1:9/', v.content);
        const ids = await insertEvents(infra, source, o.events);
        const before = cpuSnapshot(name);
        const started = performance.now();
        await run(ids, v.firstLocal);
        const s = (performance.now() - started) / 1000;
        const used = cpuUsage(before, cpuSnapshot(name));
        const units = v.perEvent ? o.events : o.events * o.endpoints;
        const round: DbPathRound = {
          round: r + 1,
          tag: v.tag,
          label: v.label,
          events: o.events,
          perSecond: units / s,
          nodeMs: ((used.groups.node ?? 0) * 1000) / units,
          postgresMs: ((used.groups.postgres ?? 0) * 1000) / units,
          foreignS: used.foreignS,
        };
        out.push(round);
        o.onRound?.(round);
      }
    }
    return out;
  } finally {
    await db.destroy();
    await pg.stop();
  }
}

/**
 * What a variant adds to the plain variant's node + Postgres CPU per delivery: the mean of the
 * rounds' differences (each round runs both, back to back), and its standard error.
 */
export function addedOverPlain(rounds: readonly DbPathRound[], tag: string, plainTag = 'plain'): { added: number; stderr: number } {
  const of = (t: string) => new Map(rounds.filter((x) => x.tag === t).map((x) => [x.round, x.nodeMs + x.postgresMs]));
  const plain = of(plainTag);
  const diffs = [...of(tag)].flatMap(([round, ms]) => {
    const p = plain.get(round);
    return p === undefined ? [] : [ms - p];
  });
  const n = diffs.length;
  if (n === 0) return { added: Number.NaN, stderr: Number.NaN };
  const mean = diffs.reduce((a, b) => a + b, 0) / n;
  const sd = n > 1 ? Math.sqrt(diffs.reduce((a, d) => a + (d - mean) ** 2, 0) / (n - 1)) : Number.NaN;
  return { added: mean, stderr: sd / Math.sqrt(n) };
}
