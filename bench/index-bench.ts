/**
 * What each index of webhook_event costs the writes that maintain it, beside the reads it serves
 * (issue 36; figures in docs/benchmarks.md, "The indexes of webhook_event").
 *
 *   npm run bench:indexes
 *
 * One embedded Postgres as `npm run bench` runs it (fsync off), two databases: `before`, migrated
 * up to the migration before BENCH_INDEXES_BEFORE (076, the one that merged indexes), and `now`,
 * migrated to the latest.
 * 1. Plans (BENCH_INDEXES_PLAN_EVENTS events, 200 000; 0 skips): both filled alike
 *    (bench/index-plans.ts), then every read of webhook_event an index is there for, as the code
 *    makes it, EXPLAIN ANALYZE'd: the index it used, the rows it read, its time.
 * 2. Prices: tables shaped like webhook_event, one per set of indexes (before's, now's, the two
 *    unique keys alone, before's less one index for each, now's less each index before did not
 *    have), prefilled with BENCH_INDEXES_PREFILL rows (100 000). Per round each table takes
 *    BENCH_INDEXES_ROWS inserts (20 000) as ingest's inserter makes them (a multi-row INSERT ... ON
 *    CONFLICT DO NOTHING RETURNING id of BENCH_INDEXES_BATCH rows, 10), then the worker's two writes
 *    to each row (its workflow id, then its final status, one in 50 FAILED). Measured: the CPU of
 *    every Postgres process (/proc) per row, BENCH_INDEXES_ROUNDS rounds (4) with the tables in
 *    mirrored order after a first pass of a fifth of that not counted, medians. An index's price
 *    is its set's cost less the cost of the set without it. BENCH_INDEXES_VARIANTS=before,now,keys (labels' starts) runs only those tables.
 */
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createDb, type Db } from '../src/db/knex.js';
import { migrateLatest } from '../src/db/migrate.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { cpuSnapshot, cpuUsage, type CpuSnapshot } from './cpu.js';
import { fillEvents, planReads, type ReadPlan } from './index-plans.js';
import { median, round } from './stats.js';

