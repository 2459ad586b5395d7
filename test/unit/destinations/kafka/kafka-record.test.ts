import { describe, expect, it } from 'vitest';
import { kafkaRecordParts } from '../../../../src/destinations/kafka/kafka-record.js';
import { brokerMessage } from '../broker-message.js';

describe("a message as a Kafka record (CloudEvents' Kafka binding)", () => {
  it.each([
    {
      name: 'binary: ce_ headers, content-type, then the signature and X-Webhook-* headers; no key',
      message: brokerMessage(),
      key: null,
      headers: [
        ['ce_specversion', '1.0'],
        ['ce_id', 'e-1'],
        ['ce_source', '/webhook-fanout/stripe'],
        ['ce_type', 'order.created'],
        ['ce_time', '2026-11-29T05:00:00.000Z'],
        ['content-type', 'application/json'],
        ['X-Webhook-Signature', 'c2ln'],
        ['X-Webhook-Event-Id', 'e-1'],
      ],
    },
    {
      name: 'structured: only the format as content-type (the body is the event)',
      message: brokerMessage({ format: 'CloudEventsStructured', contentType: 'application/cloudevents+json; charset=utf-8', headers: {} }),
      key: null,
      headers: [['content-type', 'application/cloudevents+json; charset=utf-8']],
    },
    {
      name: 'ordered: the ordering key is the record key and ce_partitionkey; the trace context last',
      message: brokerMessage({
        orderingKey: 'cus_42',
        contentType: null,
        headers: {},
        attributes: { id: 'e-1' },
        trace: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      }),
      key: 'cus_42',
      headers: [
        ['ce_id', 'e-1'],
        ['ce_partitionkey', 'cus_42'],
        ['traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
      ],
    },
  ])('$name', ({ message, key, headers }) => {
    expect(kafkaRecordParts(message)).toEqual({ key, headers });
  });
});
