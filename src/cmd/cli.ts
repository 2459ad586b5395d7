#!/usr/bin/env node
import * as nodeModule from 'node:module';
import { ConfigError } from '../config/env-reader.js';
import { fatalLine } from '../observability/logger.js';
import { startFailure } from '../processes/start-failure.js';

interface CommandModule {
  main(env: NodeJS.ProcessEnv, argv: string[]): Promise<void>;
}

/**
 * `dev` (embedded Postgres, SNS/SQS emulator, Temporal dev server, a dev identity provider) runs
 * from a checkout only: the production build (tsconfig.build.json, the image) does not compile it,
 * and its devDependencies are not installed there. The specifier is computed so that tsc does not
 * follow it into the build.
 */
async function loadDev(): Promise<CommandModule> {
  if (!import.meta.url.endsWith('.ts')) {
    process.stderr.write(
      '`webhook-fanout dev` runs from a checkout only (`npm start`): this build has no dev mode, ' +
        'no embedded Postgres, SNS/SQS emulator or Temporal dev server.\n',
    );
    process.exit(2);
  }
  const devModule = './dev' + '.ts';
  return (await import(devModule)) as CommandModule;
}

const COMMANDS: Record<string, () => Promise<CommandModule>> = {
  dev: loadDev,
  ingest: () => import('./ingest.js'),
  consumer: () => import('./consumer.js'),
  worker: () => import('./worker.js'),
  operator: () => import('./operator.js'),
  migrate: () => import('./migrate.js'),
  'setup-transport': () => import('./setup-transport.js'),
  validate: () => import('./validate.js'),
  try: () => import('./try.js'),
};

const USAGE = `usage: webhook-fanout <command>

commands:
  dev              from a checkout only (npm start): everything in one process on embedded
                   Postgres, SNS/SQS and Temporal
  ingest           the public HTTP server: POST /api/webhooks/{source}
  consumer         reads the queue and starts one WebhookFanoutWorkflow per event
  worker           runs WebhookFanoutWorkflow and delivers to endpoints
  operator         reconciles WebhookEndpoint / InboundCredential custom resources into Postgres
  migrate          applies database migrations (idempotent)
  setup-transport  creates the SNS topic, SQS queue and dead-letter queue (idempotent)
  validate         checks manifests offline: schema, rules, filters, transforms (-f file or folder)
  try              offline: would an endpoint get this payload, and with which body

Configuration comes from environment variables; see README.md.`;

/**
 * With source maps on (the image's and the chart's `--enable-source-maps`), stack traces keep
 * pointing into our TypeScript, but the dependencies' maps (Temporal's and grpc-js's ship them)
 * are not loaded: Node parses and keeps every map of every module it loads, heap the consumer's
 * memory target can not spare, for frames inside libraries whose compiled JavaScript is readable
 * as it is. Only modules loaded afterwards are affected: the
 * commands below are imported after this runs.
 */
function ownSourceMapsOnly(): void {
  // a namespace import: Node 22 before 22.14 has neither function (package.json engines: >=22),
  // and a named import of a missing export would stop the CLI from loading at all
  if (typeof nodeModule.getSourceMapsSupport !== 'function' || typeof nodeModule.setSourceMapsSupport !== 'function') return;
  const current = nodeModule.getSourceMapsSupport();
  if (current.enabled && current.nodeModules) {
    nodeModule.setSourceMapsSupport(true, { nodeModules: false, generatedCode: current.generatedCode });
  }
}

async function run(): Promise<void> {
  ownSourceMapsOnly();
  const name = process.argv[2];
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    process.stderr.write(`unknown command "${name}"\n\n${USAGE}\n`);
    process.exit(2);
  }
  const mod = await load();
  await mod.main(process.env, process.argv.slice(3));
}

run().catch((err: unknown) => {
  // one JSON line like every other log line, so that log pipelines parse start-up failures too
  if (err instanceof ConfigError) {
    process.stderr.write(fatalLine(err.message, { problems: err.problems }));
    process.exit(2);
  }
  const failure = startFailure(err);
  process.stderr.write(fatalLine(`failed to start: ${failure.cause}`, { err: failure.err }));
  process.exit(1);
});
