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
import type { ProduceRecord } from './produce-batch.js';
import { createProduceCoalescer, type AttemptState, type ProduceCoalescer, type Produced } from './produce-coalescer.js';

type KafkaProducer = Producer<Buffer, Buffer, Buffer, Buffer>;

/**
 * The Kafka destination: one record per message, produced with acks=all (every in-sync replica
 * has it before the broker answers), its partition and offset the receipt. One producer per
 * distinct cluster and credentials, made on first use and kept for the life of the worker. The
 * producer does not retry inside an attempt: an attempt is one publish, and the delivery's backoff
 * decides the next.
 */
export function createKafkaDestination(opts: {
  addressPolicy: AddressPolicy;
  clientId?: string;
  /** KAFKA_PRODUCE; unset: coalesced */
  produce?: KafkaProduceMode;
}): Destination<KafkaTarget> {
  const producers = new Map<string, KafkaProducer>();
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

  const producerFor = (to: KafkaTarget): KafkaProducer => {
    const key = producerKey(to);
    let producer = producers.get(key);
    if (producer === undefined) {
      producer = new Producer<Buffer, Buffer, Buffer, Buffer>({
        clientId: opts.clientId ?? 'webhook-fanout',
        bootstrapBrokers: [...to.bootstrapServers],
        retries: 0,
        autocreateTopics: false,
        connectTimeout: 10_000,
        requestTimeout: 30_000,
        ...(to.tls ? { tls: to.secrets.caBundle === undefined ? {} : { ca: to.secrets.caBundle } } : {}),
        ...(to.sasl ? { sasl: { mechanism: to.sasl.mechanism, username: to.sasl.username, password: to.secrets.password ?? '' } } : {}),
      });
      producers.set(key, producer);
      coalescers.set(producer, createProduceCoalescer(producer));
    }
    return producer;
  };

  /** one record alone in its request (KAFKA_PRODUCE=single) */
  const produceOne = async (producer: KafkaProducer, topic: string, record: ProduceRecord): Promise<Produced> => {
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

  const publish = async (
    producer: KafkaProducer,
    message: Message,
    to: KafkaTarget,
    attempt: AttemptState,
    elapsed: () => number,
  ): Promise<DeliveryOutcome> => {
    const refused = await refusedAddress(producer, to);
    if (refused !== null) return brokerFailureOutcome(refused, elapsed());
    const parts = kafkaRecordParts(message);
    const record: ProduceRecord = {
      value: message.body,
      ...(parts.key === null ? {} : { key: Buffer.from(parts.key) }),
      headers: new Map(parts.headers.map(([name, value]) => [Buffer.from(name), Buffer.from(value)])),
    };
    const coalescer = coalesced ? coalescers.get(producer) : undefined;
    const produced = coalescer ? await coalescer.produce(to.topic, record, attempt) : await produceOne(producer, to.topic, record);
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
      const producer = producerFor(to);
      const attempt: AttemptState = { abandoned: false, deadline: started + timeoutMs, timeoutMs };
      // one deadline for the attempt, the address checks and the produce together; a record still
      // waiting for its request when it passes is never sent (one in a request already may be written)
      return withDeadline(publish(producer, message, to, attempt, elapsed), timeoutMs, () => {
        attempt.abandoned = true;
        return brokerFailureOutcome(
          { code: 'broker_unavailable', detail: `no acknowledgement within ${timeoutMs} ms`, timedOut: true },
          elapsed(),
        );
      });
    },
    async close() {
      const all = [...producers.values()];
      producers.clear();
      await Promise.allSettled(all.map((p) => p.close()));
    },
  };
}

/** One producer per cluster, TLS and credentials; the password only as a digest, never kept as a key. */
function producerKey(to: KafkaTarget): string {
  const digest = (v: string | undefined) => (v === undefined ? '' : createHash('sha256').update(v).digest('hex'));
  return JSON.stringify([
    to.bootstrapServers,
    to.tls !== null,
    digest(to.secrets.caBundle),
    to.sasl?.mechanism,
    to.sasl?.username,
    digest(to.secrets.password),
  ]);
}
