import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CloudEvent, HTTP } from 'cloudevents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifests } from '../../src/manifests/read-manifests.js';
import { syncManifests } from '../../src/manifests/sync-manifests.js';
import { createLogger } from '../../src/observability/logger.js';
import { basic, http } from '../support/http.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startStack, type Stack } from '../support/stack.js';
import { eventually } from '../support/wait.js';

// CloudEvents sent by the official SDK (HTTP.binary, HTTP.structured) over HTTP to the real ingest
// of a source with `format: CloudEvents`, configured from manifests as dev mode reads them: stored
// with the CloudEvent's id and type, de-duplicated on the id, fanned out (through the consumer and
// the worker) to a Raw endpoint and to CloudEvents endpoints whose receiver reads each delivery
// with the SDK's HTTP.toEvent; a request that is not a CloudEvent refused with 400 problem+json
// naming the attribute it lacks, nothing stored.

const AUTH = { authorization: basic('knative', 'knative-pass') };

const manifests = (receiverUrl: string) => `apiVersion: v1
kind: Secret
metadata: {name: knative}
stringData: {password: knative-pass, signing: ce-signing-secret}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: knative}
spec:
  source: knative
  format: CloudEvents
  username: knative
  passwordSecretRef: {name: knative, key: password}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: knative-sink}
spec: {source: knative, url: "${receiverUrl}/knative", maxAttempts: 1}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ce-binary}
spec: {source: knative, url: "${receiverUrl}/ce-binary", maxAttempts: 1, format: CloudEventsBinary}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ce-structured}
spec:
  source: knative
  url: "${receiverUrl}/ce-structured"
  maxAttempts: 1
  format: CloudEventsStructured
  auth: {type: HMAC, secretRef: {name: knative, key: signing}}
`;

