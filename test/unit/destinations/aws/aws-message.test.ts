import { describe, expect, it } from 'vitest';
import { awsMessageOf, eventBridgeDetailOf } from '../../../../src/destinations/aws/aws-message.js';
import { brokerMessage } from '../broker-message.js';

const values = (attributes: Record<string, { StringValue: string }>): Record<string, string> =>
  Object.fromEntries(Object.entries(attributes).map(([k, v]) => [k, v.StringValue]));

const HEADERS = '{"X-Webhook-Signature":"c2ln","X-Webhook-Event-Id":"e-1"}';

describe('a message as SQS and SNS take it (text and String attributes)', () => {
  it.each([
    {
      name: 'binary: one ce- attribute each, content-type, the headers as one JSON attribute; the body as it is',
      message: brokerMessage(),
      text: '{"id":"evt_1"}',
      attributes: {
        'ce-specversion': '1.0',
        'ce-id': 'e-1',
        'ce-source': '/webhook-fanout/stripe',
        'ce-type': 'order.created',
        'ce-time': '2026-11-29T05:00:00.000Z',
        'content-type': 'application/json',
        'webhook-headers': HEADERS,
      },
    },
    {
      name: 'structured: the envelope carries the attributes, none beside it',
      message: brokerMessage({ format: 'CloudEventsStructured', contentType: 'application/cloudevents+json' }),
      text: '{"id":"evt_1"}',
      attributes: { 'content-type': 'application/cloudevents+json', 'webhook-headers': HEADERS },
    },
    {
      name: 'Raw: the attributes still go (a consumer filters on them)',
      message: brokerMessage({ format: 'Raw', attributes: { id: 'e-1', type: 'order.created' } }),
      text: '{"id":"evt_1"}',
      attributes: { 'ce-id': 'e-1', 'ce-type': 'order.created', 'content-type': 'application/json', 'webhook-headers': HEADERS },
    },
    {
      name: 'no content type, an empty attribute: left out (SQS refuses an empty value)',
      message: brokerMessage({ contentType: null, attributes: { id: 'e-1', subject: '' }, headers: {} }),
      text: '{"id":"evt_1"}',
      attributes: { 'ce-id': 'e-1', 'webhook-headers': '{}' },
    },
    {
      name: 'text with tabs and newlines: as it is',
      message: brokerMessage({ body: Buffer.from('a\tb\r\nc é 😀'), attributes: {}, headers: {} }),
      text: 'a\tb\r\nc é 😀',
      attributes: { 'content-type': 'application/json', 'webhook-headers': '{}' },
    },
    {
      name: 'bytes that are not UTF-8: base64, and said so',
      message: brokerMessage({
        body: Buffer.from([0xff, 0xfe, 0x00, 0x41]),
        contentType: 'application/octet-stream',
        attributes: {},
        headers: {},
      }),
      text: '//4AQQ==',
      attributes: { 'content-type': 'application/octet-stream', 'webhook-headers': '{}', 'content-transfer-encoding': 'base64' },
    },
    {
      name: 'UTF-8 with a control character SQS refuses: base64',
      message: brokerMessage({ body: Buffer.from('bell\u0007'), attributes: {}, headers: {} }),
      text: Buffer.from('bell\u0007').toString('base64'),
      attributes: { 'content-type': 'application/json', 'webhook-headers': '{}', 'content-transfer-encoding': 'base64' },
    },
    {
      name: 'UTF-8 with U+FFFF (not an XML character): base64',
      message: brokerMessage({ body: Buffer.from('x\uffff'), attributes: {}, headers: {} }),
      text: Buffer.from('x\uffff').toString('base64'),
      attributes: { 'content-type': 'application/json', 'webhook-headers': '{}', 'content-transfer-encoding': 'base64' },
    },
  ])('$name', ({ message, text, attributes }) => {
    const out = awsMessageOf(message);
    expect(out.text).toBe(text);
    expect(values(out.attributes)).toEqual(attributes);
    expect(Object.values(out.attributes).every((a) => a.DataType === 'String')).toBe(true);
  });

  it('a whole binary-mode message stays within the 10 attributes SQS and SNS take', () => {
    const all = awsMessageOf(brokerMessage({ body: Buffer.from([0xff]) }));
    expect(Object.keys(all.attributes).length).toBeLessThanOrEqual(10);
  });
});

describe("a message as EventBridge's Detail (a JSON object)", () => {
  it.each([
    {
      name: 'a JSON body: parsed into data, so rules match its fields',
      message: brokerMessage({ attributes: { id: 'e-1', type: 'order.created' } }),
      detail: {
        id: 'e-1',
        type: 'order.created',
        datacontenttype: 'application/json',
        data: { id: 'evt_1' },
        headers: { 'X-Webhook-Signature': 'c2ln', 'X-Webhook-Event-Id': 'e-1' },
      },
    },
    {
      name: 'a text body that is not JSON: data as a string',
      message: brokerMessage({ body: Buffer.from('plain words'), contentType: 'text/plain', attributes: { id: 'e-1' }, headers: {} }),
      detail: { id: 'e-1', datacontenttype: 'text/plain', data: 'plain words', headers: {} },
    },
    {
      name: 'bytes that are not UTF-8: data_base64',
      message: brokerMessage({ body: Buffer.from([0xff, 0x00]), contentType: null, attributes: { id: 'e-1' }, headers: {} }),
      detail: { id: 'e-1', data_base64: '/wA=', headers: {} },
    },
    {
      name: 'an empty body: no data',
      message: brokerMessage({ body: Buffer.alloc(0), contentType: null, attributes: { id: 'e-1' }, headers: {} }),
      detail: { id: 'e-1', headers: {} },
    },
    {
      name: 'a JSON scalar body: data is the scalar',
      message: brokerMessage({ body: Buffer.from('42'), attributes: {}, headers: {} }),
      detail: { datacontenttype: 'application/json', data: 42, headers: {} },
    },
  ])('$name', ({ message, detail }) => {
    expect(JSON.parse(eventBridgeDetailOf(message))).toEqual(detail);
  });
});
