import { performance } from 'node:perf_hooks';
import type { Producer } from '@platformatic/kafka';
import type { BrokerFailure } from '../broker-outcome.js';
import { sendFloorMs } from '../send-batching.js';
import { classifyKafkaError, leaderMissing } from './classify.js';
import type { AttemptState } from './produce-batch.js';

type KafkaProducer = Producer<Buffer, Buffer, Buffer, Buffer>;

/**
 * How long the cluster's metadata must keep saying a topic is unknown before a record for it fails
 * final. A topic is created by the controller, and each broker learns of it when it replays the
 * cluster's metadata log (KRaft; ZooKeeper clusters pushed it the same way): CreateTopics answers
 * once the controller has committed it, so a broker may still answer UNKNOWN_TOPIC_OR_PARTITION
 * for a few milliseconds after, up to a second on a busy or lagging broker. An endpoint applied
 * with its topic (GitOps) sends its first record in that gap. 2 s is well past the gap measured
 * here (docs/destinations.md) and short enough that a topic really missing, a configuration
 * mistake, is still reported FAILED at once to a person watching the first delivery.
 */
export const UNKNOWN_TOPIC_RECHECK_MS = 2_000;

/** Between two forced reads of an unknown topic's metadata: about ten reads in the 2 s, shared by every attempt waiting for that topic. */
export const UNKNOWN_TOPIC_REREAD_MS = 200;

/**
 * How long a topic that an attempt looked for through its whole window in vain (unknown, or a
 * partition without a leader) is remembered so, per producer: an attempt that meets it meanwhile
 * is answered after one forced read begun at least UNKNOWN_TOPIC_REREAD_MS after its own request
 * (past the broker's few-ms gap after CreateTopics: a topic created meanwhile is found by it),
 * instead of holding its activity slot for the whole window again. A truly missing topic measured
 * here: 2.04 s and 11 metadata requests per attempt without it. Its own request alone is no
 * answer: it may have met the gap of a topic being created right then (review9 BUG 1).
 */
export const MISSING_MEMORY_MS = 10_000;

/** At most this many topics remembered per producer (the oldest forgotten first): a bound whatever the endpoints' topic names. */
export const MISSING_MEMORY_TOPICS = 1_000;

/** What an attempt met: its topic unknown to the cluster's metadata, or a partition of it without a leader. */
export type Missing = 'unknown' | 'leaderless';

/**
 * What a failed produce or metadata read met that is worth waiting for (nothing was sent), or
 * null. `forLeader`: the attempt already waits for a leader, so a connect refused (its broker back
 * in the metadata a moment before its listener) is waited for too.
 */
export function missingOf(error: unknown, forLeader = false): Missing | null {
  if (classifyKafkaError(error).code === 'broker_unknown_destination') return 'unknown';
  return leaderMissing(error, forLeader) ? 'leaderless' : null;
}

/**
 * How long an attempt of `timeoutMs` looks for a topic the cluster calls unknown: 2 s, and never
 * more than half the attempt's time, so that a topic found late still leaves its record the time a
 * produce is given (sendFloorMs, at most the other half) and a missing one fails final, with its
 * reason, well before the attempt would time out (a timeout is retried: the reason would be lost).
 */
export function recheckWindowMs(timeoutMs: number): number {
  return Math.min(UNKNOWN_TOPIC_RECHECK_MS, timeoutMs / 2);
}

/**
 * How long an attempt of `timeoutMs` waits for a partition's leader: as long as its record could
 * still be sent once one is elected (its time but the time a produce is given, sendFloorMs), as
 * Kafka's own producer waits within delivery.timeout.ms. Nothing is final about a leaderless
 * partition (it is retried either way); waiting spares the attempt a failure and the delivery
 * its backoff when the election ends within the attempt (a broker restarting takes seconds).
 */
export function leaderWindowMs(timeoutMs: number): number {
  return timeoutMs - sendFloorMs(timeoutMs, null);
}

/** Whether the attempt has looked for its topic (`missing`) as long as it may (its window, from its start). */
export function recheckOver(attempt: AttemptState, now = performance.now(), missing: Missing = 'unknown'): boolean {
  const windowMs = missing === 'unknown' ? recheckWindowMs(attempt.timeoutMs) : leaderWindowMs(attempt.timeoutMs);
  return now - (attempt.deadline - attempt.timeoutMs) >= windowMs;
}

