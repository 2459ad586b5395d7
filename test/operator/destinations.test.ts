import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdminHarness, type AdminHarness } from '../api/support/admin-harness.js';
import { SIGNING_KEY, verifySignature } from '../destinations/broker-messages.js';
import { waitForBuilds } from '../support/builds.js';
import { basic, http } from '../support/http.js';
import { apply, whenReady } from '../support/kube-shared.js';
import { startNats, type NatsServer } from '../support/nats.js';
import { startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import { eventually } from '../support/wait.js';

// Debian's nats-server, installed by the background queue (scripts/tools/builds.sh)
await waitForBuilds('nats');

/**
 * A destination that is not HTTP, from the manifest to the attempt log: a WebhookEndpoint with
 * spec.destination NATS applied to the real kube-apiserver and reconciled by the operator (its
 * password read from a Secret of its namespace), a webhook taken in by ingest and delivered by the
 * worker, the message read back with NATS's own client, and the admin API's attempt log saying
 * what JetStream answered.
 */
let h: AdminHarness;
let scene: OperatorScene;
let nats: NatsServer;

const manifests = (natsUrl: string, natsPassword: string) => `apiVersion: v1
kind: Secret
metadata: {name: payments-secrets}
stringData: {inbound: inbound-password, nats: ${JSON.stringify(natsPassword)}, signing: ${JSON.stringify(SIGNING_KEY)}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: stripe}
spec:
  source: stripe-nats
  username: stripe-sender
  passwordSecretRef: {name: payments-secrets, key: inbound}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ledger}
spec:
  source: stripe-nats
  destination:
    type: NATS
    nats:
      servers: [${natsUrl}]
      subject: payments.stripe
      username: publisher
      passwordSecretRef: {name: payments-secrets, key: nats}
  signing: {type: StandardWebhooks, secretRef: {name: payments-secrets, key: signing}}
`;

beforeAll(async () => {
  [h, nats] = await Promise.all([startAdminHarness(), startNats()]);
  // the operator writes the rows the admin harness's worker and ingest read
  scene = await startOperatorScene('dest', { database: h.fanout.database });
  const nc = await connect({ servers: nats.url, user: nats.username, pass: nats.password });
  try {
    await (await jetstreamManager(nc)).streams.add({ name: 'PAYMENTS', subjects: ['payments.>'] });
  } finally {
    await nc.close();
  }
}, 120_000);
afterAll(async () => {
  await scene?.close();
  await h?.close();
  await nats?.stop();
});

describe('a NATS WebhookEndpoint: manifest -> operator -> ingest -> worker -> JetStream -> attempt log', () => {
  it("delivers the webhook to the subject, signed, and the attempt log says JetStream's sequence", async () => {
    await apply(scene.conn, scene.ns, manifests(nats.url, nats.password));
    await whenReady(scene.conn, 'WebhookEndpoint', scene.ns, 'ledger');
    await whenReady(scene.conn, 'InboundCredential', scene.ns, 'stripe');

    const res = await eventually(
      async () => {
        const r = await http(`${h.url}/api/webhooks/stripe-nats`, {
          headers: { authorization: basic('stripe-sender', 'inbound-password'), 'content-type': 'application/json' },
          body: JSON.stringify({ id: 'evt_nats_1', type: 'invoice.paid', amount: 1999 }),
        });
        return r.status === 200 ? r : undefined;
      },
      { what: 'ingest accepting the credential' },
    );
    const { eventId } = res.json() as { eventId: string };
    // the consumer's step (the event's workflow started by the fanout starter), then the worker's
    expect(await h.fanout.runFanout(eventId)).toBe('COMPLETED');

    // read back with NATS's own client: the body as sent, the event id as Nats-Msg-Id, the signature verifying
    const nc = await connect({ servers: nats.url, user: nats.username, pass: nats.password });
    const stored = await (async () => {
      try {
        const jsm = await jetstreamManager(nc);
        const info = await jsm.streams.info('PAYMENTS');
        const m = await jsm.streams.getMessage('PAYMENTS', { last_by_subj: 'payments.stripe' });
        const headers: Record<string, string> = {};
        for (const [k, v] of m?.header ?? []) headers[k] = v[0] ?? '';
        return { count: info.state.messages, seq: m?.seq, body: m?.string() ?? '', headers };
      } finally {
        await nc.close();
      }
    })();
    expect(stored.count).toBe(1);
    expect(JSON.parse(stored.body)).toEqual({ id: 'evt_nats_1', type: 'invoice.paid', amount: 1999 });
    expect(stored.headers).toMatchObject({ 'Nats-Msg-Id': eventId, 'X-Webhook-Event-Id': eventId, 'X-Webhook-Source': 'stripe-nats' });
    expect(() => verifySignature(stored.body, stored.headers)).not.toThrow();

    // the admin API: the endpoint's destination (never its password), the attempt and the broker's answer
    const token = await h.token('admin');
    const endpoints = (await h.get('/api/endpoints?source=stripe-nats', token)).json() as {
      items: { name: string; destination: { type: string; target: string } }[];
    };
    expect(endpoints.items.map((e) => e.destination)).toEqual([{ type: 'NATS', target: expect.stringContaining('payments.stripe') }]);
    const event = (await h.get(`/api/events/${eventId}`, token)).json() as { deliveries: { attemptsUrl: string }[] };
    const [delivery] = event.deliveries;
    const log = await h.get(delivery!.attemptsUrl, token);
    const attempts = log.json() as { items: { attempt: number; outcome: string; responseStatus: number | null; receipt: unknown }[] };
    expect(attempts.items).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'SUCCESS', responseStatus: null, receipt: { sequence: String(stored.seq) } }),
    ]);
    expect(log.text).not.toContain(nats.password);
  });
});
