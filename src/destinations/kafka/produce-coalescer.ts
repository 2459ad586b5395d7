import { performance } from 'node:perf_hooks';
import { ProduceAcks, type Producer } from '@platformatic/kafka';
import type { BrokerFailure } from '../broker-outcome.js';
import { classifyKafkaError } from './classify.js';
import {
  BATCH_LIMITS,
  keyedPartition,
  recordBytes,
  recordOffsets,
  unkeyedPartition,
  type AttemptState,
  type ProduceRecord,
} from './produce-batch.js';
import { nextLatencyMs, sendFloorMs, takeBatch } from '../send-batching.js';
import { missingOf, recheckOver, type Missing, type TopicRecheck } from './topic-recheck.js';

type KafkaProducer = Producer<Buffer, Buffer, Buffer, Buffer>;

/**
 * A refused request whose reason may be one record's, not the request's: too large, or an error
 * the broker gives a batch for one record it finds invalid (broker_record_invalid: INVALID_RECORD,
 * a record without a key on a compacted topic; or one we do not name, broker_error). The request's records are then
 * sent again one by one, so one endpoint's bad record does not fail the attempts of the others
 * that shared its request (the producer is shared by every endpoint of a cluster and its
 * credentials). Refusals of the whole request (authentication, an unknown topic, throttling, an
 * unavailable broker) fail each record as they are: each alone would be refused the same.
 */
const SPLIT_ON = new Set(['broker_message_too_large', 'broker_record_invalid', 'broker_error']);

/**
 * What the broker answered for one record: where it was written (offset null: an answer without
 * one), or the request's error; or why the record was not sent (`notSent`, already classified).
 */
export type Produced = { partition: number; offset: bigint | null } | { error: unknown } | { notSent: BrokerFailure };

export interface ProduceCoalescer {
  produce(topic: string, record: ProduceRecord, attempt: AttemptState): Promise<Produced>;
}

interface Entry {
  record: ProduceRecord;
  bytes: number;
  attempt: AttemptState;
  /** when the record came (performance.now()) */
  came: number;
  resolve: (produced: Produced) => void;
  /** what it last waited for (topic-recheck.ts), if it did */
  waited?: Missing;
}

interface PartitionLane {
  inFlight: boolean;
  /** when the request in flight went out (performance.now()) */
  sentAt: number;
  /** the partition's recent produce latency (answered requests, smoothed); null: none answered yet */
  latencyMs: number | null;
  waiting: Entry[];
}

interface TopicLane {
  /** records that came in since the last assignment, assigned together on the next turn of the event loop */
  incoming: Entry[];
  scheduled: boolean;
  partitions: Map<number, PartitionLane>;
  /** where records without a key go: kept while its request is in flight (they join the next one), moved on when idle */
  sticky: number;
}

/**
 * Puts the records of concurrent attempts bound for one producer and topic into one produce
 * request per partition (docs/destinations.md, "Kafka"): the client's own produce path costs the
 * same CPU for one record as for many (metadata look-ups, the request and its timer, the answer),
 * so ten attempts in one request cost about one. Each record is still its attempt's one publish,
 * acknowledged with acks=all, its offset its own (the batch's base offset plus its place).
 *
 * The wait for company is bounded by what is happening anyway, as a producer's linger: records
 * that arrive in the same turn of the event loop go together (setImmediate: no timer, nothing
 * added to a record that comes alone), and while a partition has a request in flight the records
 * for it wait for its answer and then go in one request. That wait costs little: a broker answers
 * the requests of one connection one after the other, so a record sent as a request of its own
 * would queue behind the one in flight all the same. One request in flight per partition keeps a
 * partition's records in the order they came.
 *
 * One partition per request: a record batch is appended whole or not at all, so a request's
 * answer is every one of its records' answer, and a failed request fails each of its attempts
 * with the classified reason (each retried by its own delivery). A batch refused as too large is
 * sent again record by record, one after the other and only those whose attempt still waits, so
 * only the record over the broker's limit fails and none is sent after its attempt gave up; so is
 * a batch refused for what may be one record's fault (SPLIT_ON).
 *
 * A record goes out only with time enough left of its attempt (sendFloorMs: 1 s, twice the
 * partition's recent latency, at most half the attempt's time): one that waited behind a slow
 * request and has less fails its attempt unsent (broker_unavailable, retried) rather than time out
 * while the broker writes it and be written again by its retry.
 *
 * A topic the cluster's metadata calls unknown is looked for again before its records fail final
 * (`recheck`, topic-recheck.ts: it may have been created a moment ago); they then go out by the
 * same rules.
 */