/** The cluster's answer at last: the topic's partitions, or why its records fail (classified). */
export type TopicFound = { partitionsCount: number } | { failure: BrokerFailure };

export interface TopicRecheck {
  /**
   * For an attempt whose own request has just met `missing` for `topic` (nothing was written):
   * reads the topic's metadata again, forced past the client's cache, until it is there with a
   * leader for each partition, or until a read begun after the attempt's window (recheckWindowMs
   * for an unknown topic, leaderWindowMs for a leaderless partition, from the attempt's start)
   * still finds it missing: an unknown topic is then final (broker_unknown_destination), a
   * leaderless partition retried (broker_unavailable), each saying how long it was looked for. A
   * topic so looked for in vain less than MISSING_MEMORY_MS before (the same `missing`) is answered
   * so after one read begun UNKNOWN_TOPIC_REREAD_MS or more after this call, unless that read
   * finds it. Each waiter ends by its own window only, whoever else waits for the topic.
   */
  wait(topic: string, attempt: AttemptState, missing: Missing): Promise<TopicFound>;
}

interface Waiter {
  attempt: AttemptState;
  resolve: (found: TopicFound) => void;
  missing: Missing;
  /** when it began to wait (performance.now()), after its own request */
  since: number;
  /** what the memory said when it came: its window is then one read, not the whole */
  remembered: Remembered | undefined;
}

/** A forced read's answer: the partitions, or the failure and what it says is missing (null: another failure). */
type Read = { partitionsCount: number } | { failure: BrokerFailure; missing: Missing | null };

/** A topic looked for in vain through an attempt's whole window: what was missing, the read that said so last, and when it began. */
interface Remembered {
  missing: Missing;
  detail: string;
  at: number;
}

const began = (attempt: AttemptState): number => attempt.deadline - attempt.timeoutMs;

/** The failure of an attempt whose topic is still missing once it has looked as long as it may. */
function gaveUp(missing: Missing, detail: string, ms: number): BrokerFailure {
  return missing === 'unknown'
    ? {
        code: 'broker_unknown_destination',
        detail: `${detail} (still unknown to the cluster's metadata ${Math.round(ms)} ms after the attempt began)`,
      }
    : {
        code: 'broker_unavailable',
        detail: `${detail} (no leader in the cluster's metadata ${Math.round(ms)} ms after the attempt began; not sent)`,
      };
}

/** The failure of an attempt that met a topic remembered missing: its own request and a read after it met it too. */
function rememberedFailure(r: Remembered, missing: Missing, detail: string, at: number): BrokerFailure {
  const ago = `for an attempt's whole window until ${Math.round(at - r.at)} ms before`;
  return missing === 'unknown'
    ? {
        code: 'broker_unknown_destination',
        detail: `${detail} (unknown to the cluster's metadata ${ago} this attempt's request, to it, and to a read after it)`,
      }
    : {
        code: 'broker_unavailable',
        detail: `${detail} (no leader in the cluster's metadata ${ago} this attempt's request, for it, nor for a read after it; not sent)`,
      };
}

/**
 * One loop of reads per topic looked for, whatever the number of attempts waiting for it (a
 * missing topic with many deliveries costs one metadata request per UNKNOWN_TOPIC_REREAD_MS, not
 * one per attempt). The client itself does not remember a topic's absence (an unknown topic is
 * asked for on each send): the gap is the broker's, so the remedy is to ask again, a little later.
 * A topic found missing through an attempt's whole window is remembered so for MISSING_MEMORY_MS.
 */
