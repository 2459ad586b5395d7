// What the destinations that coalesce the sends of concurrent attempts into one request share
// (Kafka's produce-coalescer.ts, SQS's batches in aws/sqs-direct.ts): how many go in one request,
// and the rule that a send that waited goes only with time enough left of its attempt (review K3).

/** The least time a record must have left to be sent: see sendFloorMs. */
export const MIN_TIME_LEFT_MS = 1_000;

/**
 * How much of its attempt's time a record must still have for the coalescer to send it
 * (review K3): a record (an SQS message) that waited behind a slow partition's (queue's) request and then goes out with a few
 * milliseconds left times out while the broker writes it, and its retry writes it a second time.
 * So a record is sent only with at least MIN_TIME_LEFT_MS left (1 s: two orders of magnitude over
 * an acks=all produce on a healthy cluster, a few ms, so it only ever holds back records of a
 * partition that is already slow), or twice the partition's recent produce latency if that is
 * more (a request usually takes about that long; twice leaves room for a slower one), and never
 * more than half the attempt's whole time (an endpoint's timeout may be 1 s: its records still go
 * after a short wait, instead of never). Abandoned, a record costs its attempt one retry, which
 * the timeout would have cost too, without the copy. `recentLatencyMs`: null when none answered yet.
 */
export function sendFloorMs(timeoutMs: number, recentLatencyMs: number | null): number {
  return Math.min(Math.max(MIN_TIME_LEFT_MS, 2 * (recentLatencyMs ?? 0)), timeoutMs / 2);
}

/** The partition's recent produce latency, smoothed over the last few requests so one slow answer does not swing it. */
export function nextLatencyMs(recentLatencyMs: number | null, requestMs: number): number {
  return recentLatencyMs === null ? requestMs : 0.7 * recentLatencyMs + 0.3 * requestMs;
}

/**
 * The first records of `waiting` that one request carries: at most `limits.records`, and at most
 * `limits.bytes` of them unless the first alone is larger (it then goes alone). Never empty when
 * `waiting` is not.
 */
export function takeBatch<T>(waiting: readonly T[], bytesOf: (item: T) => number, limits: { records: number; bytes: number }): T[] {
  const batch: T[] = [];
  let bytes = 0;
  for (const item of waiting) {
    const size = bytesOf(item);
    if (batch.length > 0 && (batch.length >= limits.records || bytes + size > limits.bytes)) break;
    batch.push(item);
    bytes += size;
  }
  return batch;
}
