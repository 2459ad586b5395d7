import { generateKeyPairSync } from 'node:crypto';
import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeConnection } from '../support/kube.js';
import { kubectl } from '../support/kube.js';
import { apply, counter, customObjects, ready, settled, secretYaml, type TestOperator, whenReady } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { ownSource, startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import { type TestDatabase } from '../support/db.js';
import { type OperatorStore } from '../../src/operator/store.js';

/**
 * The operator against a real kube-apiserver and a real Postgres, running as the least-privilege
 * ServiceAccount user of deploy/rbac: resources applied with kubectl and @kubernetes/client-node
 * end as rows keyed by their uid, with status conditions, finalizers, Events and Secret rotation.
 */
let conn: KubeConnection;
let tdb: TestDatabase;
let store: OperatorStore;
let ns: string;
let op: TestOperator;
let scene: OperatorScene;

beforeAll(async () => {
  scene = await startOperatorScene('op');
  ({ conn, tdb, store, ns, op } = scene);
  // the endpoints' sources, owned in their namespace (docs/tenancy.md); the credentials tested below have sources of their own
  for (const source of ['orders-feed', 'shop-feed', 'ci-feed', 'later-feed']) await ownSource(store.repos, source, ns);
});

afterAll(async () => {
  await scene?.close();
});

describe('WebhookEndpoint', () => {
  it('becomes a webhook_endpoint row keyed by its uid, with the Secret resolved, a finalizer and a Ready condition', async () => {
    await apply(
      conn,
      ns,
      `${secretYaml('orders-token', { token: 's3cr3t-token' })}---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: orders
spec:
  source: orders-feed
  eventType: payment.succeeded
  url: http://orders.internal:8080/hooks
  auth:
    type: BEARER
    secretRef: { name: orders-token, key: token }
  customHeaders:
    X-Team: payments
`,
    );
    const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'orders');
    expect(cr.metadata.finalizers).toContain('webhookfanout.io/finalizer');
    expect(cr.status?.observedGeneration).toBe(cr.metadata.generation);
    expect(ready(cr)).toMatchObject({ reason: 'Synced', observedGeneration: cr.metadata.generation });

    const row = await store.endpointByUid(cr.metadata.uid);
    expect(row).toMatchObject({
      id: cr.status?.endpointId,
      name: `${ns}/orders`,
      source: 'orders-feed',
      eventType: 'payment.succeeded',
      url: 'http://orders.internal:8080/hooks',
      method: 'POST',
      authType: 'BEARER',
      authSecret: 's3cr3t-token',
      customHeaders: { 'X-Team': 'payments' },
      maxAttempts: 5,
      timeoutSeconds: 10,
      active: true,
    });

    const table = await kubectl(conn, ['get', 'webhookendpoints', '-n', ns]);
    expect(table).toMatch(/NAME\s+SOURCE\s+EVENT TYPE\s+URL\s+STATE\s+BLOCKED KEYS\s+READY\s+AGE/);
    expect(table).toMatch(/orders\s+orders-feed\s+payment\.succeeded\s+http:\/\/orders\.internal:8080\/hooks\s+ACTIVE\s+True/);
  });

  it('follows a spec change (new generation) and reports the observedGeneration', async () => {
    const crs = customObjects(conn);
    const before = await crs.get('WebhookEndpoint', ns, 'orders');
    await kubectl(conn, ['patch', 'whe', 'orders', '-n', ns, '--type=merge', '-p', '{"spec":{"maxAttempts":9,"method":"PUT"}}']);
    const cr = await eventually(
      async () => {
        const o = await crs.get('WebhookEndpoint', ns, 'orders');
        return o && o.status?.observedGeneration === o.metadata.generation && o.metadata.generation > (before?.metadata.generation ?? 0)
          ? o
          : undefined;
      },
      { what: 'observedGeneration to follow' },
    );
    const row = await store.endpointByUid(cr.metadata.uid);
    expect(row).toMatchObject({ id: before?.status?.endpointId, maxAttempts: 9, method: 'PUT' });
    expect(ready(cr)).toMatchObject({ status: 'True', observedGeneration: cr.metadata.generation });
  });

  it('rotates the secret: a changed Secret updates the row within seconds', async () => {
    const crs = customObjects(conn);
    const cr = await crs.get('WebhookEndpoint', ns, 'orders');
    const t0 = Date.now();
    await apply(conn, ns, secretYaml('orders-token', { token: 'rotated-token' }));
    await eventually(async () => (await store.endpointByUid(cr!.metadata.uid))?.authSecret === 'rotated-token', {
      what: 'rotated token in the row',
    });
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('OAuth2 client credentials: the client in the row, its secret from a Secret of its own rotated within seconds; a key that can not sign is InvalidSecret', async () => {
    await apply(
      conn,
      ns,
      `${secretYaml('partner-oauth', { 'client-secret': 'first-client-secret', key: 'not a PEM key' })}---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: partner
spec:
  source: orders-feed
  url: https://api.partner.example/hook
  auth:
    type: OAuth2ClientCredentials
    oauth2:
      tokenUrl: https://idp.partner.example/oauth/token
      clientId: webhook-fanout
      clientSecretRef: { name: partner-oauth, key: client-secret }
      scopes: [webhooks.write]
      audience: https://api.partner.example
`,
    );
    const crs = customObjects(conn);
    const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'partner');
    expect(await store.endpointByUid(cr.metadata.uid)).toMatchObject({
      authType: 'OAUTH2_CLIENT_CREDENTIALS',
      authSecret: 'first-client-secret',
      authOAuth2: {
        tokenUrl: 'https://idp.partner.example/oauth/token',
        clientId: 'webhook-fanout',
        scopes: ['webhooks.write'],
        audience: 'https://api.partner.example',
        clientAuthentication: 'ClientSecretBasic',
        keyId: null,
      },
    });

    // a Secret only OAuth2 reads: its change reconciles the endpoint at once, not at the next resync
    const t0 = Date.now();
    await apply(conn, ns, secretYaml('partner-oauth', { 'client-secret': 'second-client-secret', key: 'not a PEM key' }));
    await eventually(async () => (await store.endpointByUid(cr.metadata.uid))?.authSecret === 'second-client-secret', {
      what: 'rotated client secret in the row',
    });
    expect(Date.now() - t0).toBeLessThan(5_000);

    // PrivateKeyJwt with a value that is no private key: not Ready, the row keeps the last good one
    await kubectl(conn, [
      'patch',
      'whe',
      'partner',
      '-n',
      ns,
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/auth/oauth2","value":{"tokenUrl":"https://idp.partner.example/oauth/token","clientId":"webhook-fanout","clientAuthentication":"PrivateKeyJwt","privateKeySecretRef":{"name":"partner-oauth","key":"key"}}}]',
    ]);
    const bad = await eventually(
      async () => {
        const o = await crs.get('WebhookEndpoint', ns, 'partner');
        return ready(o)?.status === 'False' ? o : undefined;
      },
      { what: 'partner not Ready' },
    );
    expect(ready(bad)).toMatchObject({
      reason: 'InvalidSecret',
      message: expect.stringMatching(/auth\.oauth2\.privateKeySecretRef: not a PEM private key/),
    });
    expect(ready(bad)?.message).not.toContain('not a PEM key');
    expect(await store.endpointByUid(cr.metadata.uid)).toMatchObject({ authSecret: 'second-client-secret' });
  });

  it('STANDARD_WEBHOOKS: the whsec_ key and the previous one during a rotation reach the row; a malformed key is not Ready', async () => {
    const oldKey = `whsec_${Buffer.from('old-key-of-at-least-16').toString('base64')}`;
    const newKey = `whsec_${Buffer.from('new-key-of-at-least-16').toString('base64')}`;
    await apply(
      conn,
      ns,
      `${secretYaml('sw-keys', { current: newKey, previous: oldKey, bad: 'not-a-whsec-key' })}---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: standard
spec:
  source: shop-feed
  url: https://receiver.example.com/hook
  auth:
    type: STANDARD_WEBHOOKS
    secretRef: { name: sw-keys, key: current }
    previousSecretRef: { name: sw-keys, key: previous }
`,
    );
    const crs = customObjects(conn);
    const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'standard');
    expect(await store.endpointByUid(cr.metadata.uid)).toMatchObject({
      // the older combined auth.type: read as spec.signing, no auth
      authType: 'NONE',
      signingType: 'STANDARD_WEBHOOKS',
      signingSecret: newKey,
      previousSigningSecret: oldKey,
      authSecret: null,
    });

    // the rotation ends: the previous key is dropped from the spec and from the row
    await kubectl(conn, [
      'patch',
      'whe',
      'standard',
      '-n',
      ns,
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/spec/auth/previousSecretRef"}]',
    ]);
    await eventually(async () => (await store.endpointByUid(cr.metadata.uid))?.previousSigningSecret === null, {
      what: 'previous key dropped',
    });

    // a key that is not whsec_<base64>: not Ready, the row keeps the last good key, the message names no value
    await kubectl(conn, [
      'patch',
      'whe',
      'standard',
      '-n',
      ns,
      '--type=merge',
      '-p',
      '{"spec":{"auth":{"secretRef":{"name":"sw-keys","key":"bad"}}}}',
    ]);
    const bad = await eventually(
      async () => {
        const o = await crs.get('WebhookEndpoint', ns, 'standard');
        return ready(o)?.status === 'False' ? o : undefined;
      },
      { what: 'standard not Ready' },
    );
    expect(ready(bad)).toMatchObject({ reason: 'InvalidSecret' });
    expect(ready(bad)?.message).toMatch(/whsec_/);
    expect(ready(bad)?.message).not.toContain('not-a-whsec-key');
    expect((await store.endpointByUid(cr.metadata.uid))?.signingSecret).toBe(newKey);
  });

  it('StandardWebhooksEd25519: the whpk_ public keys are in the status and the admin row, and follow a rotation', async () => {
    const pair = () => {
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      const b64 = (s: string) => Buffer.from(s, 'base64url').toString('base64');
      return { sk: `whsk_${b64(privateKey.export({ format: 'jwk' }).d!)}`, pk: `whpk_${b64(publicKey.export({ format: 'jwk' }).x!)}` };
    };
    const [old, next] = [pair(), pair()];
    await apply(
      conn,
      ns,
      `${secretYaml('ed-keys', { current: next.sk, previous: old.sk })}---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: asymmetric
spec:
  source: shop-feed
  url: https://receiver.example.com/hook
  auth: { type: Bearer, secretRef: { name: ed-keys, key: current } }
  signing:
    type: StandardWebhooksEd25519
    secretRef: { name: ed-keys, key: current }
    previousSecretRef: { name: ed-keys, key: previous }
`,
    );
    const crs = customObjects(conn);
    const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'asymmetric');
    expect(await store.endpointByUid(cr.metadata.uid)).toMatchObject({
      signingType: 'STANDARD_WEBHOOKS_ED25519',
      signingPublicKeys: [next.pk, old.pk],
    });
    await eventually(
      async () =>
        JSON.stringify((await crs.get('WebhookEndpoint', ns, 'asymmetric'))?.status?.signingPublicKeys) ===
        JSON.stringify([next.pk, old.pk]),
      {
        what: 'both public keys in the status',
      },
    );

    // the rotation ends: only the current key's public key is left
    await kubectl(conn, [
      'patch',
      'whe',
      'asymmetric',
      '-n',
      ns,
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/spec/signing/previousSecretRef"}]',
    ]);
    await eventually(
      async () =>
        JSON.stringify((await crs.get('WebhookEndpoint', ns, 'asymmetric'))?.status?.signingPublicKeys) === JSON.stringify([next.pk]),
      {
        what: 'one public key in the status',
      },
    );
    const status = (await crs.get('WebhookEndpoint', ns, 'asymmetric'))?.status;
    expect(JSON.stringify(status)).not.toContain(next.sk.slice('whsk_'.length));
  });

  it('reports a missing Secret as not Ready with a Warning Event, writes nothing, and recovers when it appears', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: signed
spec:
  source: ci-feed
  url: https://ci.example.com/hook
  auth: { type: HMAC, secretRef: { name: signing, key: hmac } }
`,
    );
    const crs = customObjects(conn);
    const cr = await eventually(
      async () => {
        const o = await crs.get('WebhookEndpoint', ns, 'signed');
        return ready(o)?.status === 'False' ? o : undefined;
      },
      { what: 'signed not Ready' },
    );
    expect(ready(cr)).toMatchObject({ reason: 'SecretNotFound', observedGeneration: cr.metadata.generation });
    expect(ready(cr)?.message).toContain(`Secret ${ns}/signing not found`);
    expect(await store.endpointByUid(cr.metadata.uid)).toBeUndefined();
    const events = await eventually(
      async () => {
        const out = await kubectl(conn, [
          'get',
          'events',
          '-n',
          ns,
          '--field-selector',
          'involvedObject.name=signed,type=Warning',
          '-o',
          'json',
        ]);
        const items = (JSON.parse(out) as { items: { reason: string; message: string }[] }).items;
        return items.length > 0 ? items : undefined;
      },
      { what: 'a Warning Event' },
    );
    expect(events[0]?.reason).toBe('SecretNotFound');

    // a Secret without the key: still not Ready, with the precise reason
    await apply(conn, ns, secretYaml('signing', { other: 'x' }));
    await eventually(async () => ready(await crs.get('WebhookEndpoint', ns, 'signed'))?.reason === 'SecretKeyNotFound', {
      what: 'SecretKeyNotFound',
    });
    expect(await store.endpointByUid(cr.metadata.uid)).toBeUndefined();

    await apply(conn, ns, secretYaml('signing', { hmac: 'whsec_123' }));
    await eventually(async () => ready(await crs.get('WebhookEndpoint', ns, 'signed'))?.status === 'True', { what: 'signed Ready' });
    expect(await store.endpointByUid(cr.metadata.uid)).toMatchObject({
      authType: 'NONE',
      signingType: 'HMAC',
      signingSecret: 'whsec_123',
      authSecret: null,
    });
  });

  it('deactivates the row on delete (deliveries reference it) and lets the resource go', async () => {
    const crs = customObjects(conn);
    const cr = await crs.get('WebhookEndpoint', ns, 'signed');
    await kubectl(conn, ['delete', 'webhookendpoint', 'signed', '-n', ns, '--wait=true', '--timeout=20s']);
    expect(await crs.get('WebhookEndpoint', ns, 'signed')).toBeUndefined();
    const row = await store.endpointByUid(cr!.metadata.uid);
    expect(row).toMatchObject({ active: false, signingSecret: 'whsec_123' });
  });
});

describe('InboundCredential', () => {
  it('stores only a bcrypt hash of a password, and a bcrypt hash in the Secret as it is', async () => {
    const hash = await bcrypt.hash('already-hashed', 4);
    await apply(
      conn,
      ns,
      `${secretYaml('stripe-inbound', { password: 'pa55word' })}---
${secretYaml('shopify-inbound', { password: hash })}---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata:
  name: stripe
spec:
  source: stripe
  username: stripe-sender
  passwordSecretRef: { name: stripe-inbound, key: password }
  eventIdFrom: { jsonPath: data.id }
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata:
  name: shopify
spec:
  source: shopify
  username: shop
  passwordSecretRef: { name: shopify-inbound, key: password }
`,
    );
    const stripe = await whenReady(conn, 'InboundCredential', ns, 'stripe');
    const row = await store.credentialByUid(stripe.metadata.uid);
    expect(row).toMatchObject({
      id: stripe.status?.credentialId,
      source: 'stripe',
      username: 'stripe-sender',
      eventIdRule: { jsonPath: 'data.id' },
      resourceName: `${ns}/stripe`,
    });
    expect(row?.passwordHash).toMatch(/^\$2[aby]\$/);
    expect(await bcrypt.compare('pa55word', row?.passwordHash ?? '')).toBe(true);

    const shopify = await whenReady(conn, 'InboundCredential', ns, 'shopify');
    expect((await store.credentialByUid(shopify.metadata.uid))?.passwordHash).toBe(hash);
  });

  it('rotates the password: the new one verifies, the old one no longer does', async () => {
    const crs = customObjects(conn);
    const stripe = await crs.get('InboundCredential', ns, 'stripe');
    await apply(conn, ns, secretYaml('stripe-inbound', { password: 'n3w-pa55word' }));
    const row = await eventually(
      async () => {
        const r = await store.credentialByUid(stripe!.metadata.uid);
        return r && (await bcrypt.compare('n3w-pa55word', r.passwordHash ?? '')) ? r : undefined;
      },
      { what: 'the new password hash' },
    );
    expect(await bcrypt.compare('pa55word', row.passwordHash ?? '')).toBe(false);
  });

  it('a second credential for a source is not Ready (SourceConflict), and takes over once the first is deleted', async () => {
    await apply(
      conn,
      ns,
      `${secretYaml('stripe-2', { password: 'second' })}---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata:
  name: stripe-second
spec:
  source: stripe
  username: other
  passwordSecretRef: { name: stripe-2, key: password }
`,
    );
    const crs = customObjects(conn);
    const second = await eventually(
      async () => {
        const o = await crs.get('InboundCredential', ns, 'stripe-second');
        return ready(o)?.status === 'False' ? o : undefined;
      },
      { what: 'stripe-second not Ready' },
    );
    expect(ready(second)?.reason).toBe('SourceConflict');
    expect(ready(second)?.message).toContain(`InboundCredential ${ns}/stripe`);
    expect(await store.credentialByUid(second.metadata.uid)).toBeUndefined();
    const table = await kubectl(conn, ['get', 'ic', '-n', ns]);
    expect(table).toMatch(/stripe-second\s+stripe\s+Basic\s+other\s+False\s+SourceConflict/);

    const first = await crs.get('InboundCredential', ns, 'stripe');
    await crs.delete('InboundCredential', ns, 'stripe');
    await eventually(async () => (await crs.get('InboundCredential', ns, 'stripe')) === undefined, { what: 'stripe deleted' });
    expect(await store.credentialByUid(first!.metadata.uid)).toBeUndefined();
    await eventually(async () => ready(await crs.get('InboundCredential', ns, 'stripe-second'))?.status === 'True', {
      what: 'stripe-second Ready',
    });
    const row = await store.credentialByUid(second.metadata.uid);
    expect(row).toMatchObject({ source: 'stripe', username: 'other' });
    expect(await bcrypt.compare('second', row?.passwordHash ?? '')).toBe(true);
  });
});

describe('failures', () => {
  it('retries with backoff while Postgres fails, with a SyncFailed Event, and converges once it works again', async () => {
    await tdb.db.raw('ALTER TABLE webhook_endpoint RENAME TO webhook_endpoint_away');
    try {
      await apply(
        conn,
        ns,
        `apiVersion: webhookfanout.io/v1alpha1\nkind: WebhookEndpoint\nmetadata: {name: later}\nspec: {source: later-feed, url: "http://later.example/h"}\n`,
      );
      await eventually(
        async () =>
          (await counter(op.registry, 'webhook_fanout_operator_reconcile_errors_total', { kind: 'WebhookEndpoint', reason: 'postgres' })) >=
          2,
        {
          what: 'retried errors',
        },
      );
      const events = await kubectl(conn, [
        'get',
        'events',
        '-n',
        ns,
        '--field-selector',
        'involvedObject.name=later,reason=SyncFailed',
        '-o',
        'jsonpath={.items[*].message}',
      ]);
      expect(events).toContain('could not sync to Postgres, retrying');
    } finally {
      await tdb.db.raw('ALTER TABLE webhook_endpoint_away RENAME TO webhook_endpoint');
    }
    const later = await whenReady(conn, 'WebhookEndpoint', ns, 'later', { what: 'later Ready after the failure', timeoutMs: 30_000 });
    expect(await store.endpointByUid(later.metadata.uid)).toMatchObject({ url: 'http://later.example/h' });
  });
});

describe('drift and metrics', () => {
  it('a resync repairs rows changed behind its back and collects rows of resources that are gone', async () => {
    const crs = customObjects(conn);
    const orders = await crs.get('WebhookEndpoint', ns, 'orders');
    await tdb.db('webhook_endpoint').where({ resource_uid: orders!.metadata.uid }).update({ url: 'http://tampered/', active: false });
    await tdb
      .db('webhook_endpoint')
      .insert({ name: `${ns}/ghost`, source: 'stripe', url: 'http://ghost/', resource_uid: 'ghost-uid', active: true });
    await op.controller()!.resync();
    await settled(op);
    await eventually(async () => (await store.endpointByUid(orders!.metadata.uid))?.url === 'http://orders.internal:8080/hooks', {
      what: 'repaired url',
    });
    expect(await store.endpointByUid(orders!.metadata.uid)).toMatchObject({ active: true });
    expect(await store.endpointByUid('ghost-uid')).toMatchObject({ active: false });
  });

  it('counts reconciles, results and durations', async () => {
    expect(
      await counter(op.registry, 'webhook_fanout_operator_reconciles_total', { kind: 'WebhookEndpoint', result: 'synced' }),
    ).toBeGreaterThan(0);
    expect(
      await counter(op.registry, 'webhook_fanout_operator_reconciles_total', { kind: 'InboundCredential', result: 'not_ready' }),
    ).toBeGreaterThan(0);
    expect(await counter(op.registry, 'webhook_fanout_operator_reconciles_total', { result: 'deleted' })).toBeGreaterThan(0);
    const text = await op.registry.metrics();
    expect(text).toContain('webhook_fanout_operator_reconcile_duration_seconds_bucket');
    expect(text).toMatch(/webhook_fanout_operator_row_writes_total\{kind="WebhookEndpoint",action="updated"\} [1-9]/);
  });
});
