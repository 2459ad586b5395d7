import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type PrepareResult } from '../src/activities/index.js';
import { createDb } from '../src/db/knex.js';
import { migrateLatest } from '../src/db/migrate.js';
import { createRepositories } from '../src/db/repositories.js';
import type { Send } from '../src/delivery/types.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createMetrics } from '../src/metrics/metrics.js';
import { cpuSnapshot, cpuUsage } from './cpu.js';
import { BENCH_FILTER, BENCH_TRANSFORM, seedEndpoints, insertEvents, type EndpointContent } from './e2e-fixtures.js';
import type { Infra } from './infra.js';

// The database path of the worker alone: the fanout activities (prepare, one deliver per
// endpoint, finishEvent) run in an activity context against the embedded Postgres, with a sender
// that answers 200 at once (no HTTP, no Temporal). Prints the CPU per delivery of this process
// and of Postgres, which the e2e bench mixes with Temporal's and the sender's. Rounds alternate
// the first attempts as the workflow runs them (local activities: they take the rows prepare read,
// activities/attempt-handoff.ts) with first attempts that read their rows themselves (as a retry does).
// With DB_PATH_CONTENT=1 the rounds alternate instead the plain endpoints with endpoints that have
// the e2e bench's filter, and its transform (issue 33): what each adds to this path, Temporal and
// HTTP left out; and with the filter's negation, which refuses every event (no delivery: CPU per event).
//
//   npx tsx bench/db-path.ts [events=2000] [endpoints=1] [concurrency=10] [rounds=4]

const [events = 2000, endpoints = 1, concurrency = 10, rounds = 4] = process.argv.slice(2).map(Number);

const pg = await startEmbeddedPostgres();
const db = createDb({ url: pg.url, poolMax: 10 });
try {
  await migrateLatest(db);
  const infra = { db } as Infra;
  const repos = createRepositories(db);
  const send: Send = async () => ({ kind: 'success', status: 200, body: 'ok', durationMs: 1, statusClass: '2xx' });
  const activities = createActivities({ repos, send, metrics: createMetrics({ defaultMetrics: false }) });
  const logger = new DefaultLogger('ERROR');
  const env = (workflowId: string, isLocal = false) =>
    new MockActivityEnvironment({ workflowExecution: { workflowId, runId: 'r' }, isLocal }, { logger });

  async function fanout(eventId: string, firstLocal: boolean): Promise<void> {
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
  }

  async function run(ids: string[], firstLocal: boolean): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < ids.length) await fanout(ids[next++] as string, firstLocal);
      }),
    );
  }

  const content = process.env.DB_PATH_CONTENT === '1';
  const variants: Array<{ label: string; tag: string; firstLocal: boolean; content?: EndpointContent }> = content
    ? [
        { label: 'plain', tag: 'plain', firstLocal: true },
        { label: 'filter', tag: 'filter', firstLocal: true, content: { filter: BENCH_FILTER } },
        // no delivery: its figures are per event
        { label: 'filter refusing every event (per event)', tag: 'refused', firstLocal: true, content: { filter: `!(${BENCH_FILTER})` } },
        { label: 'transform', tag: 'transform', firstLocal: true, content: { transform: BENCH_TRANSFORM } },
      ]
    : [
        { label: 'first attempts take the rows prepare read', tag: 'local', firstLocal: true },
        { label: 'first attempts read their rows', tag: 'read', firstLocal: false },
      ];
  for (const v of variants) {
    await seedEndpoints(infra, `warm-${v.tag}`, endpoints, 'http://127.0.0.1:9/', v.content);
    await run(await insertEvents(infra, `warm-${v.tag}`, Math.min(200, events)), true);
  }
  const name = (e: { pid: number; comm: string }) => (e.pid === process.pid ? 'node' : e.comm === 'postgres' ? 'postgres' : 'other');
  for (let r = 0; r < rounds; r++) {
    for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
      // a source per run: the events' external ids repeat from run to run
      const source = `db-path-${r}-${v.tag}`;
      await seedEndpoints(infra, source, endpoints, 'http://127.0.0.1:9/', v.content);
      const ids = await insertEvents(infra, source, events);
      const before = cpuSnapshot(name);
      const started = performance.now();
      await run(ids, v.firstLocal);
      const s = (performance.now() - started) / 1000;
      const used = cpuUsage(before, cpuSnapshot(name));
      const deliveries = v.tag === 'refused' ? events : events * endpoints;
      const per = (g: string) => (((used.groups[g] ?? 0) * 1000) / deliveries).toFixed(3);
      console.log(
        `round ${r + 1}, ${v.label}: ${events} events x ${endpoints} endpoints, ${concurrency} at a time: ${(deliveries / s).toFixed(0)} deliveries/s; ` +
          `CPU ms per delivery: node ${per('node')}, postgres ${per('postgres')}; other processes ${used.foreignS.toFixed(1)} s`,
      );
    }
  }
} finally {
  await db.destroy();
  await pg.stop();
}
