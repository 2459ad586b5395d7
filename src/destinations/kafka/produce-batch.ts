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
