import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import bcrypt from 'bcrypt';
import type { FastifyInstance } from 'fastify';
import { startFauxqs } from 'fauxqs';
import { createBatchingEventInserter } from '../../src/db/event-inserter.js';
import { createRepositories, type Repositories } from '../../src/db/repositories.js';
import type { Db } from '../../src/db/knex.js';
import { freePort } from '../../src/dev/ports.js';
import { buildIngestApp, type HttpTimeouts } from '../../src/ingest/app.js';
import { createCredentialVerifier } from '../../src/ingest/credential-verifier.js';
import { createReceiveWebhook } from '../../src/ingest/receive-webhook.js';
import { createMetrics, type Metrics } from '../../src/metrics/metrics.js';
import { createLogger } from '../../src/observability/logger.js';
import { createAwsClients, type AwsClients } from '../../src/transport/aws-clients.js';
import { createBatchingSnsPublisher } from '../../src/transport/batching-publisher.js';
import { ensureTopology, type Topology } from '../../src/transport/topology.js';

type Fauxqs = Awaited<ReturnType<typeof startFauxqs>>;

/** Ingest on a real socket, with real Postgres and an SNS/SQS emulator reached over HTTP. */
export interface IngestHarness {
  url: string;
  repos: Repositories;
  metrics: Metrics;
  aws: AwsClients;
  topology: Topology;
  app: FastifyInstance;
  /** stops the emulator (the topic becomes unreachable) */
  stopTopic(): Promise<void>;
  /** starts it again on the same port and recreates the topology */
  restartTopic(): Promise<void>;
  /** every event id on the queue right now (received with visibility 0, so they stay) */
  queuedEventIds(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startIngestHarness(opts: {
  db: Db;
  bodyLimitBytes?: number;
  rowTtlMs?: number;
  cacheSize?: number;
  timeouts?: HttpTimeouts;
  /** the credential verifier's clock (epoch ms), so a test moves past its cache TTL without waiting */
  now?: () => number;
}): Promise<IngestHarness> {
  const sqsPort = await freePort();
  let fauxqs: Fauxqs | undefined = await startFauxqs({ port: sqsPort, logger: false });
  const aws = createAwsClients({ region: 'us-east-1', endpoint: `http://127.0.0.1:${sqsPort}`, maxAttempts: 1 });
  let topology = await ensureTopology(aws);
  const repos = createRepositories(opts.db);
  const metrics = createMetrics({ defaultMetrics: false });
  const logger = createLogger({ level: 'silent' });
  const verifier = createCredentialVerifier({
    credentials: repos.credentials,
    cacheSize: opts.cacheSize ?? 1000,
    rowTtlMs: opts.rowTtlMs ?? 2000,
    ...(opts.now ? { now: opts.now } : {}),
  });
  const publisher = createBatchingSnsPublisher({ sns: aws.sns, topicArn: topology.topicArn });
  // the inserter ingest uses: batched, so the concurrency tests exercise it
  const insertEvent = createBatchingEventInserter(opts.db, repos.events);
  const receiveWebhook = createReceiveWebhook({ verifier, events: repos.events, insertEvent, publisher, metrics, logger });
  const app = await buildIngestApp({
    receiveWebhook,
    verifier,
    metrics,
    logger,
    bodyLimitBytes: opts.bodyLimitBytes ?? 1024 * 1024,
    ...(opts.timeouts ? { timeouts: opts.timeouts } : {}),
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    url: `http://127.0.0.1:${port}`,
    repos,
    metrics,
    aws,
    get topology() {
      return topology;
    },
    app,
    async stopTopic() {
      await fauxqs?.stop();
      fauxqs = undefined;
    },
    async restartTopic() {
      fauxqs = await startFauxqs({ port: sqsPort, logger: false });
      topology = await ensureTopology(aws);
    },
    async queuedEventIds() {
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await aws.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: topology.queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0, WaitTimeSeconds: 0 }),
        );
        const batch = (r.Messages ?? []).map((m) => (JSON.parse(m.Body ?? '{}') as { eventId: string }).eventId);
        if (batch.length === 0) break;
        for (const id of batch) if (!ids.includes(id)) ids.push(id);
        if (batch.length < 10) break;
      }
      return ids;
    },
    async close() {
      await app.close();
      await fauxqs?.stop();
      aws.sns.destroy();
      aws.sqs.destroy();
    },
  };
}

export async function addCredential(repos: Repositories, source: string, username: string, password: string): Promise<void> {
  await repos.credentials.upsertByResourceUid(`test:${source}`, {
    source,
    username,
    passwordHash: await bcrypt.hash(password, 10),
    eventIdRule: null,
    eventTypeRule: null,
    resourceName: `test/${source}`,
  });
}
