import { Client, type Connection } from '@temporalio/client';
import { loadConsumerConfig } from '../config/config.js';
import { pingDb } from '../db/knex.js';
import { createRedriveQueries } from '../db/redrive-queries.js';
import { createRepositories } from '../db/repositories.js';
import { buildConsumerProcess } from '../processes/consumer-process.js';
import { createSqsClient } from '../transport/sqs-client.js';
import { bootstrap } from './bootstrap.js';
import { runService } from '../processes/lifecycle.js';
import { clientTracing } from '../observability/temporal-tracing.js';
import { startTracing } from '../observability/tracing.js';
import { connectTemporalClient } from '../temporal/connection.js';
import { waitFor } from './wait-for.js';

/** Composition root: `webhook-fanout consumer`. */
export async function main(env: NodeJS.ProcessEnv): Promise<void> {
  const cfg = loadConsumerConfig(env);
  const { logger, metrics, db, service } = bootstrap('consumer', cfg);
  // SQS only: the consumer publishes nothing, and the SNS client's code would stay loaded
  const sqs = createSqsClient(cfg.aws);
  const tracing = await startTracing('consumer', env, logger);
  const interceptors = await clientTracing(tracing);
  // connected inside start(), after the management server is up: /healthz answers while the
  // consumer waits for Temporal, /readyz says 503 until then
  let connection: Connection | undefined;
  await runService({
    ...service,
    checks: {
      postgres: () => pingDb(db),
      temporal: async () => {
        if (!connection) return false;
        await connection.healthService.check({});
        return true;
      },
    },
    start: async () => {
      const connected = await waitFor(
        'temporal',
        () =>
          connectTemporalClient(cfg.temporal, {
            connectTimeout: 3_000,
            // gRPC's default reconnect backoff grows to 2 min: after a Temporal outage the
            // consumer would sit idle long after Temporal is back
            channelArgs: { 'grpc.initial_reconnect_backoff_ms': 500, 'grpc.max_reconnect_backoff_ms': 3_000 },
          }),
        { logger },
      );
      connection = connected;
      const consumer = buildConsumerProcess({
        settings: cfg,
        sqs,
        client: new Client({ connection: connected, namespace: cfg.temporal.namespace, ...(interceptors ? { interceptors } : {}) }),
        repos: createRepositories(db, { operations: cfg.operations }),
        redrive: createRedriveQueries(db),
        metrics,
        logger,
      });
      return [consumer.start()];
    },
    cleanup: async () => {
      await connection?.close();
      await db.destroy();
      sqs.destroy();
      await tracing.shutdown();
    },
  });
}
