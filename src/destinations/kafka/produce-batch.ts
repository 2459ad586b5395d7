import { defaultPartitioner } from '@platformatic/kafka';

/** One record bound for a topic, as the producer takes it. */
export interface ProduceRecord {
  key?: Buffer;
  value: Buffer;
  headers: Map<Buffer, Buffer>;
}

/**
 * The attempt a record belongs to: once its deadline has passed, a record not yet sent is
 * dropped, never sent late; nor is one with too little of its time left (sendFloorMs).
 */
export interface AttemptState {
  abandoned: boolean;
  /** when the attempt's time runs out (performance.now()) */
  deadline: number;
  /** the attempt's whole time */
  timeoutMs: number;
}

/**
 * How much one produce request of the coalescer carries: well under the broker's default
 * message.max.bytes (1 MiB, the limit of one partition's record batch), so that records which
 * each fit are not refused together; a record over the bytes goes alone.
 */
export const BATCH_LIMITS = { records: 500, bytes: 256 * 1024 } as const;

/** A record's size as the batch limit counts it: key, value and headers (a record's framing is a few bytes more). */
export function recordBytes(record: ProduceRecord): number {
  let bytes = record.value.length + (record.key?.length ?? 0);
  for (const [name, value] of record.headers) bytes += name.length + value.length;
  return bytes;
}

/**
 * The partition of a keyed record: the client's own default partitioner (murmur2 of the key)
 * modulo the topic's partitions, as its send() computes it, so that one ordering key's records
 * land in one partition whichever way they are sent.
 */
export function keyedPartition(key: Buffer, partitionsCount: number): number {
  return defaultPartitioner({ topic: '' }, key) % partitionsCount;
}

/**
 * Records without a key join a partition's request in flight only while it is younger than this:
 * one that takes longer (a leader slow or gone, the client waiting out its request timeout) does
 * not hold them; they go to the next partition, as they would have gone round-robin one by one.
 * A produce with acks=all takes 4 to 12 ms on one local broker, tens on a loaded one.
 */
export const STICKY_WHILE_MS = 200;

/**
 * Where the records without a key that came in together go: the partition they went to last
 * (`sticky`) while its request is in flight and younger than STICKY_WHILE_MS (they join its next
 * request), else the next partition (round-robin, one partition per request, as Kafka's own
 * sticky partitioner does). `sentAt`: when its request in flight went out; null: none in flight.
 */
export function unkeyedPartition(sticky: number, partitionsCount: number, sentAt: number | null, now: number): number {
  const joinable = sentAt !== null && sticky < partitionsCount && now - sentAt < STICKY_WHILE_MS;
  return joinable ? sticky : (sticky + 1) % partitionsCount;
}

/** The least time a record must have left to be sent: see sendFloorMs. */
export const MIN_TIME_LEFT_MS = 1_000;

/**
 * How much of its attempt's time a record must still have for the coalescer to send it
 * (review K3): a record that waited behind a slow partition's request and then goes out with a few
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

/**
 * Each record's offset from one partition's answer: a record batch is appended whole, at
 * consecutive offsets from the base the broker answers, in the order it was sent. Null when the
 * answer names no such partition.
 */
export function recordOffsets(
  offsets: readonly { topic: string; partition: number; offset: bigint }[] | undefined,
  topic: string,
  partition: number,
  count: number,
): bigint[] | null {
  const answer = offsets?.find((o) => o.topic === topic && o.partition === partition);
  if (answer === undefined) return null;
  return Array.from({ length: count }, (_, i) => answer.offset + BigInt(i));
}
