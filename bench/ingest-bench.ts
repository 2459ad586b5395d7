import { randomBytes } from 'node:crypto';
import bcrypt from 'bcrypt';
import { createRepositories } from '../src/db/repositories.js';
import type { ChildHandle } from './child-handle.js';
import type { BenchConfig } from './config.js';
import { cpuUsage, type CpuSnapshot } from './cpu.js';
import type { Infra } from './infra.js';
import type { LoadOptions, LoadResult } from './protocol.js';
import { median } from './stats.js';

export const BENCH_SOURCE = 'bench';
const USER = 'bench';
const PASSWORD = 'bench-password';
/** The Authorization header of every request to ingest. */
export const AUTHORIZATION = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;

export interface ServerFigures {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** answered 2xx over all measured rounds */
  ok: number;
  failed: number;
  runs: LoadResult[];
  /** CPU seconds by component over all measured rounds */
  cpu: Record<string, number>;
  foreignCpuS: number;
}

export interface IngestFigures {
  ingest: ServerFigures;
  baseline: ServerFigures;
  ratio: number;
  duplicate: LoadResult | undefined;
}

/** An HTTP server under test: where it listens, and its RSS peak to restart after the warm-up. */
export type Server = Pick<ChildHandle, 'port' | 'resetPeak'>;

export interface IngestBenchDeps {
  cfg: BenchConfig;
  infra: Infra;
  load: ChildHandle;
  /** the compiled ingest process */
  ingest: Server;
  baseline: Server;
  snapshot: () => CpuSnapshot;
  log: (line: string) => void;
}

/** The credential ingest checks on every request, stored as the operator would: a bcrypt hash. */
export async function seedCredential(infra: Infra, source = BENCH_SOURCE): Promise<void> {
  await createRepositories(infra.db).credentials.upsertByResourceUid(`bench:${source}`, {
    source,
    username: USER,
    passwordHash: await bcrypt.hash(PASSWORD, 10),
    eventIdRule: null,
    eventTypeRule: null,
    resourceName: `bench/${source}`,
  });
}

const emptyFigures = (): ServerFigures => ({ rps: 0, p50Ms: 0, p99Ms: 0, ok: 0, failed: 0, runs: [], cpu: {}, foreignCpuS: 0 });

function addCpu(into: ServerFigures, before: CpuSnapshot, after: CpuSnapshot): void {
  const u = cpuUsage(before, after);
  for (const [g, s] of Object.entries(u.groups)) into.cpu[g] = (into.cpu[g] ?? 0) + s;
  into.foreignCpuS += u.foreignS;
}

/**
 * Baseline and ingest, driven by the same load generator with the same connections, duration and
 * requests (Basic credentials, a unique external id per request), in alternating order
 * (B I, I B, B I, ...) so that noise on the machine hits both; figures are medians over rounds.
 */
export async function runIngestBench(d: IngestBenchDeps): Promise<IngestFigures> {
  const { cfg, infra, load, log } = d;
  const runPrefix = randomBytes(4).toString('hex');
  let runNo = 0;
  const options = (server: Server, durationS: number, ids: LoadOptions['ids']): LoadOptions => ({
    url: `http://127.0.0.1:${server.port}/api/webhooks/${BENCH_SOURCE}`,
    connections: cfg.connections,
    durationS,
    authorization: AUTHORIZATION,
    ids,
    idPrefix: `${runPrefix}-${runNo++}`,
  });
  const drive = async (server: Server, durationS: number, ids: LoadOptions['ids']): Promise<LoadResult> => {
    const r = await load.load(options(server, durationS, ids));
    // nobody reads the ingest queue: drop what piled up so fauxqs does not grow run after run
    infra.purgeQueues();
    return r;
  };

  // one request first: the credential is verified (bcrypt) once and cached, instead of by all
  // connections at once, which on a loaded 2-core machine can outlast a short warm-up
  for (const server of [d.baseline, d.ingest]) {
    const o = options(server, 0, 'unique');
    const res = await fetch(o.url, {
      method: 'POST',
      headers: { authorization: o.authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ id: `${o.idPrefix}-prime`, type: 'bench' }),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`priming ${o.url} answered ${res.status}`);
  }
  if (cfg.warmupS > 0) {
    log(`ingest: warming up both servers (${cfg.warmupS} s each)`);
    await drive(d.baseline, cfg.warmupS, 'unique');
    await drive(d.ingest, cfg.warmupS, 'unique');
  }
  d.ingest.resetPeak();
  d.baseline.resetPeak();

  const figures = { ingest: emptyFigures(), baseline: emptyFigures() };
  for (let round = 0; round < cfg.rounds; round++) {
    const order: Array<'baseline' | 'ingest'> = round % 2 === 0 ? ['baseline', 'ingest'] : ['ingest', 'baseline'];
    for (const which of order) {
      const before = d.snapshot();
      const r = await drive(d[which], cfg.durationS, 'unique');
      addCpu(figures[which], before, d.snapshot());
      figures[which].runs.push(r);
      log(
        `ingest: round ${round + 1}/${cfg.rounds} ${which.padEnd(8)} ${r.rps.toFixed(0)} req/s  ` +
          `p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  non-2xx ${r.non2xx}  errors ${r.errors + r.timeouts}`,
      );
    }
  }
  for (const f of [figures.ingest, figures.baseline]) {
    f.rps = median(f.runs.map((r) => r.rps));
    f.p50Ms = median(f.runs.map((r) => r.p50Ms));
    f.p99Ms = median(f.runs.map((r) => r.p99Ms));
    f.ok = f.runs.reduce((a, r) => a + r.ok, 0);
    f.failed = f.runs.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0);
  }

  let duplicate: LoadResult | undefined;
  if (cfg.duplicateDurationS > 0) {
    duplicate = await drive(d.ingest, cfg.duplicateDurationS, 'duplicate');
    log(`ingest: duplicates        ${duplicate.rps.toFixed(0)} req/s  p50 ${duplicate.p50Ms} ms  p99 ${duplicate.p99Ms} ms`);
  }
  return { ...figures, ratio: figures.ingest.rps / figures.baseline.rps, duplicate };
}
