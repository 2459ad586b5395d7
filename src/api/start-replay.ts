import type { Client } from '@temporalio/client';
import type { TemporalConfig } from '../config/config.js';
import type { Tracing } from '../observability/tracing.js';
import type { StartReplay } from './replay-service.js';
import type { SignalTurn } from '../temporal/ordering-skip.js';

/** The Temporal client replays start runs on; called on each replay, so it may make one the first time. */
export type TemporalClientSource = () => Promise<Client>;

/**
 * startReplay on a client and task queue, bounded in time: with Temporal down, the SDK's own
 * retries would hold an operator's request for a long while; past the deadline it is a 503.
 * The start code (and with it the Temporal client's modules) is imported on the first replay:
 * ingest serves the admin API's reads without them, and rests smaller.
 */
export function bindStartReplay(client: TemporalClientSource, taskQueue: string, timeoutMs = 10_000): StartReplay {
  return async (req) => {
    const [{ startReplay }, c] = await Promise.all([import('../temporal/replay-starter.js'), client()]);
    return c.connection.withDeadline(Date.now() + timeoutMs, () => startReplay(c, { ...req, taskQueue }));
  };
}

/** Signals the run waiting for an ordered delivery's turn (docs/ordering.md), bounded in time like a start. */
export function bindSignalTurn(client: TemporalClientSource, taskQueue: string, timeoutMs = 10_000): SignalTurn {
  return async (wake) => {
    const [{ signalTurn }, c] = await Promise.all([import('../temporal/signal-turn.js'), client()]);
    await signalTurn(c, wake, { timeoutMs, taskQueue });
  };
}

/**
 * A Temporal client made when a replay first needs it: `@temporalio/client` (grpc-js and
 * Temporal's protobuf code, a large part of ingest's memory) is imported then, and the connection
 * is lazy too, so ingest starts and serves webhooks with Temporal down. close() closes it if made.
 */
export function lazyTemporalClient(
  opts: Pick<TemporalConfig, 'address' | 'namespace'> &
    Partial<Pick<TemporalConfig, 'tls'>> & {
      /** when on, replays start their runs through Temporal's tracing interceptor, as the consumer does */
      tracing?: Tracing;
    },
): {
  client: TemporalClientSource;
  close(): Promise<void>;
} {
  let made: Promise<Client> | undefined;
  return {
    client() {
      if (made === undefined) {
        made = Promise.all([
          import('@temporalio/client'),
          import('../temporal/connection.js'),
          opts.tracing ? import('../observability/temporal-tracing.js').then((m) => m.clientTracing(opts.tracing!)) : undefined,
        ]).then(
          ([{ Client, Connection }, { temporalClientOptions }, interceptors]) =>
            new Client({
              connection: Connection.lazy(temporalClientOptions({ address: opts.address, tls: opts.tls ?? null })),
              namespace: opts.namespace,
              ...(interceptors ? { interceptors } : {}),
            }),
        );
        // a failed import is not remembered: the next replay tries again
        made.catch(() => {
          made = undefined;
        });
      }
      return made;
    },
    async close() {
      const c = await made?.catch(() => undefined);
      await c?.connection.close();
    },
  };
}
