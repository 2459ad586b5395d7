import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { jetstream } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import type { NatsTarget } from '../../delivery/broker-targets.js';
import type { Destination } from '../../delivery/destination.js';
import { hostOf, refusedBrokerHost } from '../broker-address.js';
import { brokerFailureOutcome, brokerSuccess, withDeadline } from '../broker-outcome.js';
import { classifyNatsError } from './classify.js';
import { natsHeadersOf } from './nats-message.js';

/**
 * The NATS destination: a JetStream publish per attempt, success being the stream's ack (its
 * sequence the receipt), `Nats-Msg-Id` the event id so a retry or replay within the stream's
 * duplicate window is stored once (the ack then says duplicate). A connection per servers and
 * credentials, made on first use; it reconnects by itself, and a closed one is made again.
 */
export function createNatsDestination(opts: { addressPolicy: AddressPolicy; name?: string }): Destination<NatsTarget> {
  const connections = new Map<string, Promise<NatsConnection>>();

  const connectionFor = (to: NatsTarget): Promise<NatsConnection> => {
    const key = connectionKey(to);
    let conn = connections.get(key);
    if (conn === undefined) {
      conn = connect({
        servers: [...to.servers],
        name: opts.name ?? 'webhook-fanout',
        ...(to.username !== null ? { user: to.username, pass: to.secrets.password ?? '' } : {}),
        ...(to.username === null && to.secrets.token !== undefined ? { token: to.secrets.token } : {}),
        ...(to.tls ? { tls: to.secrets.caBundle === undefined ? {} : { ca: to.secrets.caBundle } } : {}),
        // only the servers the target names (checked against the address policy), never ones a cluster gossips
        ignoreClusterUpdates: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 1_000,
      });
      const made = conn;
      made.then(
        (nc) => {
          void nc.closed().then(() => {
            if (connections.get(key) === made) connections.delete(key);
          });
        },
        () => {
          if (connections.get(key) === made) connections.delete(key);
        },
      );
      connections.set(key, made);
    }
    return conn;
  };

  return {
    async send(message, to, { timeoutMs }) {
      const started = performance.now();
      const elapsed = (): number => Math.round(performance.now() - started);
      const publish = (async () => {
        try {
          const refused = await refusedBrokerHost(opts.addressPolicy, to.servers.map(hostOf));
          if (refused !== null) return brokerFailureOutcome(refused, elapsed());
          const nc = await connectionFor(to);
          const h = natsHeaders();
          for (const [name, value] of natsHeadersOf(message)) h.set(name, value);
          const ack = await jetstream(nc).publish(to.subject, message.body, {
            msgID: message.deduplicationId,
            headers: h,
            timeout: timeoutMs,
          });
          return brokerSuccess(
            { sequence: String(ack.seq) },
            `stream ${ack.stream} sequence ${ack.seq}${ack.duplicate ? ' (a duplicate of the event id: stored once)' : ''}`,
            elapsed(),
          );
        } catch (err) {
          return brokerFailureOutcome(classifyNatsError(err), elapsed());
        }
      })();
      return withDeadline(publish, timeoutMs + 1_000, () =>
        brokerFailureOutcome({ code: 'broker_unavailable', detail: `no JetStream ack within ${timeoutMs} ms`, timedOut: true }, elapsed()),
      );
    },
    async close() {
      const all = [...connections.values()];
      connections.clear();
      await Promise.allSettled(all.map(async (c) => (await c).drain()));
    },
  };
}

function connectionKey(to: NatsTarget): string {
  const digest = (v: string | undefined) => (v === undefined ? '' : createHash('sha256').update(v).digest('hex'));
  return JSON.stringify([
    to.servers,
    to.username,
    digest(to.secrets.password),
    digest(to.secrets.token),
    to.tls !== null,
    digest(to.secrets.caBundle),
  ]);
}
