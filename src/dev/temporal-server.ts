import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeLowPort, freePort } from './ports.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where scripts/tools/go-builds.sh puts the server built from go.temporal.io/server. */
export function temporalServerPath(): string {
  const fromEnv = process.env.TEMPORAL_SERVER_PATH;
  if (fromEnv) return fromEnv;
  const built = path.join(REPO_ROOT, '.cache/go-servers/bin/temporal-server');
  if (existsSync(built)) return built;
  throw new Error(
    'temporal-server not built: run `bash scripts/tools/go-builds.sh temporal` (or npm run provision), or set TEMPORAL_SERVER_PATH',
  );
}

export interface TemporalServerTls {
  /** the frontend's certificate and key (PEM files) */
  certFile: string;
  keyFile: string;
  /** CA of the client certificates the frontend accepts; with requireClientAuth, mTLS */
  clientCaFile: string;
  requireClientAuth: boolean;
}

/** One SQL datastore of the server's `persistence.datastores` (its `sql:` settings). */
export interface TemporalSqlStore {
  pluginName: string;
  databaseName: string;
  connectAddr: string;
  user?: string;
  password?: string;
  maxConns: number;
}

/**
 * Where the server keeps its state: by default in-memory SQLite (one connection each); the bench
 * points both stores at Postgres (bench/temporal-postgres.ts) to measure what production runs.
 */
export interface TemporalServerPersistence {
  numHistoryShards: number;
  default: TemporalSqlStore;
  visibility: TemporalSqlStore;
}

const IN_MEMORY_SQLITE: TemporalServerPersistence = {
  numHistoryShards: 1,
  default: { pluginName: 'sqlite', databaseName: 'default', connectAddr: 'localhost', maxConns: 1 },
  visibility: { pluginName: 'sqlite', databaseName: 'visibility', connectAddr: 'localhost', maxConns: 1 },
};

/**
 * Authorization on the frontend with the server's own JWT claim mapper and authorizer (global.
 * authorization, `default` both): a call's `Authorization: Bearer <JWT>` must be signed by a key of
 * the JWKS and carry `permissions` such as `default:write` (namespace:role) or
 * `temporal-system:admin`; as Temporal Cloud takes an API key.
 */
export interface TemporalServerAuthorization {
  /** where the frontend reads the keys that sign tokens (a JWKS over http(s), or file://) */
  jwksUrl: string;
}

export interface TemporalServer {
  /** host:port of the frontend (gRPC) */
  address: string;
  pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * The real Temporal server (not the CLI's dev server, which takes no TLS), as production runs it
 * minus the database: frontend, history and matching in one process on in-memory SQLite (or on
 * the SQL stores in `persistence`), every port free-picked. With `tls`, the frontend serves TLS
 * only, with client authentication when asked (global.tls.frontend of the server's configuration). No namespace exists until one is
 * registered (registerNamespace below).
 */
export async function startTemporalServer(
  opts: {
    tls?: TemporalServerTls;
    authorization?: TemporalServerAuthorization;
    persistence?: TemporalServerPersistence;
    onLog?: (line: string) => void;
  } = {},
): Promise<TemporalServer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'temporal-server-'));
  const [grpc, http, hg, mg] = (await Promise.all(Array.from({ length: 4 }, () => freePort()))) as [number, number, number, number];
  // membership ports end up in a SMALLINT column of the SQL stores (Postgres refuses 32768 and up)
  const [fm, hm, mm] = (await Promise.all(Array.from({ length: 3 }, () => freeLowPort()))) as [number, number, number];
  const persistence = opts.persistence ?? IN_MEMORY_SQLITE;
  const store = (name: string, s: TemporalSqlStore): string =>
    [
      `\n    ${name}:`,
      '      sql:',
      `        pluginName: ${s.pluginName}`,
      `        databaseName: ${s.databaseName}`,
      `        connectAddr: ${JSON.stringify(s.connectAddr)}`,
      '        connectProtocol: tcp',
      ...(s.user === undefined ? [] : [`        user: ${JSON.stringify(s.user)}`]),
      ...(s.password === undefined ? [] : [`        password: ${JSON.stringify(s.password)}`]),
      ...(s.pluginName === 'sqlite' ? ['        connectAttributes: { mode: memory, cache: private }'] : []),
      `        maxConns: ${s.maxConns}`,
      `        maxIdleConns: ${s.maxConns}`,
      '        maxConnLifetime: 1h',
    ].join('\n');
  const tls = opts.tls
    ? `
  tls:
    frontend:
      server:
        certFile: ${opts.tls.certFile}
        keyFile: ${opts.tls.keyFile}
        requireClientAuth: ${opts.tls.requireClientAuth}
        clientCaFiles: [${opts.tls.clientCaFile}]`
    : '';
  const authorization = opts.authorization
    ? `
  authorization:
    authorizer: default
    claimMapper: default
    permissionsClaimName: permissions
    jwtKeyProvider:
      keySourceURIs: ["${opts.authorization.jwksUrl}"]
      refreshInterval: 1m`
    : '';
  const config = `
log: { stdout: true, level: warn }
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${persistence.numHistoryShards}
  datastores:${store('default', persistence.default)}${store('visibility', persistence.visibility)}
global:
  membership: { maxJoinDuration: 30s, broadcastAddress: 127.0.0.1 }${tls}${authorization}
services:
  frontend: { rpc: { grpcPort: ${grpc}, membershipPort: ${fm}, httpPort: ${http}, bindOnLocalHost: true } }
  history: { rpc: { grpcPort: ${hg}, membershipPort: ${hm}, bindOnLocalHost: true } }
  matching: { rpc: { grpcPort: ${mg}, membershipPort: ${mm}, bindOnLocalHost: true } }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active: { enabled: true, initialFailoverVersion: 1, rpcName: frontend, rpcAddress: "127.0.0.1:${grpc}", httpAddress: "127.0.0.1:${http}" }
dcRedirectionPolicy: { policy: noop }
dynamicConfigClient: { filepath: ${path.join(dir, 'dynamic.yaml')}, pollInterval: 10s }
`;
  await writeFile(path.join(dir, 'config.yaml'), config);
  // a namespace registered a moment ago is usable at once instead of after the registry's refresh
  await writeFile(path.join(dir, 'dynamic.yaml'), 'system.enableEagerWorkflowStart:\n  - value: true\n');
  const child: ChildProcess = spawn(
    temporalServerPath(),
    [
      '--config-file',
      path.join(dir, 'config.yaml'),
      '--allow-no-auth',
      'start',
      '--service',
      'frontend',
      '--service',
      'history',
      '--service',
      'matching',
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const log = opts.onLog ?? (() => {});
  const tail: string[] = [];
  const keep = (b: Buffer): void => {
    const text = b.toString();
    tail.push(text);
    if (tail.length > 50) tail.shift();
    log(text);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  // ready when the frontend's port accepts connections
  const deadline = Date.now() + 90_000;
  const { connect } = await import('node:net');
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`temporal-server exited with ${child.exitCode}:\n${tail.join('').slice(-4000)}`);
    }
    const open = await new Promise<boolean>((resolve) => {
      const s = connect(grpc, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (open) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`temporal-server did not listen on ${grpc} within 90 s:\n${tail.join('').slice(-4000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { address: `127.0.0.1:${grpc}`, pid: child.pid, stop };
}
