// `npm run bench:wrong-passwords`: only the wrong-passwords phase of `npm run bench` (a valid
// sender's latency alone and under a flood of wrong passwords, on the compiled ingest), for
// trying the refusal limits without the rest. BENCH_WRONG_PASSWORDS_RATE, _S, _CONNECTIONS as there,
// and BENCH_FRESH_FLOOD_S (the fresh-ingest cases of issue 45, each on an ingest of its own).
import { existsSync } from 'node:fs';
import { freePort } from '../src/dev/ports.js';
import { CLI, spawnCli } from './cli-unit.js';
import { loadBenchConfig } from './config.js';
import { startInfra } from './infra.js';
import { seedFreshFloodCredentials } from './fresh-flood.js';
import { AUTHORIZATION, BENCH_SOURCE, seedCredential } from './ingest-bench.js';
import { runWrongPasswordsBench, wrongPasswordsRows } from './wrong-passwords-bench.js';

const log = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);

const cfg = loadBenchConfig();
if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm run bench:wrong-passwords does)`);
const infra = await startInfra('dev');
try {
  await seedCredential(infra);
  if (cfg.freshFloodDurationS > 0) await seedFreshFloodCredentials(infra.db);
  const ingestEnv = (port: number) => ({
    DATABASE_URL: infra.pgUrl,
    DB_POOL_MAX: String(cfg.dbPoolMax),
    LOG_LEVEL: cfg.logLevel,
    AWS_ENDPOINT_URL: infra.awsEndpoint,
    PORT: String(port),
    HOST: '127.0.0.1',
    TOPIC_ARN: infra.ingestTopology.topicArn,
    ADMIN_API_ENABLED: 'false',
    ...cfg.ingestEnv,
  });
  const port = await freePort();
  const ingest = await spawnCli('ingest', 'ingest', ingestEnv(port));
  try {
    const figures = await runWrongPasswordsBench({
      ingestUrl: `http://127.0.0.1:${port}`,
      source: BENCH_SOURCE,
      authorization: AUTHORIZATION,
      rate: cfg.wrongPasswordsRate,
      durationS: Math.max(cfg.wrongPasswordsDurationS, 1),
      connections: cfg.wrongPasswordsConnections,
      log,
      freshDurationS: cfg.freshFloodDurationS,
      startFreshIngest: async () => {
        const freshPort = await freePort();
        const fresh = await spawnCli('ingest', 'ingest-fresh-flood', ingestEnv(freshPort));
        return { url: `http://127.0.0.1:${freshPort}`, stop: () => fresh.stop() };
      },
      // each case starts from an empty webhook_proven_address (the never-seen senders' cases need it)
      forgetProven: async () => void (await infra.db('webhook_proven_address').delete()),
    });
    process.stdout.write(wrongPasswordsRows(figures).join('\n') + '\n');
    process.stdout.write(JSON.stringify(figures) + '\n');
  } finally {
    await ingest.stop();
  }
} finally {
  await infra.stop();
}
