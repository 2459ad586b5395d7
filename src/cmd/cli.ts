#!/usr/bin/env node
import { ConfigError } from '../config/env-reader.js';
import { fatalLine } from '../observability/logger.js';

const COMMANDS = {
  dev: () => import('./dev.js'),
  ingest: () => import('./ingest.js'),
  consumer: () => import('./consumer.js'),
  worker: () => import('./worker.js'),
  operator: () => import('./operator.js'),
  migrate: () => import('./migrate.js'),
  'setup-transport': () => import('./setup-transport.js'),
} as const;

const USAGE = `usage: webhook-fanout <command>

commands:
  dev              everything in one process on embedded Postgres, SNS/SQS and Temporal (npm start)
  ingest           the public HTTP server: POST /api/webhooks/{source}
  consumer         reads the queue and starts one WebhookFanoutWorkflow per event
  worker           runs WebhookFanoutWorkflow and delivers to endpoints
  operator         reconciles WebhookEndpoint / InboundCredential custom resources into Postgres
  migrate          applies database migrations (idempotent)
  setup-transport  creates the SNS topic, SQS queue and dead-letter queue (idempotent)

Configuration comes from environment variables; see README.md.`;

async function run(): Promise<void> {
  const name = process.argv[2];
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (!(name in COMMANDS)) {
    process.stderr.write(`unknown command "${name}"\n\n${USAGE}\n`);
    process.exit(2);
  }
  const mod = await COMMANDS[name as keyof typeof COMMANDS]();
  await mod.main(process.env, process.argv.slice(3));
}

run().catch((err: unknown) => {
  // one JSON line like every other log line, so that log pipelines parse start-up failures too
  if (err instanceof ConfigError) {
    process.stderr.write(fatalLine(err.message, { problems: err.problems }));
    process.exit(2);
  }
  const detail = err instanceof Error ? { err: { type: err.name, message: err.message, stack: err.stack } } : { err: String(err) };
  process.stderr.write(fatalLine('failed to start', detail));
  process.exit(1);
});
