// What an idle install costs: the compiled ingest, consumer and worker (as a pod runs them, with
// the chart's NODE_OPTIONS) and the Temporal dev server and Postgres they use, started, left
// alone for IDLE_SETTLE_S, then their CPU over IDLE_S seconds with no event at all, per second.
// Pollers, timers, metrics and the sweeper are what such a figure is made of.
//
//   npm run bench:idle        # builds first; IDLE_S (30), IDLE_SETTLE_S (10), BENCH_TEMPORAL (dev; postgres:
//                             # temporal-server on its own Postgres, as in npm run bench)
import { freePort } from '../src/dev/ports.js';
import { spawnCli, type CliHandle } from './cli-unit.js';
import { componentOf } from './components.js';
import { loadBenchConfig } from './config.js';
import { cpuSnapshot, cpuUsage } from './cpu.js';
import { startInfra } from './infra.js';

const idleS = Number(process.env.IDLE_S ?? 30);
const settleS = Number(process.env.IDLE_SETTLE_S ?? 10);
const log = (m: string): void => void process.stderr.write(`[idle] ${m}\n`);
const sleep = (s: number): Promise<void> => new Promise((r) => setTimeout(r, s * 1000));

async function main(): Promise<void> {
  const infra = await startInfra(loadBenchConfig().temporalKind);
  const units: CliHandle[] = [];
  try {
    const env = {
      DATABASE_URL: infra.pgUrl,
      TEMPORAL_ADDRESS: infra.temporalAddress,
      AWS_ENDPOINT_URL: infra.awsEndpoint,
      LOG_LEVEL: 'info',
    };
    const queue = { QUEUE_URL: infra.fanoutTopology.queueUrl };
    const port = await freePort();
    const starts = [
      spawnCli('ingest', 'ingest', {
        ...env,
        PORT: String(port),
        HOST: '127.0.0.1',
        TOPIC_ARN: infra.fanoutTopology.topicArn,
        ADMIN_API_ENABLED: 'false',
      }),
      spawnCli('consumer', 'consumer', { ...env, ...queue }),
      spawnCli('worker', 'worker', env),
    ];
    // every process that did start is stopped below, also when another failed to
    for (const r of await Promise.allSettled(starts)) if (r.status === 'fulfilled') units.push(r.value);
    await Promise.all(starts);
    const roles = new Map(units.map((u) => [u.pid, u.role]));
    if (infra.temporalPid !== undefined) roles.set(infra.temporalPid, 'temporal');
    const snapshot = () => cpuSnapshot(componentOf({ roles, temporalPostgresPid: infra.temporalPostgresPid }));
    log(`all ready; settling ${settleS} s, then measuring ${idleS} s with no event`);
    await sleep(settleS);
    const before = snapshot();
    await sleep(idleS);
    const usage = cpuUsage(before, snapshot());
    const rows = Object.entries(usage.groups)
      .filter(([g]) => !g.startsWith('other:'))
      .sort((a, b) => b[1] - a[1])
      .map(([g, s]) => `${g.padEnd(17)} ${((s * 1000) / idleS).toFixed(1).padStart(6)} ms/s`);
    process.stdout.write(
      `CPU per second with no event, over ${idleS} s (other processes on the machine: ${usage.foreignS.toFixed(1)} s)\n${rows.join('\n')}\n`,
    );
  } finally {
    await Promise.allSettled(units.map((u) => u.stop()));
    await infra.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