describe('CloudEvents in: the SDK sends to a CloudEvents source', () => {
  let stack: Stack;
  let receiver: Receiver;
  let dir: string;

  const send = (message: { headers: Record<string, unknown>; body: unknown }) =>
    http(`${stack.url}/api/webhooks/knative`, {
      headers: { ...AUTH, ...(message.headers as Record<string, string>) },
      body: message.body as string | Buffer,
    });
  const stored = async (): Promise<number> =>
    Number((await stack.t.db('webhook_event').where({ source: 'knative' }).count('* as n'))[0]?.n);
  const event = (id: string, data: unknown = { orderId: id, total: 12.5 }) =>
    new CloudEvent({ id, source: '/shop/orders', type: 'com.example.order.created', datacontenttype: 'application/json', data });

  beforeAll(async () => {
    stack = await startStack();
    receiver = await startReceiver();
    dir = await mkdtemp(path.join(tmpdir(), 'wf-ce-in-'));
    await writeFile(path.join(dir, 'knative.yaml'), manifests(receiver.url));
    const report = await syncManifests(stack.repos, await readManifests(dir), createLogger({ level: 'silent' }), {
      defaultAllowedNamespaces: 'Same',
    });
    expect(report.errors).toEqual([]);
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
    await receiver?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['binary', HTTP.binary],
    ['structured', HTTP.structured],
  ] as const)('%s mode: stored byte for byte with the id and type, delivered, a resend is a duplicate', async (mode, serialize) => {
    const ce = event(`ce-${mode}-1`);
    const message = serialize(ce);
    const res = await send(message);
    expect(res.status, res.text).toBe(200);
    const { eventId, duplicate } = res.json() as { eventId: string; duplicate: boolean };
    expect(duplicate).toBe(false);
    const row = await stack.t.db('webhook_event').where({ id: eventId }).first();
    expect(row).toMatchObject({ source: 'knative', external_event_id: ce.id, event_type: 'com.example.order.created' });
    expect(row.payload.toString()).toBe(String(message.body));
    const delivered = await eventually(async () =>
      receiver.requests.find((r) => r.path.endsWith('/knative') && r.headers['x-webhook-event-id'] === eventId),
    );
    expect(delivered.body.toString()).toBe(String(message.body));
    expect(delivered.headers['x-webhook-event-type']).toBe('com.example.order.created');
    // the sender's retry of the same CloudEvent (same id) is not delivered again
    expect((await send(message)).json()).toEqual({ eventId, duplicate: true });
  });

  it.each([
    ['binary', HTTP.binary],
    ['structured', HTTP.structured],
  ] as const)(
    'sent in %s mode, fanned out to CloudEvents endpoints: the SDK at the receiver reads our id, source, type, time and the data',
    async (mode, serialize) => {
      const data = { orderId: `fan-${mode}`, total: 99.95, items: ['a', 'b'] };
      const res = await send(serialize(event(`ce-fan-${mode}`, data)));
      expect(res.status, res.text).toBe(200);
      const { eventId } = res.json() as { eventId: string };
      const row = await stack.t.db('webhook_event').where({ id: eventId }).first('received_at');
      for (const path of ['/ce-binary', '/ce-structured']) {
        const r = await eventually(
          async () => receiver.requests.find((q) => q.path.endsWith(path) && q.headers['x-webhook-event-id'] === eventId),
          {
            what: `the ${path} delivery`,
          },
        );
        const headers = Object.fromEntries(Object.entries(r.headers).filter((e): e is [string, string] => typeof e[1] === 'string'));
        const ce = HTTP.toEvent({ headers, body: r.body.toString('utf8') }) as CloudEvent<unknown>;
        expect(ce).toMatchObject({
          specversion: '1.0',
          id: eventId,
          source: '/webhook-fanout/knative',
          type: 'com.example.order.created',
          time: (row.received_at as Date).toISOString(),
          datacontenttype: 'application/json',
          data,
        });
        if (path === '/ce-structured') {
          expect(r.headers['content-type']).toMatch(/^application\/cloudevents\+json/);
          expect(r.headers['x-webhook-signature']).toBe(createHmac('sha256', 'ce-signing-secret').update(r.body).digest('base64'));
        } else {
          expect(r.headers['ce-id']).toBe(eventId);
        }
      }
    },
  );

  it('binary mode without data (a CloudEvent may carry none) is accepted', async () => {
    const message = HTTP.binary(new CloudEvent({ id: 'ce-no-data', source: '/shop', type: 'com.example.ping' }));
    const res = await send({ headers: message.headers, body: '' });
    expect(res.status, res.text).toBe(200);
    const row = await stack.t.db('webhook_event').where({ source: 'knative', external_event_id: 'ce-no-data' }).first();
    expect(row).toMatchObject({ event_type: 'com.example.ping' });
  });

  it.each<[string, Record<string, string>, string, string]>([
    ['plain JSON, not a CloudEvent', { 'content-type': 'application/json' }, '{"id":"x","type":"y"}', '"specversion" is missing'],
    [
      'binary mode without ce-source',
      { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': 'x', 'ce-type': 'y' },
      '{}',
      '"source" is missing',
    ],
    [
      'structured mode without type',
      { 'content-type': 'application/cloudevents+json' },
      JSON.stringify({ specversion: '1.0', id: 'x', source: '/s' }),
      '"type" is missing',
    ],
    [
      'a batch',
      { 'content-type': 'application/cloudevents-batch+json' },
      JSON.stringify([{ specversion: '1.0', id: 'x', source: '/s', type: 't' }]),
      'batched mode',
    ],
  ])('refused with 400 problem+json naming what is missing, nothing stored: %s', async (_what, headers, body, words) => {
    const before = await stored();
    const res = await http(`${stack.url}/api/webhooks/knative`, { headers: { ...AUTH, ...headers }, body });
    expect(res.status, res.text).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 400, code: 'invalid_cloudevent' });
    expect((res.json() as { detail: string }).detail).toContain(words);
    expect(await stored()).toBe(before);
  });

  it('verification comes first: a CloudEvent with a wrong password is a 401, nothing stored', async () => {
    const before = await stored();
    const message = HTTP.binary(event('ce-unauthorized'));
    const res = await http(`${stack.url}/api/webhooks/knative`, {
      headers: { ...(message.headers as Record<string, string>), authorization: basic('knative', 'wrong') },
      body: String(message.body),
    });
    expect(res.status).toBe(401);
    expect(await stored()).toBe(before);
  });
});