const env = process.env;
function int(name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  return n;
}
const BEFORE = env.BENCH_INDEXES_BEFORE ?? '076';
const PLAN_EVENTS = int('BENCH_INDEXES_PLAN_EVENTS', 200_000, 0);
const PREFILL = int('BENCH_INDEXES_PREFILL', 100_000, 0);
const ROWS = int('BENCH_INDEXES_ROWS', 20_000, 100);
const BATCH = int('BENCH_INDEXES_BATCH', 10, 1);
const ROUNDS = int('BENCH_INDEXES_ROUNDS', 4, 1);
const ONLY = (env.BENCH_INDEXES_VARIANTS ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter((s) => s !== '');

const MIGRATIONS = new URL('../migrations/', import.meta.url);
const log = (line: string): void => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

/** One index as pg_indexes states it, the table's name left out. */
interface IndexDef {
  name: string;
  unique: boolean;
  /** `USING btree (...) [INCLUDE (...)] [WHERE ...]` */
  body: string;
}

interface Variant {
  label: string;
  table: string;
  defs: IndexDef[];
  /** the index this set lacks, against the set `of` */
  without?: { index: IndexDef; of: 'before' | 'now' };
}

interface Sample {
  insertCpuS: number;
  settleCpuS: number;
  insertWallS: number;
  settleWallS: number;
  /** WAL written per row, in bytes: what the load of the machine does not move */
  insertWalB: number;
  settleWalB: number;
}

async function indexesOf(db: Db): Promise<IndexDef[]> {
  const res = await db.raw<{ rows: Array<{ indexname: string; indexdef: string }> }>(
    `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'webhook_event' ORDER BY indexname`,
  );
  return res.rows.map((r) => {
    const m = /^CREATE (UNIQUE )?INDEX \S+ ON \S+ (.*)$/.exec(r.indexdef);
    if (!m?.[2]) throw new Error(`unexpected index definition: ${r.indexdef}`);
    return { name: r.indexname, unique: m[1] !== undefined, body: m[2] };
  });
}

const sameIndex = (a: IndexDef, b: IndexDef): boolean => a.unique === b.unique && a.body === b.body;

function variantsOf(before: IndexDef[], now: IndexDef[]): Variant[] {
  const changed = now.length !== before.length || now.some((d) => !before.some((b) => sameIndex(b, d)));
  const out: Array<Omit<Variant, 'table'>> = [{ label: `before (${before.length} indexes)`, defs: before }];
  if (changed) out.push({ label: `now (${now.length} indexes)`, defs: now });
  out.push({ label: 'keys only (primary key, idempotency)', defs: before.filter((d) => d.unique) });
  for (const d of before.filter((x) => !x.unique))
    out.push({ label: `before - ${d.name}`, defs: before.filter((x) => x !== d), without: { index: d, of: 'before' } });
  if (changed)
    for (const d of now.filter((x) => !x.unique && !before.some((b) => sameIndex(b, x))))
      out.push({ label: `now - ${d.name}`, defs: now.filter((x) => x !== d), without: { index: d, of: 'now' } });
  return out.filter((v) => ONLY.length === 0 || ONLY.some((o) => v.label.startsWith(o))).map((v, i) => ({ ...v, table: `ix_${i}` }));
}

async function migratedUpTo(db: Db, before: string): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'migrations-'));
  try {
    for (const f of await readdir(MIGRATIONS)) if (f.endsWith('.sql') && f < before) await cp(new URL(f, MIGRATIONS), path.join(dir, f));
    await migrateLatest(db, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function createDatabase(adminUrl: string, name: string): Promise<Db> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return createDb({ url: adminUrl.replace(/\/postgres$/, `/${name}`), poolMax: 2, statementTimeoutMs: 0 });
}

/** Settled events of the last month, as the table holds them when new ones come in. */
async function seedTable(db: Db): Promise<void> {
  await db.raw(`CREATE TABLE ix_seed (LIKE webhook_event INCLUDING DEFAULTS)`);
  await db.raw(
    `INSERT INTO ix_seed (source, external_event_id, event_type, payload, content_type, headers, status, workflow_id,
                          published_at, received_at, completed_at, updated_at)
     SELECT 'src-' || (g % 8), 'seed-' || g, 'type-' || (g % 20), convert_to('{"id":"seed-' || g || '","type":"bench"}', 'UTF8'),
            'application/json', '{"host":"127.0.0.1:40000","content-type":"application/json","content-length":"40"}'::jsonb,
            CASE WHEN g % 50 = 0 THEN 'FAILED' ELSE 'COMPLETED' END, 'wf-' || g, t, t, t + interval '2 seconds', t + interval '2 seconds'
       FROM generate_series(1, ?::int) g, LATERAL (SELECT now() - make_interval(secs => (? - g) * 30.0 * 86400 / greatest(?, 1)) AS t) x`,
    [PREFILL, PREFILL, PREFILL],
  );
}

async function createVariant(db: Db, v: Variant): Promise<void> {
  await db.raw(
    `CREATE TABLE ${v.table} (LIKE webhook_event INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
       WITH (autovacuum_enabled = off, toast.autovacuum_enabled = off)`,
  );
  await db.raw(`INSERT INTO ${v.table} SELECT * FROM ix_seed`);
  for (const [i, d] of v.defs.entries()) await db.raw(`CREATE ${d.unique ? 'UNIQUE ' : ''}INDEX ${v.table}_${i} ON ${v.table} ${d.body}`);
  await db.raw(`VACUUM ANALYZE ${v.table}`);
}

const HEADERS = JSON.stringify({ host: '127.0.0.1:40000', 'content-type': 'application/json', 'content-length': '45' });

/** ingest's statement (db/event-inserter.ts), rows of the bench's requests. */
function insertSql(table: string, rows: number): string {
  const values = Array.from({ length: rows }, (_, r) => {
    const p = (k: number) => `$${r * 8 + k}`;
    return `(${p(1)}::uuid, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}::jsonb, ${p(8)}, now())`;
  }).join(', ');
  return `INSERT INTO ${table} (id, source, external_event_id, event_type, payload, content_type, headers, traceparent, published_at)
       VALUES ${values}
       ON CONFLICT (source, external_event_id) WHERE external_event_id IS NOT NULL DO NOTHING
       RETURNING id`;
}

const postgresCpu = (): CpuSnapshot => cpuSnapshot((e) => (e.comm === 'postgres' ? 'postgres' : 'bench'));

async function measure(client: pg.Client, v: Variant, runId: string, rows = ROWS): Promise<Sample> {
  const batches: string[][] = [];
  const sql = insertSql(v.table, BATCH);
  const wal = async (): Promise<bigint> =>
    BigInt(
      (await client.query<{ lsn: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text AS lsn`)).rows[0]?.lsn ?? '0',
    );
  const w0 = await wal();
  const t0 = performance.now();
  const c0 = postgresCpu();
  for (let done = 0; done < rows; done += BATCH) {
    const values: Array<string | Buffer | null> = [];
    for (let r = 0; r < BATCH; r++) {
      const ext = `${runId}-${done + r}`;
      values.push(
        randomUUID(),
        'bench',
        ext,
        'bench',
        Buffer.from(JSON.stringify({ id: ext, type: 'bench' })),
        'application/json',
        HEADERS,
        null,
      );
    }
    const res = await client.query<{ id: string }>(sql, values);
    if (res.rows.length !== BATCH) throw new Error(`${v.label}: ${res.rows.length} of ${BATCH} rows inserted`);
    batches.push(res.rows.map((r) => r.id));
  }
  const c1 = postgresCpu();
  const t1 = performance.now();
  const w1 = await wal();
  // the worker's writes: prepare records the workflow id, finishEvent the final status
  for (const ids of batches) {
    await client.query(
      `UPDATE ${v.table} SET workflow_id = id::text, updated_at = now() WHERE id = ANY($1::uuid[]) AND workflow_id IS NULL`,
      [ids],
    );
    await client.query(
      `UPDATE ${v.table} SET status = CASE WHEN get_byte(uuid_send(id), 15) < 5 THEN 'FAILED' ELSE 'COMPLETED' END,
              completed_at = now(), updated_at = now() WHERE id = ANY($1::uuid[])`,
      [ids],
    );
  }
  const c2 = postgresCpu();
  const t2 = performance.now();
  const w2 = await wal();
  const cpu = (a: CpuSnapshot, b: CpuSnapshot) => cpuUsage(a, b).groups.postgres ?? 0;
  return {
    insertCpuS: cpu(c0, c1),
    settleCpuS: cpu(c1, c2),
    insertWallS: (t1 - t0) / 1000,
    settleWallS: (t2 - t1) / 1000,
    insertWalB: Number(w1 - w0) / rows,
    settleWalB: Number(w2 - w1) / rows,
  };
}

const us = (s: number) => round((s * 1e6) / ROWS, 1);

function printPlans(before: ReadPlan[], now: ReadPlan[]): void {
  console.log(`\nReads of webhook_event, EXPLAIN ANALYZE on ${PLAN_EVENTS} events (before ${BEFORE} | now)`);
  console.log('| read | before: scans of webhook_event | rows read, ms | now: scans | rows read, ms |');
  console.log('|---|---|---|---|---|');
  for (const [i, b] of before.entries()) {
    const n = now[i];
    console.log(
      `| ${b.read} | ${b.scans.join('; ')} | ${b.rowsRead}, ${round(b.ms, 2)} | ${n?.scans.join('; ') ?? '-'} | ${n ? `${n.rowsRead}, ${round(n.ms, 2)}` : '-'} |`,
    );
  }
}

async function main(): Promise<void> {
  log(
    `bench:indexes: sets before ${BEFORE} and now; plans on ${PLAN_EVENTS} events; prices: ${ROUNDS} rounds of ${ROWS} rows, batches of ${BATCH}, prefill ${PREFILL}`,
  );
  const pgServer = await startEmbeddedPostgres();
  const dbs: Db[] = [];
  try {
    const before = await createDatabase(pgServer.url, 'bench_before');
    dbs.push(before);
    const now = await createDatabase(pgServer.url, 'bench_now');
    dbs.push(now);
    await migratedUpTo(before, BEFORE);
    await migrateLatest(now);
    const beforeSet = await indexesOf(before);
    const nowSet = await indexesOf(now);
    for (const [label, set] of [
      ['before', beforeSet],
      ['now', nowSet],
    ] as const)
      log(`${label}: ${set.length} indexes on webhook_event: ${set.map((d) => d.name).join(', ')}`);

    if (PLAN_EVENTS > 0) {
      log(`plans: filling both databases with ${PLAN_EVENTS} events`);
      // one after the other: a VACUUM while the other database's fill is open could not set the visibility map
      await fillEvents(before, PLAN_EVENTS);
      await fillEvents(now, PLAN_EVENTS);
      printPlans(await planReads(before), await planReads(now));
    }

    const variants = variantsOf(beforeSet, nowSet);
    log(`prices: ${variants.length} tables, prefilled with ${PREFILL} rows each`);
    await seedTable(now);
    for (const v of variants) await createVariant(now, v);
    const client = new pg.Client({ connectionString: pgServer.url.replace(/\/postgres$/, '/bench_now') });
    await client.connect();
    const samples = new Map<string, Sample[]>(variants.map((v) => [v.table, []]));
    const machine0 = cpuSnapshot(() => 'bench');
    const wall0 = performance.now();
    try {
      // a first pass not counted: each table's pages and indexes in the cache, the statements' plans made
      for (const v of variants) await measure(client, v, 'warm', Math.max(BATCH, Math.floor(ROWS / 5)));
      for (let r = 0; r < ROUNDS; r++) {
        const order = r % 2 === 0 ? variants : [...variants].reverse();
        for (const v of order) {
          const s = await measure(client, v, `r${r}`);
          samples.get(v.table)?.push(s);
          log(
            `round ${r + 1}/${ROUNDS} ${v.label.padEnd(48)} insert ${us(s.insertCpuS)} µs/row ${round(s.insertWalB, 0)} B WAL  ` +
              `settle ${us(s.settleCpuS)} µs/row ${round(s.settleWalB, 0)} B WAL`,
          );
        }
      }
    } finally {
      await client.end();
    }
    const others = cpuUsage(
      machine0,
      cpuSnapshot(() => 'bench'),
    ).foreignS;
    const wallS = (performance.now() - wall0) / 1000;

    // HOT updates and index sizes, once the backends' statistics are flushed
    await sleep(1500);
    const stats = await now.raw<{ rows: Array<{ relname: string; upd: number; hot: number; index_bytes: number; live: number }> }>(
      `SELECT relname, n_tup_upd AS upd, n_tup_hot_upd AS hot, pg_indexes_size(relid)::float8 AS index_bytes, n_live_tup AS live
         FROM pg_stat_user_tables WHERE relname LIKE 'ix\\_%' AND relname <> 'ix_seed'`,
    );
    const statOf = new Map(stats.rows.map((s) => [s.relname, s]));
    const med = (v: Variant, k: keyof Sample) => median((samples.get(v.table) ?? []).map((s) => s[k]));
    const base = variants[0];
    if (!base) return;
    console.log(
      `\nPostgres CPU per row, medians of ${ROUNDS} rounds of ${ROWS} rows (batches of ${BATCH}, tables prefilled with ${PREFILL}); ` +
        `other processes used ${round(others, 1)} CPU-s in ${round(wallS, 0)} s (${round(others / wallS, 2)} cores)`,
    );
    console.log(
      "| table (indexes) | insert µs/row | vs before | WAL B/row | worker's two writes µs/row | WAL B/row | HOT | index bytes/row |",
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const v of variants) {
      const s = statOf.get(v.table);
      console.log(
        `| ${v.label} | ${us(med(v, 'insertCpuS'))} | ${round(med(v, 'insertCpuS') / med(base, 'insertCpuS'), 3)} | ` +
          `${round(med(v, 'insertWalB'), 0)} | ${us(med(v, 'settleCpuS'))} | ${round(med(v, 'settleWalB'), 0)} | ` +
          `${s && s.upd > 0 ? `${round((100 * s.hot) / s.upd, 0)} %` : '-'} | ` +
          `${s && s.live > 0 ? round(s.index_bytes / s.live, 0) : '-'} |`,
      );
    }
    console.log('\nThe price of each index: its set less the set without it');
    console.log("| index | definition | insert µs/row | share of its set's insert | WAL B/insert | worker's writes µs/row | WAL B/row |");
    console.log('|---|---|---|---|---|---|---|');
    const json: Record<string, number> = {};
    for (const v of variants) {
      if (!v.without) continue;
      const set = variants.find((x) => x.label.startsWith(v.without?.of ?? ''));
      if (!set) continue;
      const insert = med(set, 'insertCpuS') - med(v, 'insertCpuS');
      const settle = med(set, 'settleCpuS') - med(v, 'settleCpuS');
      const insertWal = med(set, 'insertWalB') - med(v, 'insertWalB');
      const settleWal = med(set, 'settleWalB') - med(v, 'settleWalB');
      json[`${v.without.index.name}_insert_us`] = us(insert);
      console.log(
        `| ${v.without.index.name} | ${v.without.index.body.replace(/^USING btree /, '')} | ${us(insert)} | ` +
          `${round((100 * insert) / med(set, 'insertCpuS'), 1)} % | ${round(insertWal, 0)} | ${us(settle)} | ${round(settleWal, 0)} |`,
      );
    }
    const nowV = variants.find((v) => v.label.startsWith('now'));
    const summary = {
      rows: ROWS,
      batch: BATCH,
      rounds: ROUNDS,
      prefill: PREFILL,
      before_insert_us: us(med(base, 'insertCpuS')),
      before_settle_us: us(med(base, 'settleCpuS')),
      ...(nowV
        ? {
            now_insert_us: us(med(nowV, 'insertCpuS')),
            now_settle_us: us(med(nowV, 'settleCpuS')),
            now_vs_before_insert: round(med(nowV, 'insertCpuS') / med(base, 'insertCpuS'), 3),
          }
        : {}),
      others_cores: round(others / wallS, 2),
      ...json,
    };
    console.log(JSON.stringify(summary));
  } finally {
    for (const db of dbs) await db.destroy();
    await pgServer.stop();
  }
}

try {
  await main();
} catch (err) {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
}
