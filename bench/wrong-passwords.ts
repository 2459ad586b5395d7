// `npm run bench:wrong-passwords`: only the wrong-passwords phase of `npm run bench` (a valid
// sender's latency alone and under a flood of wrong passwords, on the compiled ingest), for
// trying the refusal limits without the rest. BENCH_WRONG_PASSWORDS_RATE, _S, _CONNECTIONS as there.
import { existsSync } from 'node:fs';
import { freePort } from '../src/dev/ports.js';
import { CLI, spawnCli } from './cli-unit.js';
import { loadBenchConfig } from './config.js';
import { startInfra } from './infra.js';
import { AUTHORIZATION, BENCH_SOURCE, seedCredential } from './ingest-bench.js';
import { runWrongPasswordsBench, wrongPasswordsRows } from './wrong-passwords-bench.js';

const log = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);

const cfg = loadBenchConfig();
if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm run bench:wrong-passwords does)`);
const infra = await startInfra('dev');
try {
  await seedCredential(infra);
  const port = await freePort();
  const ingest = await spawnCli('ingest', 'ingest', {
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
  try {
    const figures = await runWrongPasswordsBench({
      ingestUrl: `http://127.0.0.1:${port}`,
      source: BENCH_SOURCE,
      authorization: AUTHORIZATION,
      rate: cfg.wrongPasswordsRate,
      durationS: Math.max(cfg.wrongPasswordsDurationS, 1),
      connections: cfg.wrongPasswordsConnections,
      log,
    });
    process.stdout.write(wrongPasswordsRows(figures).join('\n') + '\n');
    process.stdout.write(JSON.stringify(figures) + '\n');
  } finally {
    await ingest.stop();
  }
} finally {
  await infra.stop();
}