export function createTopicRecheck(
  producer: KafkaProducer,
  rereadMs = UNKNOWN_TOPIC_REREAD_MS,
  memoryMs = MISSING_MEMORY_MS,
): TopicRecheck {
  const looking = new Map<string, Waiter[]>();
  const recent = new Map<string, Remembered>();

  /** Remembers `topic` missing; forgets the topics remembered too long ago, and the oldest beyond MISSING_MEMORY_TOPICS. */
  const remember = (topic: string, r: Remembered): void => {
    recent.delete(topic);
    recent.set(topic, r);
    for (const [t, old] of recent) if (r.at - old.at >= memoryMs || recent.size > MISSING_MEMORY_TOPICS) recent.delete(t);
  };

  /** Settles the waiters of `topic` that `settled` answers for, keeps the others waiting. */
  const settle = (topic: string, settled: (w: Waiter) => TopicFound | undefined): void => {
    const still: Waiter[] = [];
    for (const w of looking.get(topic) ?? []) {
      const found = settled(w);
      if (found === undefined) still.push(w);
      else w.resolve(found);
    }
    looking.set(topic, still);
  };

  /**
   * One forced read: the partitions, or the classified failure and what is missing. A refused
   * connect (to a broker named in the metadata whose listener is not up yet: one restarting) sent
   * nothing; while a leader is waited for it is one more reason to wait.
   */
  const read = async (topic: string, forLeader: boolean): Promise<Read> => {
    try {
      const metadata = await producer.metadata({ topics: [topic], autocreateTopics: false, forceUpdate: true });
      const partitionsCount = metadata.topics.get(topic)?.partitionsCount ?? 0;
      if (partitionsCount > 0) return { partitionsCount };
      return { failure: { code: 'broker_error', detail: `the cluster's metadata names no partition of ${topic}` }, missing: null };
    } catch (error) {
      return { failure: classifyKafkaError(error), missing: missingOf(error, forLeader) };
    }
  };

  const look = async (topic: string): Promise<void> => {
    try {
      while ((looking.get(topic) ?? []).length > 0) {
        await new Promise((resolve) => setTimeout(resolve, rereadMs));
        // an attempt that ended meanwhile has had its answer (no acknowledgement in time): this only settles it
        settle(topic, (w) =>
          w.attempt.abandoned
            ? { failure: { code: 'broker_unavailable', detail: `the attempt ended while ${topic} was looked for`, timedOut: true } }
            : undefined,
        );
        if ((looking.get(topic) ?? []).length === 0) break;
        const at = performance.now();
        const found = await read(
          topic,
          (looking.get(topic) ?? []).some((w) => w.missing === 'leaderless'),
        );
        if (!('failure' in found) || found.missing === null) {
          // there now; or another failure (the cluster unreachable, credentials refused), which is the answer as it is
          if (!('failure' in found)) recent.delete(topic);
          const answer: TopicFound = 'failure' in found ? { failure: found.failure } : found;
          settle(topic, () => answer);
          continue;
        }
        // still missing: each waiter whose own window had passed when this read began is answered
        // (a remembered one: a read begun a re-read's time after its own request), the others
        // wait on; the topic is remembered missing from this read
        const { missing, failure } = found;
        const over = (w: Waiter): boolean =>
          recheckOver(w.attempt, at, missing) || (w.remembered?.missing === missing && at - w.since >= rereadMs);
        if (!(looking.get(topic) ?? []).some(over)) continue;
        remember(topic, { missing, detail: failure.detail, at });
        settle(topic, (w) => {
          if (!over(w)) return undefined;
          if (recheckOver(w.attempt, at, missing) || w.remembered === undefined)
            return { failure: gaveUp(missing, failure.detail, at - began(w.attempt)) };
          return { failure: rememberedFailure(w.remembered, missing, failure.detail, at) };
        });
      }
    } catch (error) {
      // not expected (each read's failure is a value): the waiters are answered all the same
      settle(topic, () => ({ failure: classifyKafkaError(error) }));
    } finally {
      looking.delete(topic);
    }
  };

  return {
    wait(topic, attempt, missing) {
      const since = performance.now();
      let known = recent.get(topic);
      if (known !== undefined && (known.missing !== missing || since - known.at >= memoryMs)) {
        // forgotten by now, or what is missing changed (a topic created, its leaders being elected): a whole window again
        recent.delete(topic);
        known = undefined;
      }
      return new Promise<TopicFound>((resolve) => {
        const waiter: Waiter = { attempt, resolve, missing, since, remembered: known };
        const waiting = looking.get(topic);
        if (waiting !== undefined) waiting.push(waiter);
        else {
          looking.set(topic, [waiter]);
          void look(topic);
        }
      });
    },
  };
}
