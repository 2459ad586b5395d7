import { describe, expect, it } from 'vitest';
import { amqpPublishOf } from '../../../../src/destinations/rabbitmq/amqp-message.js';
import { classifyAmqpError } from '../../../../src/destinations/rabbitmq/classify.js';
import { brokerMessage } from '../broker-message.js';

describe("a message as RabbitMQ publishes it (CloudEvents' AMQP binding)", () => {
  it.each([
    {
      name: 'binary: cloudEvents_ headers, content-type property, the event id as message id',
      message: brokerMessage(),
      configured: 'payments',
      routingKey: 'payments',
      headers: {
        cloudEvents_specversion: '1.0',
        cloudEvents_id: 'e-1',
        cloudEvents_source: '/webhook-fanout/stripe',
        cloudEvents_type: 'order.created',
        cloudEvents_time: '2026-11-29T05:00:00.000Z',
        'X-Webhook-Signature': 'c2ln',
        'X-Webhook-Event-Id': 'e-1',
      },
      contentType: 'application/json',
    },
    {
      name: 'structured: no attribute headers',
      message: brokerMessage({ format: 'CloudEventsStructured', contentType: 'application/cloudevents+json', headers: {} }),
      configured: null,
      // no routing key configured and unordered: the event's type
      routingKey: 'order.created',
      headers: {},
      contentType: 'application/cloudevents+json',
    },
    {
      name: 'ordered, no routing key configured: routed by the ordering key',
      message: brokerMessage({ orderingKey: 'cus_42', contentType: null, headers: {}, attributes: {} }),
      configured: null,
      routingKey: 'cus_42',
      headers: {},
      contentType: undefined,
    },
  ])('$name', ({ message, configured, routingKey, headers, contentType }) => {
    expect(amqpPublishOf(message, configured)).toEqual({ routingKey, headers, contentType, messageId: 'e-1' });
  });
});

describe("RabbitMQ's errors, classified", () => {
  it.each([
    {
      err: Object.assign(
        new Error("Channel closed by server: 404 (NOT-FOUND) with message \"NOT_FOUND - no exchange 'nope' in vhost '/'\""),
        { code: 404 },
      ),
      code: 'broker_unknown_destination',
    },
    {
      err: Object.assign(
        new Error(
          'Channel closed by server: 406 (PRECONDITION-FAILED) with message "PRECONDITION_FAILED - message size 70000 is larger than configured max size 65536"',
        ),
        {
          code: 406,
        },
      ),
      code: 'broker_message_too_large',
    },
    {
      err: new Error('Handshake terminated by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - Login was refused"'),
      code: 'broker_auth_refused',
    },
    { err: Object.assign(new Error('Channel closed by server: 403 (ACCESS-REFUSED)'), { code: 403 }), code: 'broker_auth_refused' },
    { err: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5672'), { code: 'ECONNREFUSED' }), code: 'broker_unavailable' },
    { err: new Error('Connection closed (Error: Connection closed: 320 (CONNECTION-FORCED))'), code: 'broker_unavailable' },
    {
      err: Object.assign(new Error('Channel closed by server: 406 (PRECONDITION-FAILED) with message "inequivalent arg"'), { code: 406 }),
      code: 'broker_error',
    },
  ])('$code: $err.message', ({ err, code }) => {
    expect(classifyAmqpError(err)).toEqual({ code, detail: err.message });
  });
});
