import { AuthorizationError, InvalidArgumentError, NoRespondersError, RequestError, TimeoutError } from '@nats-io/transport-node';
import { JetStreamApiError } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { classifyNatsError } from '../../../../src/destinations/nats/classify.js';
import { natsHeadersOf, percentEncode } from '../../../../src/destinations/nats/nats-message.js';
import { brokerMessage } from '../broker-message.js';

describe("a message's NATS headers (CloudEvents' NATS binding)", () => {
  it.each([
    {
      name: 'binary: ce- headers, ce-datacontenttype, Content-Type, then the signature and X-Webhook-* headers',
      message: brokerMessage({ attributes: { id: 'e-1', type: 'order.created' } }),
      headers: [
        ['ce-id', 'e-1'],
        ['ce-type', 'order.created'],
        ['ce-datacontenttype', 'application/json'],
        ['Content-Type', 'application/json'],
        ['X-Webhook-Signature', 'c2ln'],
        ['X-Webhook-Event-Id', 'e-1'],
      ],
    },
    {
      name: 'structured: Content-Type names the format',
      message: brokerMessage({ format: 'CloudEventsStructured', contentType: 'application/cloudevents+json', headers: {} }),
      headers: [['Content-Type', 'application/cloudevents+json']],
    },
    {
      name: 'values the binding percent-encodes',
      message: brokerMessage({ attributes: { type: 'Euro € 😀' }, contentType: 'text/plain; charset="utf-8"', headers: {} }),
      headers: [
        ['ce-type', 'Euro%20%E2%82%AC%20%F0%9F%98%80'],
        ['ce-datacontenttype', 'text/plain;%20charset=%22utf-8%22'],
        ['Content-Type', 'text/plain; charset="utf-8"'],
      ],
    },
  ])('$name', ({ message, headers }) => {
    expect(natsHeadersOf(message)).toEqual(headers);
  });

  it.each([
    ['plain', 'plain'],
    ['100%', '100%25'],
    ['a"b', 'a%22b'],
    ['tab\there', 'tab%09here'],
  ])('percentEncode(%j) is %j', (value, encoded) => {
    expect(percentEncode(value)).toBe(encoded);
  });
});

describe("NATS's errors, classified", () => {
  it.each([
    { name: 'a refused user', err: new AuthorizationError('Authorization Violation'), code: 'broker_auth_refused' },
    {
      name: 'no stream takes the subject',
      // as the client throws it (its JetStreamNotEnabled is not exported)
      err: Object.assign(
        new Error('jetstream is not enabled', { cause: new RequestError("no responders: 'x'", { cause: new NoRespondersError('x') }) }),
        {
          name: 'JetStreamNotEnabled',
        },
      ),
      code: 'broker_unknown_destination',
    },
    { name: 'over max_payload', err: new InvalidArgumentError("'payload' max_payload size exceeded"), code: 'broker_message_too_large' },
    {
      name: "over the stream's max_msg_size",
      err: new JetStreamApiError({ code: 400, err_code: 10054, description: 'message size exceeds maximum allowed' }),
      code: 'broker_message_too_large',
    },
    { name: 'no ack in time', err: new TimeoutError(), code: 'broker_unavailable' },
    {
      name: 'JetStream unavailable',
      err: new JetStreamApiError({ code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' }),
      code: 'broker_unavailable',
    },
    { name: 'anything else', err: new Error('boom'), code: 'broker_error' },
  ])('$name: $code', ({ err, code }) => {
    expect(classifyNatsError(err).code).toBe(code);
  });
});
