// `npm run bench`: inbound throughput beside a bare fastify+INSERT baseline, and end-to-end
// deliveries through Temporal beside a bare workflow of the same shape. See docs/benchmarks.md.
import { Client, Connection } from '@temporalio/client';
import { forkUnit, type ChildHandle } from './child-handle.js';
import { loadBenchConfig } from './config.js';
import { cpuSnapshot, type CpuSnapshot } from './cpu.js';
import { runE2eBench, type E2eBenchDeps } from './e2e-bench.js';
import { startInfra } from './infra.js';
import { runIngestBench, seedCredential } from './ingest-bench.js';
import type { UnitConfig, UnitRole } from './protocol.js';
import { startReceiver } from './receiver.js';
import { renderTable, summary, type PeakRss } from './report.js';

const log = (line: string): void => {
  process.stderr.write(`[bench] ${line}\n`);
};

const cleanups: Array<() => Promise<void>> = [];
async function cleanup(): Promise<void> {
  while (cleanups.length > 0) {
    const step = cleanups.pop();
    await step?.().catch((err: unknown) => log(`cleanup step failed: ${String(err)}`));
  }
}

/** CPU by component: forked units by role, then the dependencies by process name. */
const roles = new Map<number, string>();
const snapshot = (): CpuSnapshot =>
  cpuSnapshot(({ pid, comm }) => {
    if (pid === process.pid) return 'bench';
    return roles.get(pid) ?? (comm === 'postgres' || comm === 'temporal' ? comm : `other:${comm}`);
  });

async function main(): Promise<void> {
  const cfg = loadBenchConfig();
  log('starting embedded Postgres, fauxqs and the Temporal dev server (in memory)');
  const infra = await startInfra();
  cleanups.push(() => infra.stop());
  await seedCredential(infra);

  const unitConfig: UnitConfig = {
    databaseUrl: infra.pgUrl,
    awsEndpoint: infra.awsEndpoint,
    topicArn: infra.ingestTopology.topicArn,
    queueUrl: infra.fanoutTopology.queueUrl,
    temporalAddress: infra.temporalAddress,
    dbPoolMax: cfg.dbPoolMax,
    logLevel: cfg.logLevel,
    maxConcurrentActivities: cfg.maxConcurrentActivities,
    consumerConcurrency: cfg.consumerConcurrency,
    ingestVariant: cfg.ingestVariant,
  };
  const fork = async (role: UnitRole): Promise<ChildHandle> => {
    const h = await forkUnit(role, unitConfig);
    roles.set(h.pid, role);
    cleanups.push(() => h.stop());
    return h;
  };

  // Phase 1: inbound. The load generator and each server have their own process and event loop.
  log('ingest: starting the load generator, ingest and baseline processes');
  const [load, ingest, baseline] = await Promise.all([fork('load'), fork('ingest'), fork('baseline')]);
  const ingestFigures = await runIngestBench({ cfg, infra, load, ingest, baseline, snapshot, log });
  const [ingestStats, baselineStats] = await Promise.all([ingest.stats(), baseline.stats()]);
  await Promise.all([load.stop(), ingest.stop(), baseline.stop()]);

  // Phase 2: end to end. Real worker and consumer, and the bare worker, each in its own process.
  log('e2e: starting the receiver, the worker, the consumer and the bare worker (workflow bundles take a while)');
  const receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const connection = await Connection.connect({ address: infra.temporalAddress });
  cleanups.push(() => connection.close());
  const client = new Client({ connection, namespace: 'default' });
  const [worker, consumer, bareWorker] = await Promise.all([fork('worker'), fork('consumer'), fork('bare-worker')]);
  // peak RSS of the measured rounds, not of the workflow bundling at start-up
  const afterWarmup = (): void => [worker, consumer, bareWorker].forEach((h) => h.resetPeak());
  const deps: E2eBenchDeps = { cfg, infra, client, receiver, snapshot, log, afterWarmup };

  const { one, ten } = await runE2eBench(deps, cfg.e2eRounds);

  const [workerStats, consumerStats, bareStats] = await Promise.all([worker.stats(), consumer.stats(), bareWorker.stats()]);
  const rss: PeakRss = {
    ingest: ingestStats.peakRssMb,
    baseline: baselineStats.peakRssMb,
    worker: workerStats.peakRssMb,
    consumer: consumerStats.peakRssMb,
    bareWorker: bareStats.peakRssMb,
  };
  log('stopping everything');
  await cleanup();

  const results = { cfg, ingest: ingestFigures, e2e: { one, ten }, rss };
  process.stdout.write(renderTable(results) + '\n');
  process.stdout.write(JSON.stringify(summary(results)) + '\n');
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping everything`);
    void cleanup().finally(() => process.exit(130));
  });
}

try {
  await main();
} catch (err) {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
  await cleanup();
}
// Everything was stopped; should a library still hold a handle, do not hang forever on it.
setTimeout(() => {
  log('a handle was still open 10 s after cleanup; exiting anyway');
  process.exit(process.exitCode ?? 0);
}, 10_000).unref();
