import type { FastifyInstance } from 'fastify';
import { createBatchingEventInserter } from '../db/event-inserter.js';
import type { Db } from '../db/knex.js';
import type { Repositories } from '../db/repositories.js';
import type { HttpTimeouts } from '../http/timeouts.js';
import { buildIngestApp } from '../ingest/app.js';
import { createCredentialVerifier } from '../ingest/credential-verifier.js';
import { createReceiveWebhook } from '../ingest/receive-webhook.js';
import { createSweeper } from '../ingest/sweeper.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import type { EventPublisher } from '../transport/publisher.js';

export interface RunningProcess {
  stop(): Promise<void>;
}

export interface IngestProcess extends RunningProcess {
  url: string;
  port: number;
}

/** The public HTTP server (inbound webhooks, plus any routes `register` adds) and the sweeper. */
export async function startIngestProcess(deps: {
  db: Db;
  repos: Repositories;
  publisher: EventPublisher;
  metrics: Metrics;
  logger: Logger;
  port: number;
  host: string;
  bodyLimitBytes: number;
  /** default DEFAULT_HTTP_TIMEOUTS */
  httpTimeouts?: HttpTimeouts;
  credentialCacheSize: number;
  sweepIntervalMs: number;
  sweepMinAgeMs: number;
  sweepUnstartedAfterMs?: number;
  register?: (app: FastifyInstance) => Promise<void> | void;
}): Promise<IngestProcess> {
  const verifier = createCredentialVerifier({ credentials: deps.repos.credentials, cacheSize: deps.credentialCacheSize });
  const receiveWebhook = createReceiveWebhook({
    verifier,
    events: deps.repos.events,
    insertEvent: createBatchingEventInserter(deps.db, deps.repos.events),
    publisher: deps.publisher,
    metrics: deps.metrics,
    logger: deps.logger,
  });
  const app = await buildIngestApp({
    receiveWebhook,
    // credentials are checked before the body is read
    verifier,
    ...(deps.httpTimeouts ? { timeouts: deps.httpTimeouts } : {}),
    metrics: deps.metrics,
    logger: deps.logger,
    bodyLimitBytes: deps.bodyLimitBytes,
    ...(deps.register ? { register: deps.register } : {}),
  });
  const sweeper = createSweeper({
    events: deps.repos.events,
    publisher: deps.publisher,
    metrics: deps.metrics,
    logger: deps.logger,
    intervalMs: deps.sweepIntervalMs,
    minAgeMs: deps.sweepMinAgeMs,
    ...(deps.sweepUnstartedAfterMs === undefined ? {} : { unstartedAfterMs: deps.sweepUnstartedAfterMs }),
  });
  await app.listen({ port: deps.port, host: deps.host });
  sweeper.start();
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : deps.port;
  const shownHost = deps.host === '0.0.0.0' || deps.host === '::' ? 'localhost' : deps.host;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    async stop() {
      // close() stops accepting, answers 503 to new requests on kept-alive sockets, drains in-flight ones
      await app.close();
      await sweeper.stop();
    },
  };
}
