import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Producer, ProduceAcks } from '@platformatic/kafka';
import type { KafkaProduceMode } from '../../config/settings.js';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import type { KafkaTarget } from '../../delivery/broker-targets.js';
import type { Destination } from '../../delivery/destination.js';
import type { Message } from '../../delivery/message.js';
import type { DeliveryOutcome } from '../../delivery/types.js';
import { hostOf, refusedBrokerHost } from '../broker-address.js';
import { brokerFailureOutcome, brokerSuccess, withDeadline, type BrokerFailure } from '../broker-outcome.js';
import { classifyKafkaError } from './classify.js';
import { kafkaRecordParts } from './kafka-record.js';
import { sendFloorMs } from '../send-batching.js';
import type { AttemptState, ProduceRecord } from './produce-batch.js';
import { createProduceCoalescer, type ProduceCoalescer, type Produced } from './produce-coalescer.js';
import { createTopicRecheck, missingOf, recheckOver, type Missing, type TopicRecheck } from './topic-recheck.js';

type KafkaProducer = Producer<Buffer, Buffer, Buffer, Buffer>;

/** How long a producer no attempt has used is kept open: an endpoint's next record seldom waits that long, a deleted one's never comes. */
export const PRODUCER_IDLE_CLOSE_MS = 10 * 60_000;

/** A producer of one cluster and credentials, and what says when to close it. */
interface Held {
  producer: KafkaProducer;
  /** its look-ups of topics the cluster called unknown (both ways of producing use it) */
  recheck: TopicRecheck;
  /** the cluster, TLS and user, the password apart: a producer made for the same with another password replaces this one (a rotation) */
  identity: string;
  /** attempts whose publish has not finished (a record may still be in flight after its attempt's deadline) */
  inFlight: number;
  /** replaced or idle: closed once nothing is in flight */
  retired: boolean;
  /** a record of its has been acknowledged: its password works */
  proven: boolean;
  idle: NodeJS.Timeout | undefined;
}

/**
 * The Kafka destination: one record per message, produced with acks=all (every in-sync replica
 * has it before the broker answers), its partition and offset the receipt. One producer per
 * distinct cluster and credentials, made on first use; one no endpoint uses any more is closed
 * (its connections with it) once its records in flight are done: at once when a producer for the
 * same cluster and user is made with another password (a rotation: the old password's connections
 * would otherwise stay open until the worker stops), else after PRODUCER_IDLE_CLOSE_MS unused (an
 * endpoint deleted or moved to another cluster). The producer does not retry inside an attempt:
 * an attempt is one publish, and the delivery's backoff decides the next.
 */
