// BENCH_TEMPORAL=postgres: Temporal as production installs run it. The real temporal-server (built
// from go.temporal.io/server by scripts/tools/go-builds.sh) with PostgreSQL persistence and SQL
// visibility, on an embedded Postgres of its own: a second cluster, so that every CPU tick of
// Temporal's database (backends that came and went, WAL writer, checkpointer, autovacuum) is
// told apart from the service's by its process tree (docs/benchmarks.md, "Temporal on Postgres").
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { startTemporalServer, temporalServerPath, type TemporalSqlStore } from '../src/dev/temporal-server.js';

const run = promisify(execFile);

/** Shards of the history service: the server's own development config uses 4 (production: 512 and more). */
const HISTORY_SHARDS = 4;
/** The server's plugin for PostgreSQL 12 and later (lib/pq; postgres12_pgx is the pgx driver). */
const PLUGIN = 'postgres12';
const NAMESPACE_READY_TIMEOUT_MS = 60_000;

export interface TemporalOnPostgres {
  address: string;
  /** the temporal-server process */
  pid: number | undefined;
  /** the postmaster of Temporal's own Postgres cluster: its backends are its children */
  postgresPid: number;
  stop(): Promise<void>;
}

/** temporal-sql-tool, built beside the server. */
function sqlToolPath(): string {
  return path.join(path.dirname(temporalServerPath()), 'temporal-sql-tool');
}

/** Creates one database and its schema at the latest version, from the schema files built into the tool. */
async function setUpDatabase(port: number, database: string, schemaName: string): Promise<void> {
  const common = ['--plugin', PLUGIN, '--ep', '127.0.0.1', '--port', String(port), '--user', 'postgres', '--password', 'postgres'];
  const tool = async (...args: string[]): Promise<void> => {
    await run(sqlToolPath(), [...common, ...args], { timeout: 120_000 }).catch((err: unknown) => {
      const stderr = (err as { stderr?: string }).stderr ?? '';
      throw new Error(`temporal-sql-tool ${args.join(' ')} failed: ${stderr.slice(-2000)}`, { cause: err });
    });
  };
  await tool('--db', database, 'create-database');
  await tool('--db', database, 'setup-schema', '-v', '0.0');
  await tool('--db', database, 'update-schema', '--schema-name', schemaName);
}

/**
 * The `default` namespace, registered and then usable: the history service learns of a new
 * namespace at its registry's next refresh (2 s), so a start is tried until one is accepted.
 */
async function registerDefaultNamespace(address: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    await connection.workflowService.registerNamespace({
      namespace: 'default',
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
    const client = new Client({ connection, namespace: 'default' });
    const deadline = Date.now() + NAMESPACE_READY_TIMEOUT_MS;
    for (;;) {
      try {
        const handle = await client.workflow.start('NamespaceProbe', {
          taskQueue: 'bench-namespace-probe',
          workflowId: `namespace-probe-${randomBytes(4).toString('hex')}`,
        });
        await handle.terminate('the namespace is usable');
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error('the default namespace did not become usable within 60 s', { cause: err });
        await sleep(500);
      }
    }
  } finally {
    await connection.close();
  }
}

/** The postmaster's pid: the first line of postmaster.pid in its data folder. */
async function postmasterPid(dataDir: string): Promise<number> {
  const first = (await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0] ?? '';
  const pid = Number(first);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postmaster pid in ${dataDir}/postmaster.pid`);
  return pid;
}

/** What a production database does on every commit, which the embedded Postgres leaves out by default. */
const DURABLE = { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on' } as const;

/**
 * Starts Temporal's Postgres, its two databases, the server on them and the `default` namespace.
 * `durable`: Temporal's Postgres flushes WAL on every commit (BENCH_TEMPORAL_DURABLE=1).
 */
export async function startTemporalOnPostgres(opts: { durable?: boolean; log?: (line: string) => void } = {}): Promise<TemporalOnPostgres> {
  const stops: Array<() => Promise<void>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.reverse()) await s().catch((err: unknown) => opts.log?.(`stopping Temporal on Postgres: ${String(err)}`));
  };
  try {
    const pg = await startEmbeddedPostgres(opts.durable ? { settings: DURABLE } : {});
    stops.push(() => pg.stop());
    await setUpDatabase(pg.port, 'temporal', 'postgresql/v12/temporal');
    await setUpDatabase(pg.port, 'temporal_visibility', 'postgresql/v12/visibility');
    const store = (databaseName: string, maxConns: number): TemporalSqlStore => ({
      pluginName: PLUGIN,
      databaseName,
      connectAddr: `127.0.0.1:${pg.port}`,
      user: 'postgres',
      password: 'postgres',
      maxConns,
    });
    // the pool sizes of the server's own development-postgres12.yaml
    const server = await startTemporalServer({
      persistence: { numHistoryShards: HISTORY_SHARDS, default: store('temporal', 20), visibility: store('temporal_visibility', 2) },
    });
    stops.push(() => server.stop());
    await registerDefaultNamespace(server.address);
    return { address: server.address, pid: server.pid, postgresPid: await postmasterPid(pg.dataDir), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A number field of /proc/<pid>/<file> in kB ("Pss:  123 kB"), 0 once the process has gone. */
function procKb(pid: number, file: string, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * Memory of a Postgres cluster now, MB: the proportional set size (Pss) of the postmaster and its
 * children summed, which counts the shared buffers once, where a sum of RSS would count them in
 * every backend.
 */
export function postgresPssMb(postmasterPid: number): number {
  let children: number[];
  try {
    children = readFileSync(`/proc/${postmasterPid}/task/${postmasterPid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    children = []; // it has exited
  }
  return [postmasterPid, ...children].reduce((a, pid) => a + procKb(pid, 'smaps_rollup', 'Pss'), 0) / 1024;
}
