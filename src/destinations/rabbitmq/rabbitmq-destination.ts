import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import amqp, { type ChannelModel } from 'amqplib';
import type { AddressPolicy } from '../../delivery/address-policy.js';
import type { RabbitMqTarget } from '../../delivery/broker-targets.js';
import { createGuardedLookup } from '../../delivery/guarded-lookup.js';
import type { Destination } from '../../delivery/destination.js';
import type { DeliveryOutcome } from '../../delivery/types.js';
import { hostOf, refusedBrokerHost } from '../broker-address.js';
import { brokerFailureOutcome, brokerSuccess, withDeadline, type BrokerFailure } from '../broker-outcome.js';
import { amqpPublishOf } from './amqp-message.js';
import { classifyAmqpError } from './classify.js';

/**
 * The RabbitMQ destination: one persistent, mandatory message per attempt on a confirm channel,
 * success being the broker's publisher confirm. A connection per broker and credentials, made on
 * first use and made again after it closes; a channel per publish, because the server answers a
 * bad publish (no such exchange, over max_message_size) by closing the channel, which would fail
 * every other publish on it with that reason. A message no queue is bound for comes back
 * (mandatory): retried, not counted delivered.
 */
export function createRabbitMqDestination(opts: { addressPolicy: AddressPolicy }): Destination<RabbitMqTarget> {
  const connections = new Map<string, Promise<ChannelModel>>();
  // every socket resolves through the outbound address policy, reconnections too
  const lookup = createGuardedLookup(opts.addressPolicy);

  const connectionFor = (to: RabbitMqTarget): Promise<ChannelModel> => {
    const key = connectionKey(to);
    let conn = connections.get(key);
    if (conn === undefined) {
      conn = amqp
        .connect(connectUrl(to), {
          lookup,
          ...(to.tls && to.secrets.caBundle !== undefined ? { ca: [to.secrets.caBundle] } : {}),
          clientProperties: { connection_name: 'webhook-fanout' },
        })
        .then((c) => {
          // a closed connection (the broker stopped, a network error) is made again by the next publish
          c.on('close', () => {
            if (connections.get(key) === conn) connections.delete(key);
          });
          c.on('error', () => undefined);
          return c;
        });
      conn.catch(() => {
        if (connections.get(key) === conn) connections.delete(key);
      });
      connections.set(key, conn);
    }
    return conn;
  };

  const publish = async (
    message: Parameters<Destination<RabbitMqTarget>['send']>[0],
    to: RabbitMqTarget,
    elapsed: () => number,
  ): Promise<DeliveryOutcome> => {
    const p = amqpPublishOf(message, to.routingKey);
    let channelError: unknown;
    let returned: string | undefined;
    // an IP literal never goes through lookup
    const refused = await refusedBrokerHost(opts.addressPolicy, [hostOf(to.url)]);
    if (refused !== null) return brokerFailureOutcome(refused, elapsed());
    let channel;
    try {
      channel = await (await connectionFor(to)).createConfirmChannel();
    } catch (err) {
      return brokerFailureOutcome(classifyAmqpError(err), elapsed());
    }
    channel.on('error', (err: unknown) => {
      channelError = err;
    });
    channel.on('return', (m: { fields: { replyCode: number; replyText: string } }) => {
      returned = `${m.fields.replyCode} ${m.fields.replyText}`;
    });
    try {
      await new Promise<void>((resolve, reject) => {
        channel.publish(
          to.exchange,
          p.routingKey,
          message.body,
          { persistent: true, mandatory: true, contentType: p.contentType, messageId: p.messageId, headers: p.headers },
          (err: unknown) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve()),
        );
      });
    } catch (err) {
      // the confirm callback says only "channel closed" or "message nacked": the channel's error says why
      const failure: BrokerFailure =
        channelError !== undefined
          ? classifyAmqpError(channelError)
          : /nack/i.test(String(err))
            ? { code: 'broker_error', detail: 'the broker nacked the message (it could not take responsibility for it)' }
            : classifyAmqpError(err);
      return brokerFailureOutcome(failure, elapsed());
    } finally {
      channel.close().catch(() => undefined);
    }
    if (returned !== undefined)
      return brokerFailureOutcome(
        {
          code: 'broker_unroutable',
          detail: `returned ${returned}: no queue is bound to exchange ${JSON.stringify(to.exchange)} for routing key ${JSON.stringify(p.routingKey)}`,
        },
        elapsed(),
      );
    return brokerSuccess(
      { messageId: p.messageId },
      `confirmed by exchange ${JSON.stringify(to.exchange)}, routing key ${JSON.stringify(p.routingKey)}`,
      elapsed(),
    );
  };

  return {
    async send(message, to, { timeoutMs }) {
      const started = performance.now();
      const elapsed = (): number => Math.round(performance.now() - started);
      return withDeadline(publish(message, to, elapsed), timeoutMs, () =>
        brokerFailureOutcome({ code: 'broker_unavailable', detail: `no confirm within ${timeoutMs} ms`, timedOut: true }, elapsed()),
      );
    },
    async close() {
      const all = [...connections.values()];
      connections.clear();
      await Promise.allSettled(all.map(async (c) => (await c).close()));
    },
  };
}

/** The target's URL with its credentials, which the target keeps apart (never in a log or a span). */
function connectUrl(to: RabbitMqTarget): string {
  const url = new URL(to.url);
  if (to.username !== null) url.username = encodeURIComponent(to.username);
  if (to.secrets.password !== undefined) url.password = encodeURIComponent(to.secrets.password);
  return url.toString();
}

function connectionKey(to: RabbitMqTarget): string {
  const digest = (v: string | undefined) => (v === undefined ? '' : createHash('sha256').update(v).digest('hex'));
  return JSON.stringify([to.url, to.username, digest(to.secrets.password), to.tls !== null, digest(to.secrets.caBundle)]);
}
