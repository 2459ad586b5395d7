import type { Message } from '../../delivery/message.js';
import { attributeHeaders, commonHeaders } from '../binding-headers.js';

/** What amqplib's publish takes beside the body: the routing key and the message's properties. */
export interface AmqpPublish {
  routingKey: string;
  contentType: string | undefined;
  messageId: string;
  headers: Record<string, string>;
}

/**
 * A message as RabbitMQ carries it, per CloudEvents' AMQP protocol binding: the body's media type
 * as the `content-type` property; in binary mode each attribute as a `cloudEvents_<name>` header
 * (the binding's separator preferred for JMS clients; `cloudEvents:` is the other it allows), none
 * in structured mode. The event id is the message id (a consumer de-duplicates on it; RabbitMQ
 * does not). The endpoint's routing key when it has one; else an ordered endpoint routes by its
 * ordering key (a consistent-hash or topic exchange keeps one key on one queue), and an unordered
 * one by the event's type. Then the signature and X-Webhook-* headers, and the trace context.
 */
export function amqpPublishOf(message: Message, routingKey: string | null): AmqpPublish {
  const headers: Record<string, string> = {};
  for (const [name, value] of [...attributeHeaders(message, 'cloudEvents_'), ...commonHeaders(message)]) headers[name] = value;
  return {
    routingKey: routingKey ?? message.orderingKey ?? message.meta.eventType ?? '',
    contentType: message.contentType ?? undefined,
    messageId: message.deduplicationId,
    headers,
  };
}