export function createProduceCoalescer(
  producer: KafkaProducer,
  recheck: TopicRecheck,
  limits: { records: number; bytes: number } = BATCH_LIMITS,
): ProduceCoalescer {
  const topics = new Map<string, TopicLane>();

  /** the entries whose attempt still waits; the others settle (their attempt has already ended) and are not sent */
  const live = (entries: Entry[]): Entry[] =>
    entries.filter((e) => {
      if (e.attempt.abandoned) e.resolve({ error: new Error('the attempt ended before its record was sent') });
      return !e.attempt.abandoned;
    });

  const laneOf = (topic: string): TopicLane => {
    let lane = topics.get(topic);
    if (lane === undefined) {
      lane = { incoming: [], scheduled: false, partitions: new Map(), sticky: 0 };
      topics.set(topic, lane);
    }
    return lane;
  };

  const partitionOf = (lane: TopicLane, partition: number): PartitionLane => {
    let p = lane.partitions.get(partition);
    if (p === undefined) {
      p = { inFlight: false, sentAt: 0, latencyMs: null, waiting: [] };
      lane.partitions.set(partition, p);
    }
    return p;
  };

  /** the entry joins those assigned on the next turn of the event loop */
  const enqueue = (topic: string, lane: TopicLane, e: Entry): void => {
    lane.incoming.push(e);
    if (!lane.scheduled) {
      lane.scheduled = true;
      setImmediate(() => void assign(topic, lane));
    }
  };

  const assign = async (topic: string, lane: TopicLane): Promise<void> => {
    lane.scheduled = false;
    const entries = live(lane.incoming);
    lane.incoming = [];
    if (entries.length === 0) return;
    let count: number;
    try {
      // the client's cached metadata (its send looks it up the same way): an unknown topic fails here as there
      const metadata = await producer.metadata({ topics: [topic], autocreateTopics: false });
      count = metadata.topics.get(topic)?.partitionsCount ?? 0;
      if (count < 1) throw new Error(`the cluster's metadata names no partition of ${topic}`);
    } catch (error) {
      const missing = missingOf(
        error,
        entries.some((e) => e.waited === 'leaderless'),
      );
      if (missing !== null) for (const e of entries) void recheckTopic(topic, lane, e, missing);
      else for (const e of entries) e.resolve({ error });
      return;
    }
    let sticky: number | undefined;
    for (const e of entries) {
      let partition: number;
      if (e.record.key !== undefined) partition = keyedPartition(e.record.key, count);
      else {
        if (sticky === undefined) {
          const current = lane.partitions.get(lane.sticky);
          lane.sticky = unkeyedPartition(lane.sticky, count, current?.inFlight === true ? current.sentAt : null, performance.now());
          sticky = lane.sticky;
        }
        partition = sticky;
      }
      partitionOf(lane, partition).waiting.push(e);
    }
    for (const [partition, p] of lane.partitions) if (!p.inFlight && p.waiting.length > 0) void drain(topic, partition, p);
  };

  /**
   * A topic the cluster's metadata calls unknown may have been created a moment ago, a partition
   * without a leader may be electing one: the entry waits while the metadata is read again
   * (topic-recheck.ts), then is assigned with the records that came meanwhile, and goes out only
   * with time enough left (sendable, as any record that waited); a topic still unknown at the end
   * of its window fails it final, a partition still leaderless fails it unsent (retried).
   */
  const recheckTopic = async (topic: string, lane: TopicLane, e: Entry, missing: Missing): Promise<void> => {
    e.waited = missing;
    const found = await recheck.wait(topic, e.attempt, missing);
    if ('failure' in found) {
      e.resolve({ notSent: found.failure });
      return;
    }
    enqueue(topic, lane, e);
  };

  /**
   * The live entries with time enough left to be sent on this partition (sendFloorMs); the others
   * fail their attempt (transient: retried) unsent. Without this, a record that waited behind a
   * slow request went out with a few ms left, timed out while the broker wrote it, and its retry
   * wrote it again (review K3).
   */
  const sendable = (entries: Entry[], p: PartitionLane): Entry[] => {
    const now = performance.now();
    return live(entries).filter((e) => {
      const left = e.attempt.deadline - now;
      const floor = sendFloorMs(e.attempt.timeoutMs, p.latencyMs);
      if (left >= floor) return true;
      const detail =
        `not sent: ${Math.max(0, Math.round(left))} ms of the attempt's time left after ${Math.round(now - e.came)} ms ` +
        `waiting for the partition's request in flight (or for its topic in the cluster's metadata), under the ${Math.round(floor)} ms a produce is given ` +
        `(sent now, it would time out while written, and its retry would write it again)`;
      e.resolve({ notSent: { code: 'broker_unavailable', detail, timedOut: true } });
      return false;
    });
  };

  /** Sends a partition's waiting records, a request at a time, until none waits. */
  const drain = async (topic: string, partition: number, p: PartitionLane): Promise<void> => {
    p.inFlight = true;
    try {
      for (;;) {
        p.waiting = sendable(p.waiting, p);
        if (p.waiting.length === 0) return;
        const batch = takeBatch(p.waiting, (e) => e.bytes, limits);
        p.waiting = p.waiting.slice(batch.length);
        p.sentAt = performance.now();
        await sendBatch(topic, partition, p, batch);
      }
    } finally {
      p.inFlight = false;
    }
  };

  const sendBatch = async (topic: string, partition: number, p: PartitionLane, batch: Entry[]): Promise<void> => {
    try {
      const started = performance.now();
      // acks on each send: the client takes a producer's own `acks` for its streams only
      const result = await producer.send({ messages: batch.map((e) => ({ ...e.record, topic, partition })), acks: ProduceAcks.ALL });
      p.latencyMs = nextLatencyMs(p.latencyMs, performance.now() - started);
      const offsets = recordOffsets(result.offsets, topic, partition, batch.length);
      batch.forEach((e, i) => e.resolve({ partition, offset: offsets?.[i] ?? null }));
    } catch (error) {
      // nothing of a refused batch is written: each record alone finds out whether it is the one too
      // large (or the one the broker found invalid), one after the other (one request in flight per partition, as drain sends), and only
      // while its attempt still waits, with time enough left: an attempt whose deadline passed during the refused request
      // has been answered and will be retried, so its record sent now would be published twice
      const { code } = classifyKafkaError(error);
      if (batch.length > 1 && SPLIT_ON.has(code)) {
        for (const e of batch) if (sendable([e], p).length === 1) await sendBatch(topic, partition, p, [e]);
        return;
      }
      // a leader that does not know the topic yet (its metadata behind the broker's that gave ours),
      // or no leader in the metadata the client read again (a connect refused, once the records
      // wait for a leader): nothing was sent, so the record waits for the topic, or its leader,
      // while its attempt's window lasts. Not a Produce answered NOT_LEADER_OR_FOLLOWER: it may be
      // written (acks=all, leadership lost in purgatory), and sending it again could publish it twice
      const missing = missingOf(
        error,
        batch.some((e) => e.waited === 'leaderless'),
      );
      if (missing !== null) {
        const now = performance.now();
        for (const e of batch) {
          if (recheckOver(e.attempt, now, missing)) e.resolve({ error });
          else void recheckTopic(topic, laneOf(topic), e, missing);
        }
        return;
      }
      for (const e of batch) e.resolve({ error });
    }
  };

  return {
    produce(topic, record, attempt) {
      return new Promise<Produced>((resolve) => {
        enqueue(topic, laneOf(topic), { record, bytes: recordBytes(record), attempt, came: performance.now(), resolve });
      });
    },
  };
}
