import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { describeError } from '../domain/errors.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Logger } from '../observability/logger.js';
import { deadLetterQueueUrl } from './dead-letter.js';

/** Every 30 s: a dashboard's resolution, and two GetQueueAttributes calls a replica per interval. */
export const QUEUE_DEPTH_INTERVAL_MS = 30_000;

const STATES = {
  visible: 'ApproximateNumberOfMessages',
  in_flight: 'ApproximateNumberOfMessagesNotVisible',
  delayed: 'ApproximateNumberOfMessagesDelayed',
} as const;

/**
 * The depth of the queue and of its DLQ as SQS reports it, on the consumer's metrics
 * (webhook_fanout_queue_depth_messages), so that a dashboard and an alert need no CloudWatch
 * exporter. SQS's figures are approximate and a few seconds behind; each consumer replica reports
 * the same values (take max(), not sum(), across them). A failed read leaves the last values.
 */
export function createQueueDepthProbe(deps: { sqs: SQSClient; queueUrl: string; metrics: Metrics; logger: Logger; intervalMs?: number }) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let dlqUrl: string | undefined;

  async function read(url: string, queue: 'queue' | 'dlq'): Promise<void> {
    const res = await deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: Object.values(STATES) }));
    for (const [state, attribute] of Object.entries(STATES)) {
      const v = Number(res.Attributes?.[attribute]);
      if (Number.isFinite(v)) deps.metrics.queueDepth.set({ queue, state }, v);
    }
  }

  async function probe(): Promise<void> {
    await read(deps.queueUrl, 'queue');
    dlqUrl ??= await deadLetterQueueUrl(deps.sqs, deps.queueUrl);
    if (dlqUrl !== undefined) await read(dlqUrl, 'dlq');
  }

  const tick = (): void => {
    running ??= probe()
      .catch((err: unknown) => {
        dlqUrl = undefined;
        deps.logger.debug({ err: describeError(err) }, 'queue depth not read; the next tick tries again');
      })
      .finally(() => {
        running = undefined;
      });
  };

  return {
    probe,
    start(): void {
      if (timer) return;
      timer = setInterval(tick, deps.intervalMs ?? QUEUE_DEPTH_INTERVAL_MS);
      timer.unref();
      tick();
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
