import { performance } from 'node:perf_hooks';
import type { Producer } from '@platformatic/kafka';
import type { BrokerFailure } from '../broker-outcome.js';
import { classifyKafkaError } from './classify.js';
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
 * How long an attempt of `timeoutMs` looks for a topic the cluster calls unknown: 2 s, and never
 * more than half the attempt's time, so that a topic found late still leaves its record the time a
 * produce is given (sendFloorMs, at most the other half) and a missing one fails final, with its
 * reason, well before the attempt would time out (a timeout is retried: the reason would be lost).
 */
export function recheckWindowMs(timeoutMs: number): number {
  return Math.min(UNKNOWN_TOPIC_RECHECK_MS, timeoutMs / 2);
}

/** Whether the attempt has looked for its topic as long as it may (its window, from its start). */
export function recheckOver(attempt: AttemptState, now = performance.now()): boolean {
  return now - (attempt.deadline - attempt.timeoutMs) >= recheckWindowMs(attempt.timeoutMs);
}

/** The cluster's answer at last: the topic's partitions, or why its records fail (classified). */
export type TopicFound = { partitionsCount: number } | { failure: BrokerFailure };

export interface TopicRecheck {
  /**
   * For an attempt whose topic the cluster's metadata has just called unknown: reads the topic's
   * metadata again, forced past the client's cache, until it is there, or until a read begun after
   * the attempt's window (recheckWindowMs, from the attempt's start) still finds it unknown
   * (broker_unknown_destination, final, saying how long it was looked for).
   */
  wait(topic: string, attempt: AttemptState): Promise<TopicFound>;
}

interface Waiter {
  attempt: AttemptState;
  resolve: (found: TopicFound) => void;
}

/**
 * One loop of reads per topic looked for, whatever the number of attempts waiting for it (a
 * missing topic with many deliveries costs one metadata request per UNKNOWN_TOPIC_REREAD_MS, not
 * one per attempt). The client itself does not remember a topic's absence (an unknown topic is
 * asked for on each send): the gap is the broker's, so the remedy is to ask again, a little later.
 */
export function createTopicRecheck(producer: KafkaProducer, rereadMs = UNKNOWN_TOPIC_REREAD_MS): TopicRecheck {
  const looking = new Map<string, Waiter[]>();

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

  /** One forced read: the partitions, or the classified failure. */
  const read = async (topic: string): Promise<TopicFound> => {
    try {
      const metadata = await producer.metadata({ topics: [topic], autocreateTopics: false, forceUpdate: true });
      const partitionsCount = metadata.topics.get(topic)?.partitionsCount ?? 0;
      if (partitionsCount > 0) return { partitionsCount };
      return { failure: { code: 'broker_error', detail: `the cluster's metadata names no partition of ${topic}` } };
    } catch (error) {
      return { failure: classifyKafkaError(error) };
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
        const began = performance.now();
        const found = await read(topic);
        if (!('failure' in found) || found.failure.code !== 'broker_unknown_destination') {
          // there now; or another failure (the cluster unreachable, credentials refused), which is the answer as it is
          settle(topic, () => found);
          continue;
        }
        // still unknown: final for the attempts whose window had passed when this read began
        const { detail } = found.failure;
        settle(topic, (w) =>
          recheckOver(w.attempt, began)
            ? {
                failure: {
                  code: 'broker_unknown_destination',
                  detail: `${detail} (still unknown to the cluster's metadata ${Math.round(began - (w.attempt.deadline - w.attempt.timeoutMs))} ms after the attempt began)`,
                },
              }
            : undefined,
        );
      }
    } catch (error) {
      // not expected (each read's failure is a value): the waiters are answered all the same
      settle(topic, () => ({ failure: classifyKafkaError(error) }));
    } finally {
      looking.delete(topic);
    }
  };

  return {
    wait(topic, attempt) {
      return new Promise<TopicFound>((resolve) => {
        const waiting = looking.get(topic);
        if (waiting !== undefined) waiting.push({ attempt, resolve });
        else {
          looking.set(topic, [{ attempt, resolve }]);
          void look(topic);
        }
      });
    },
  };
}
