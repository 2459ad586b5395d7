import { createHmac, randomBytes } from 'node:crypto';
import { HTTP } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import { targetOf, type Destinations } from '../../src/delivery/destination.js';
import { messageOf } from '../../src/delivery/message.js';
import { createDestinations } from '../../src/destinations/index.js';
import type { Delivery, Endpoint, EndpointFormat, WebhookEvent } from '../../src/domain/records.js';
import { startReceiver, type RecordedRequest, type Receiver } from '../support/receiver.js';

// The request of an endpoint with a CloudEvents format, built from rows as the deliver activity
// loads them, sent by the real sender to a real HTTP receiver that reads it with the official SDK
// (HTTP.toEvent) and checks the signature over the bytes it received.

const received = new Date('2026-11-27T08:15:30.123Z');
const event = (over: Partial<WebhookEvent> = {}): WebhookEvent => ({
  id: '0b8f7e0c-6a51-4a4e-9a57-6d1f3c1e2a10',
  source: 'stripe',
  externalEventId: 'evt_1',
  eventType: 'invoice.paid',
  payload: Buffer.from('{"id":"evt_1","type":"invoice.paid","amount":1999}'),
  contentType: 'application/json',
  headers: {},
  status: 'RECEIVED',
  workflowId: null,
  publishedAt: null,
  receivedAt: received,
  completedAt: null,
  traceparent: null,
  payloadDroppedAt: null,
  ...over,
});
const delivery: Delivery = {
  id: '5d2c0f3e-1a7b-4c55-8d8e-2b9f0a6c7e31',
  eventId: event().id,
  endpointId: 'e1',
  status: 'PENDING',
  attempts: 0,
  lastResponseStatus: null,
  lastResponseBody: null,
  lastError: null,
  lastAttemptAt: null,
  completedAt: null,
  createdAt: received,
  ordering: null,
};
const endpoint = (url: string, format: EndpointFormat, over: Partial<Endpoint> = {}): Endpoint => ({
  id: 'e1',
  ordering: null,
  name: 'payments/orders',
  source: 'stripe',
  eventType: null,
  url,
  method: 'POST',
  authType: 'NONE',
  authUsername: null,
  authSecret: null,
  authOAuth2: null,
  signingType: 'NONE',
  signingSecret: null,
  previousSigningSecret: null,
  signingPublicKeys: [],
  tlsClientCertificate: null,
  tlsClientKey: null,
  tlsCaBundle: null,
  tlsClientCertificateExpiresAt: null,
  proxyDirect: false,
  customHeaders: { 'ce-id': 'a custom header can not replace an attribute' },
  maxAttempts: 5,
  timeoutSeconds: 10,
  retryOnStatus: [],
  rateLimitPerSecond: null,
  maxConcurrency: null,
  pausedUntil: null,
  active: true,
  autoDisableAfter: 0,
  propagateTraceContext: true,
  format,
  filter: null,
  transform: null,
  destination: { type: 'HTTP' },
  destinationSecrets: {},
  consecutiveFailures: 0,
  disabledAt: null,
  tokenRefusal: null,
  tokenUnavailable: null,
  namespace: 'payments',
  deniedReason: null,
  resourceUid: null,
  createdAt: received,
  updatedAt: received,
  ...over,
});

const headersOf = (r: RecordedRequest): Record<string, string> =>
  Object.fromEntries(Object.entries(r.headers).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v]] : [])));
const toEvent = (r: RecordedRequest) => HTTP.toEvent({ headers: headersOf(r), body: r.body.toString('utf8') }) as Record<string, unknown>;

let destinations: Destinations;
/** One attempt as the deliver activity makes it: the message of the rows, to the endpoint's target. */
const sendAttempt = (d: Delivery, e: Endpoint, ev: WebhookEvent, n: number) =>
  destinations.send(messageOf(d, e, ev, n), targetOf(e), { timeoutMs: 5_000 });
let receiver: Receiver;
beforeAll(async () => {
  destinations = createDestinations({ addressPolicy: createAddressPolicy() });
  receiver = await startReceiver();
});
afterAll(async () => {
  await destinations.close();
  await receiver.close();
});
afterEach(() => {
  receiver.requests.length = 0;
});

describe('CloudEvents out, read by the SDK at a real receiver', () => {
  it.each(['CloudEventsBinary', 'CloudEventsStructured'] as const)(
    '%s: id, source, type, time, datacontenttype and data as the SDK reads them; the same id on every attempt',
    async (format) => {
      for (const attempt of [1, 2]) {
        const outcome = await sendAttempt(delivery, endpoint(receiver.url, format), event(), attempt);
        expect(outcome.kind).toBe('success');
      }
      const [first, second] = receiver.requests.map(toEvent);
      expect(first).toMatchObject({
        specversion: '1.0',
        id: event().id,
        source: '/webhook-fanout/stripe',
        type: 'invoice.paid',
        time: received.toISOString(),
        datacontenttype: 'application/json',
        data: { id: 'evt_1', type: 'invoice.paid', amount: 1999 },
      });
      expect(second?.id).toBe(first?.id);
      // the service's own headers stay, as for a Raw endpoint
      expect(receiver.requests[0]?.headers['x-webhook-attempt']).toBe('1');
    },
  );

  it('Raw (the default) sends the stored bytes as before: no ce- attributes', async () => {
    await sendAttempt(delivery, endpoint(receiver.url, 'Raw', { customHeaders: {} }), event(), 1);
    const [r] = receiver.requests;
    expect(r?.body.toString()).toBe(event().payload.toString());
    expect(r?.headers['content-type']).toBe('application/json');
    expect(Object.keys(r?.headers ?? {}).filter((h) => h.startsWith('ce-'))).toEqual([]);
  });

  it.each(['CloudEventsBinary', 'CloudEventsStructured'] as const)(
    '%s with HMAC: the signature is over the exact bytes sent',
    async (format) => {
      const secret = 'hmac-secret';
      const ep = endpoint(receiver.url, format, { signingType: 'HMAC', signingSecret: secret });
      await sendAttempt(delivery, ep, event(), 1);
      const [r] = receiver.requests;
      expect(r?.headers['x-webhook-signature']).toBe(createHmac('sha256', secret).update(r!.body).digest('base64'));
      expect(toEvent(r!).id).toBe(event().id);
    },
  );

  it.each(['CloudEventsBinary', 'CloudEventsStructured'] as const)(
    '%s with Standard Webhooks: the library verifies the bytes received',
    async (format) => {
      const key = `whsec_${randomBytes(24).toString('base64')}`;
      const ep = endpoint(receiver.url, format, { signingType: 'STANDARD_WEBHOOKS', signingSecret: key });
      await sendAttempt(delivery, ep, event(), 1);
      const [r] = receiver.requests;
      expect(() => new Webhook(key).verify(r!.body, headersOf(r!))).not.toThrow();
      expect(toEvent(r!).type).toBe('invoice.paid');
    },
  );

  it('binary bytes in structured mode arrive as data_base64, and the SDK gives them back', async () => {
    const bytes = Buffer.from([0, 0xff, 0xfe, 0x80, 0x41]);
    await sendAttempt(
      delivery,
      endpoint(receiver.url, 'CloudEventsStructured'),
      event({ payload: bytes, contentType: 'application/octet-stream' }),
      1,
    );
    const ce = toEvent(receiver.requests[0]!);
    expect(ce.datacontenttype).toBe('application/octet-stream');
    expect(ce.data_base64).toBe(bytes.toString('base64'));
  });
});