export function createKafkaDestination(opts: {
  addressPolicy: AddressPolicy;
  clientId?: string;
  /** KAFKA_PRODUCE; unset: coalesced */
  produce?: KafkaProduceMode;
  /** unset: PRODUCER_IDLE_CLOSE_MS (tests shorten it) */
  idleCloseMs?: number;
}): Destination<KafkaTarget> {
  const idleCloseMs = opts.idleCloseMs ?? PRODUCER_IDLE_CLOSE_MS;
  /** the producer in use for each cluster and credentials */
  const producers = new Map<string, Held>();
  /** every producer not closed yet, retired ones included (close() closes them all) */
  const open = new Set<Held>();
  const coalescers = new WeakMap<KafkaProducer, ProduceCoalescer>();
  const coalesced = (opts.produce ?? 'coalesced') === 'coalesced';
  // the brokers a cluster advertises are what the producer dials: checked once per producer
  const advertisedChecked = new WeakSet<KafkaProducer>();

  /** a refusal of the bootstrap servers, or of a broker the cluster advertises, by the outbound address policy */
  const refusedAddress = async (producer: KafkaProducer, to: KafkaTarget): Promise<BrokerFailure | null> => {
    const bootstrap = await refusedBrokerHost(opts.addressPolicy, to.bootstrapServers.map(hostOf));
    if (bootstrap !== null || advertisedChecked.has(producer)) return bootstrap;
    let hosts: string[];
    try {
      hosts = [...(await producer.metadata({ topics: [] })).brokers.values()].map((b) => b.host);
    } catch {
      // the cluster does not answer: the produce fails and says why
      return null;
    }
    const advertised = await refusedBrokerHost(opts.addressPolicy, hosts);
    if (advertised === null) advertisedChecked.add(producer);
    return advertised;
  };

  const closeHeld = (h: Held): void => {
    open.delete(h);
    // a producer that fails to close has nothing left to send: nothing to report to an attempt
    void h.producer.close().catch(() => undefined);
  };

  /** no attempt will use it again: closed now, or when its last record in flight is answered */
  const retire = (key: string, h: Held): void => {
    if (producers.get(key) === h) producers.delete(key);
    h.retired = true;
    clearTimeout(h.idle);
    if (h.inFlight === 0) closeHeld(h);
  };

  const producerFor = (to: KafkaTarget): { key: string; held: Held } => {
    const { key, identity } = producerKey(to);
    let held = producers.get(key);
    if (held === undefined) {
      const producer = new Producer<Buffer, Buffer, Buffer, Buffer>({
        clientId: opts.clientId ?? 'webhook-fanout',
        bootstrapBrokers: [...to.bootstrapServers],
        retries: 0,
        // not the client's own second send after a Produce answer of NOT_LEADER_OR_FOLLOWER: with
        // acks=all the old leader may have written the record (review9 BUG 3), and this producer is
        // not idempotent; such an answer is the delivery's backoff's (what was not sent is waited for: topic-recheck.ts)
        repeatOnStaleMetadata: false,
        autocreateTopics: false,
        connectTimeout: 10_000,
        requestTimeout: 30_000,
        ...(to.tls ? { tls: to.secrets.caBundle === undefined ? {} : { ca: to.secrets.caBundle } } : {}),
        ...(to.sasl ? { sasl: { mechanism: to.sasl.mechanism, username: to.sasl.username, password: to.secrets.password ?? '' } } : {}),
      });
      const recheck = createTopicRecheck(producer);
      held = { producer, recheck, identity, inFlight: 0, retired: false, proven: false, idle: undefined };
      producers.set(key, held);
      open.add(held);
      coalescers.set(producer, createProduceCoalescer(producer, recheck));
    }
    return { key, held };
  };

  /**
   * Runs one attempt's publish on `h`, and closes `h` after it if it was retired meanwhile, or once
   * idle. The first record `h` publishes proves its password: the same cluster and user's producers
   * of other passwords are then retired (a rotation). Not before: an endpoint whose Secret still
   * holds a wrong password must not close the producer of one whose password works.
   */
  const using = (key: string, h: Held, publishing: () => Promise<DeliveryOutcome>): Promise<DeliveryOutcome> => {
    h.inFlight++;
    clearTimeout(h.idle);
    const proving = (outcome: DeliveryOutcome): DeliveryOutcome => {
      if (outcome.kind === 'success' && !h.proven && !h.retired) {
        h.proven = true;
        for (const [k, other] of producers) if (other !== h && other.identity === h.identity) retire(k, other);
      }
      return outcome;
    };
    return publishing()
      .then(proving)
      .finally(() => {
        h.inFlight--;
        if (h.inFlight > 0) return;
        if (h.retired) closeHeld(h);
        else h.idle = setTimeout(() => retire(key, h), idleCloseMs).unref();
      });
  };

  /** one record alone in its request (KAFKA_PRODUCE=single) */
  const sendOne = async (producer: KafkaProducer, topic: string, record: ProduceRecord): Promise<Produced> => {
    try {
      // acks on each send: the client takes a producer's own `acks` for its streams only, and a
      // send without one is acknowledged by the leader alone (acks=1)
      const result = await producer.send({ messages: [{ ...record, topic }], acks: ProduceAcks.ALL });
      const written = result.offsets?.[0];
      return written === undefined ? { partition: -1, offset: null } : { partition: written.partition, offset: written.offset };
    } catch (error) {
      return { error };
    }
  };

  /**
   * KAFKA_PRODUCE=single: a topic the cluster calls unknown is looked for again (topic-recheck.ts:
   * it may have been created a moment ago; nothing was written), and so is a partition without a
   * leader in the metadata (an election in progress: nothing sent), and the record sent again once
   * it is there, if its attempt still has the time a produce is given (sendFloorMs, the
   * coalescer's rule). A leader that does not know the topic yet answers the produce so too: sent
   * again while the attempt's window lasts, failed with that answer after it. A produce answered
   * NOT_LEADER_OR_FOLLOWER is not sent again (it may be written): the delivery's backoff's.
   */
  const produceOne = async (held: Held, topic: string, record: ProduceRecord, attempt: AttemptState): Promise<Produced> => {
    for (let waited: Missing | null = null; ;) {
      const produced = await sendOne(held.producer, topic, record);
      const missing: Missing | null = 'error' in produced ? missingOf(produced.error, waited === 'leaderless') : null;
      if (missing === null) return produced;
      // missing again after the metadata had it: the leader's answer, as it is once the window has passed
      if (waited !== null && recheckOver(attempt, performance.now(), missing)) return produced;
      waited = missing;
      const found = await held.recheck.wait(topic, attempt, missing);
      if ('failure' in found) return { notSent: found.failure };
      const left = attempt.deadline - performance.now();
      if (attempt.abandoned || left < sendFloorMs(attempt.timeoutMs, null))
        return {
          notSent: {
            code: 'broker_unavailable',
            detail: `not sent: ${Math.max(0, Math.round(left))} ms of the attempt's time left once ${topic} was in the cluster's metadata`,
            timedOut: true,
          },
        };
    }
  };

  const publish = async (
    held: Held,
    message: Message,
    to: KafkaTarget,
    attempt: AttemptState,
    elapsed: () => number,
  ): Promise<DeliveryOutcome> => {
    const refused = await refusedAddress(held.producer, to);
    if (refused !== null) return brokerFailureOutcome(refused, elapsed());
    const parts = kafkaRecordParts(message);
    const record: ProduceRecord = {
      value: message.body,
      ...(parts.key === null ? {} : { key: Buffer.from(parts.key) }),
      headers: new Map(parts.headers.map(([name, value]) => [Buffer.from(name), Buffer.from(value)])),
    };
    const coalescer = coalesced ? coalescers.get(held.producer) : undefined;
    const produced = coalescer ? await coalescer.produce(to.topic, record, attempt) : await produceOne(held, to.topic, record, attempt);
    if ('notSent' in produced) return brokerFailureOutcome(produced.notSent, elapsed());
    if ('error' in produced) return brokerFailureOutcome(classifyKafkaError(produced.error), elapsed());
    if (produced.offset === null)
      return brokerFailureOutcome({ code: 'broker_error', detail: 'the broker answered without an offset' }, elapsed());
    return brokerSuccess(
      { partition: produced.partition, offset: produced.offset.toString() },
      `${to.topic} partition ${produced.partition} offset ${produced.offset}`,
      elapsed(),
    );
  };

  return {
    async send(message, to, { timeoutMs }) {
      const started = performance.now();
      const elapsed = (): number => Math.round(performance.now() - started);
      const { key, held } = producerFor(to);
      const attempt: AttemptState = { abandoned: false, deadline: started + timeoutMs, timeoutMs };
      // one deadline for the attempt, the address checks and the produce together; a record still
      // waiting for its request when it passes is never sent (one in a request already may be written)
      return withDeadline(
        using(key, held, () => publish(held, message, to, attempt, elapsed)),
        timeoutMs,
        () => {
          attempt.abandoned = true;
          return brokerFailureOutcome(
            { code: 'broker_unavailable', detail: `no acknowledgement within ${timeoutMs} ms`, timedOut: true },
            elapsed(),
          );
        },
      );
    },
    async close() {
      const all = [...open];
      producers.clear();
      open.clear();
      for (const h of all) clearTimeout(h.idle);
      await Promise.allSettled(all.map((h) => h.producer.close()));
    },
  };
}

/**
 * One producer per cluster, TLS and credentials (`key`); the password only as a digest, never kept
 * as a key. `identity`: the same without the password, what a rotation keeps.
 */
function producerKey(to: KafkaTarget): { key: string; identity: string } {
  const digest = (v: string | undefined) => (v === undefined ? '' : createHash('sha256').update(v).digest('hex'));
  const identity = [to.bootstrapServers, to.tls !== null, digest(to.secrets.caBundle), to.sasl?.mechanism, to.sasl?.username];
  return { key: JSON.stringify([...identity, digest(to.secrets.password)]), identity: JSON.stringify(identity) };
}
