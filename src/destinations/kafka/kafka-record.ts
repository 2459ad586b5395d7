import type { Message } from '../../delivery/message.js';
import { attributeHeaders, commonHeaders } from '../binding-headers.js';

/** A Kafka record's key and headers, as strings (the destination sends them as UTF-8). */
export interface KafkaRecordParts {
  /** the ordering key (an ordered endpoint's records of one key share a partition); null: none, the producer spreads them */
  key: string | null;
  headers: [string, string][];
}

/**
 * The record of a message, per CloudEvents' Kafka protocol binding: in binary mode each attribute
 * as a `ce_<name>` header and the body's media type as `content-type`; in structured mode the
 * body is the event and `content-type` names its format. The ordering key is the record's key and,
 * as the binding's partitioning extension says, `ce_partitionkey`. Then the signature and
 * X-Webhook-* headers, and the trace context.
 */
export function kafkaRecordParts(message: Message): KafkaRecordParts {
  const headers: [string, string][] = attributeHeaders(message, 'ce_');
  if (message.orderingKey !== null && message.format !== 'CloudEventsStructured') headers.push(['ce_partitionkey', message.orderingKey]);
  if (message.contentType !== null) headers.push(['content-type', message.contentType]);
  headers.push(...commonHeaders(message));
  return { key: message.orderingKey, headers };
}
