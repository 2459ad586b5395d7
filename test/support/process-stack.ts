import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import bcrypt from 'bcrypt';
import { startFauxqs } from 'fauxqs';
import type { EndpointSpec } from '../../src/db/endpoints.js';
import type { OAuth2Client } from '../../src/domain/records.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import { freePort } from '../../src/dev/ports.js';
import { createAwsClients } from '../../src/transport/aws-clients.js';
import { ensureTopology } from '../../src/transport/topology.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { sleep } from './wait.js';

export interface RunningCli {
  name: string;
  child: ChildProcess;
  /** everything it wrote, stdout and stderr */
  output: string[];
  management: string;
  /** the public port (ingest) */
  port: number;
}

/** A `webhook-fanout <command>` child process from the checkout, configured by its environment alone, as an operator runs it. */
export async function startCli(command: 'ingest' | 'consumer' | 'worker', env: Record<string, string>): Promise<RunningCli> {
  const [management, port] = await Promise.all([freePort(), freePort()]);
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cmd/cli.ts', command], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      MANAGEMENT_PORT: String(management),
      PORT: String(port),
      HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout?.on('data', (b: Buffer) => output.push(b.toString()));
  child.stderr?.on('data', (b: Buffer) => output.push(b.toString()));
  return { name: command, child, output, management: `http://127.0.0.1:${management}`, port };
}

/** /readyz's status, or 'none' when nothing answers. */
export async function readyz(p: RunningCli): Promise<number | 'none'> {
  try {
    return (await fetch(`${p.management}/readyz`, { signal: AbortSignal.timeout(3_000) })).status;
  } catch {
    return 'none';
  }
}

export async function waitReady(p: RunningCli, timeoutMs = 90_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (p.child.exitCode !== null) throw new Error(`${p.name} exited with ${p.child.exitCode}:\n${p.output.join('').slice(-3000)}`);
    if ((await readyz(p)) === 200) return;
    if (Date.now() > until) throw new Error(`${p.name} not ready within ${timeoutMs} ms:\n${p.output.join('').slice(-3000)}`);
    await sleep(250);
  }
}

export async function stopCli(p: RunningCli): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

export const SOURCE = { source: 'shop', username: 'shop', password: 'shop-pass' } as const;

export function endpointSpec(name: string, url: string, over: Partial<EndpointSpec> = {}): EndpointSpec {
  return {
    name,
    source: SOURCE.source,
    eventType: null,
    url,
    method: 'POST',
    authType: 'NONE',
    authUsername: null,
    authSecret: null,
    signingSecret: null,
    previousSigningSecret: null,
    customHeaders: {},
    maxAttempts: 3,
    timeoutSeconds: 5,
    retryOnStatus: [],
    rateLimitPerSecond: null,
    maxConcurrency: null,
    active: true,
    autoDisableAfter: 0,
    ...over,
  };
}

/** An OAuth2 client whose token endpoint is never asked (the database's tests of migrations 089 and 092). */
export const OAUTH2_CLIENT: OAuth2Client = {
  tokenUrl: 'https://idp.example/oauth/token',
  clientId: 'c',
  scopes: [],
  audience: null,
  clientAuthentication: 'ClientSecretBasic',
  keyId: null,
};

/** endpointSpec of an endpoint with that client, its client secret `secret`. */
export const oauth2EndpointSpec = (name: string, secret: string, over: Partial<EndpointSpec> = {}): EndpointSpec =>
  endpointSpec(name, 'http://x/h', { authType: 'OAUTH2_CLIENT_CREDENTIALS', authSecret: secret, authOAuth2: OAUTH2_CLIENT, ...over });

/**
 * What the processes share: a fresh database on the tests' Postgres (migrated, with the source
 * `shop`), fauxqs over HTTP with its own topic and queue, and the environment each CLI process
 * takes to reach them. Temporal is the caller's (its address and any TLS variables go in `env`).
 */
export interface ProcessWorld {
  t: TestDatabase;
  repos: Repositories;
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startProcessWorld(): Promise<ProcessWorld> {
  const t = await createTestDatabase();
  const repos = createRepositories(t.db);
  await repos.credentials.upsertByResourceUid('test:shop', {
    source: SOURCE.source,
    username: SOURCE.username,
    passwordHash: await bcrypt.hash(SOURCE.password, 4),
    eventIdRule: null,
    eventTypeRule: null,
    resourceName: 'test/shop',
  });
  const fauxqs = await startFauxqs({ port: 0, logger: false });
  const aws = createAwsClients({ region: 'us-east-1', endpoint: fauxqs.address });
  const suffix = randomUUID().slice(0, 8);
  const topology = await ensureTopology(aws, {
    topicName: `events-${suffix}`,
    queueName: `events-${suffix}`,
    dlqName: `dlq-${suffix}`,
    visibilityTimeoutSeconds: 30,
  });
  aws.sns.destroy();
  aws.sqs.destroy();
  return {
    t,
    repos,
    env: {
      DATABASE_URL: t.url,
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL: fauxqs.address,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      TOPIC_ARN: topology.topicArn,
      QUEUE_URL: topology.queueUrl,
      ADMIN_API_ENABLED: 'false',
      LOG_LEVEL: 'info',
      DELIVERY_BACKOFF_INITIAL_MS: '200',
      DELIVERY_BACKOFF_MAX_MS: '2000',
    },
    async close() {
      await fauxqs.stop();
      await t.destroy();
    },
  };
}
