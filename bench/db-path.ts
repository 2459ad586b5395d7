import { CONTENT_VARIANTS, addedOverPlain, measureDbPath, type DbPathVariant } from './db-path-rounds.js';

// The worker's database path alone (bench/db-path-rounds.ts): rounds alternate the first attempts
// as the workflow runs them (local activities: they take the rows prepare read,
// activities/attempt-handoff.ts) with first attempts that read their rows themselves (as a retry
// does). With DB_PATH_CONTENT=1 they alternate instead plain endpoints with endpoints that have
// the e2e bench's filter, its negation (which refuses every event: no delivery, CPU per event)
// and its transform (issue 33): what each adds to this path, Temporal and HTTP left out.
//
//   npx tsx bench/db-path.ts [events=2000] [endpoints=1] [concurrency=10] [rounds=4]

const [events = 2000, endpoints = 1, concurrency = 10, rounds = 4] = process.argv.slice(2).map(Number);
const content = process.env.DB_PATH_CONTENT === '1';
const variants: readonly DbPathVariant[] = content
  ? CONTENT_VARIANTS
  : [
      { label: 'first attempts take the rows prepare read', tag: 'local', firstLocal: true },
      { label: 'first attempts read their rows', tag: 'read', firstLocal: false },
    ];
const measured = await measureDbPath({
  events,
  endpoints,
  concurrency,
  rounds,
  variants,
  onRound: (r) =>
    console.log(
      `round ${r.round}, ${r.label}: ${events} events x ${endpoints} endpoints, ${concurrency} at a time: ${r.perSecond.toFixed(0)} deliveries/s; ` +
        `CPU ms per delivery: node ${r.nodeMs.toFixed(3)}, postgres ${r.postgresMs.toFixed(3)}; other processes ${r.foreignS.toFixed(1)} s`,
    ),
});
if (content) {
  for (const tag of ['filter', 'transform']) {
    const { added, stderr } = addedOverPlain(measured, tag);
    console.log(`${tag} adds ${added.toFixed(3)} ms of node + Postgres CPU per delivery over plain (standard error ${stderr.toFixed(3)})`);
  }
}
