import { HTTP } from 'cloudevents';
import { describe, expect, it } from 'vitest';
import { formatBody, UNTYPED_EVENT_TYPE, type EventAttributes, type Payload } from '../../../src/delivery/body-format.js';
import type { EndpointFormat } from '../../../src/domain/records.js';

// What a receiver reads with the official SDK (HTTP.toEvent) from what formatBody makes, as the
// sender would put it on the wire (the format's headers and Content-Type, the body's bytes).

const EVENT: EventAttributes = {
  id: '0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10',
  source: 'stripe',
  type: 'invoice.paid',
  time: new Date('2026-11-27T08:15:30.123Z'),
};

const receive = (format: EndpointFormat, payload: Payload, event = EVENT) => {
  const out = formatBody(format, payload, event);
  const headers = { ...out.headers, ...(out.contentType ? { 'content-type': out.contentType } : {}) };
  return {
    out,
    ce: HTTP.toEvent({ headers, body: out.body.toString('utf8') }) as ReturnType<typeof HTTP.toEvent> & Record<string, unknown>,
  };
};

const json = (s: string): Payload => ({ body: Buffer.from(s), contentType: 'application/json' });

describe('formatBody', () => {
  it('Raw: the payload as it is, no headers of its own', () => {
    const payload = json('{"a": 1}');
    expect(formatBody('Raw', payload, EVENT)).toEqual({ ...payload, headers: {} });
  });

  it.each(['CloudEventsBinary', 'CloudEventsStructured'] as const)('%s: the attributes a receiver reads with the SDK', (format) => {
    const { ce } = receive(format, json('{"id":"in_1","amount":1999}'));
    expect(ce).toMatchObject({
      specversion: '1.0',
      id: EVENT.id,
      source: '/webhook-fanout/stripe',
      type: 'invoice.paid',
      time: '2026-11-27T08:15:30.123Z',
      datacontenttype: 'application/json',
      data: { id: 'in_1', amount: 1999 },
    });
  });

  it('binary: the body is the stored bytes, Content-Type the stored one, the attributes ce- headers', () => {
    const payload = { body: Buffer.from('{ "kept" :  "as sent" }'), contentType: 'application/json; charset=utf-8' };
    const out = formatBody('CloudEventsBinary', payload, EVENT);
    expect(out.body.equals(payload.body)).toBe(true);
    expect(out.contentType).toBe('application/json; charset=utf-8');
    expect(out.headers).toEqual({
      'ce-specversion': '1.0',
      'ce-id': EVENT.id,
      'ce-source': '/webhook-fanout/stripe',
      'ce-type': 'invoice.paid',
      'ce-time': '2026-11-27T08:15:30.123Z',
    });
  });

  it('structured: JSON data goes into the envelope as the very bytes received', () => {
    const out = formatBody('CloudEventsStructured', json('{"n": 1.50, "z": 1, "a": 2}'), EVENT);
    expect(out.contentType).toBe('application/cloudevents+json; charset=utf-8');
    expect(out.headers).toEqual({});
    expect(out.body.toString()).toContain('"data":{"n": 1.50, "z": 1, "a": 2}}');
  });

  it.each<[string, Payload, Record<string, unknown>]>([
    ['text as a string', { body: Buffer.from('héllo, wörld'), contentType: 'text/plain; charset=utf-8' }, { data: 'héllo, wörld' }],
    ['XML as a string', { body: Buffer.from('<a>1</a>'), contentType: 'application/xml' }, { data: '<a>1</a>' }],
    [
      'bytes as data_base64',
      { body: Buffer.from([0, 0xff, 0x80, 1]), contentType: 'application/octet-stream' },
      { data_base64: Buffer.from([0, 0xff, 0x80, 1]).toString('base64'), datacontenttype: 'application/octet-stream' },
    ],
    ['no content type: bytes', { body: Buffer.from('abc'), contentType: null }, { datacontenttype: 'application/octet-stream' }],
    ['an empty body: no data', { body: Buffer.alloc(0), contentType: 'application/json' }, { data: undefined, datacontenttype: undefined }],
  ])('structured: %s', (_what, payload, expected) => {
    const { out } = receive('CloudEventsStructured', payload);
    expect(JSON.parse(out.body.toString())).toMatchObject(Object.fromEntries(Object.entries(expected).filter(([, v]) => v !== undefined)));
    for (const [k, v] of Object.entries(expected)) if (v === undefined) expect(JSON.parse(out.body.toString())).not.toHaveProperty(k);
  });

  it.each(['CloudEventsBinary', 'CloudEventsStructured'] as const)(
    '%s: a stored structured CloudEvent is not wrapped twice: its data goes on under our attributes',
    (format) => {
      const inbound = {
        body: Buffer.from(
          JSON.stringify({
            specversion: '1.0',
            id: 'theirs',
            source: '/shop',
            type: 'order.created',
            datacontenttype: 'application/json',
            data: { o: 7 },
          }),
        ),
        contentType: 'application/cloudevents+json',
      };
      const { ce } = receive(format, inbound, { ...EVENT, type: 'order.created' });
      expect(ce).toMatchObject({ id: EVENT.id, source: '/webhook-fanout/stripe', type: 'order.created', data: { o: 7 } });
    },
  );

  it('an event without a type gets the documented one; a non-ASCII type is percent-encoded in binary mode (HTTP binding 3.1.3.2)', () => {
    expect(receive('CloudEventsBinary', json('{}'), { ...EVENT, type: null }).ce.type).toBe(UNTYPED_EVENT_TYPE);
    const { out, ce } = receive('CloudEventsBinary', json('{}'), { ...EVENT, type: 'commande.créée "x" 100%' });
    expect(out.headers['ce-type']).toBe('commande.cr%C3%A9%C3%A9e%20%22x%22%20100%25');
    // the SDK hands header values over as they are; decoding them is the binding's rule for receivers
    expect(decodeURIComponent(String(ce.type))).toBe('commande.créée "x" 100%');
  });
});
