import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeConnection } from '../support/kube.js';
import { apply, configMapYaml, customObjects, ready, tlsSecretYaml, whenReady } from '../support/kube-shared.js';
import { eventually } from '../support/wait.js';
import { ownSource, startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import type { OperatorStore } from '../../src/operator/store.js';
import { createTestPki, type TestPki } from '../support/certs.js';

/**
 * spec.tls through the real kube-apiserver and the whole operator (as its least-privilege
 * ServiceAccount): a client certificate that expired or does not parse is Ready=False
 * InvalidClientCertificate with its expiry in the message, and a good one in its Secret makes it
 * Ready again within seconds; a CA bundle from a ConfigMap (caBundleRef kind ConfigMap) reaches
 * the row and follows a change to the ConfigMap within seconds, without a resync or a restart.
 */
let conn: KubeConnection;
let store: OperatorStore;
let ns: string;
let scene: OperatorScene;
let pki: TestPki;
let otherPki: TestPki;

const read = (file: string) => readFileSync(file, 'utf8');
const tlsSecret = tlsSecretYaml;
const caConfigMap = (name: string, pem: string) => configMapYaml(name, { 'ca.crt': pem });

beforeAll(async () => {
  scene = await startOperatorScene('tls');
  ({ conn, store, ns } = scene);
  await ownSource(store.repos, 'bank-feed', ns);
  pki = createTestPki('operator-clients');
  otherPki = createTestPki('operator-other');
});

afterAll(async () => {
  await scene?.close();
});

describe('WebhookEndpoint spec.tls', () => {
  it('an expired client certificate is Ready=False InvalidClientCertificate with its expiry, and a renewed one in the Secret makes it Ready', async () => {
    const expired = pki.issueExpired('bank-expired');
    await apply(
      conn,
      ns,
      `${tlsSecret('bank-client', read(expired.cert), read(expired.key))}---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: bank}
spec:
  source: bank-feed
  url: https://api.bank.example/hooks
  tls: {clientCertificateSecretRef: {name: bank-client}}
`,
    );
    const crs = customObjects(conn);
    await eventually(async () => ready(await crs.get('WebhookEndpoint', ns, 'bank'))?.status === 'False', { what: 'bank not Ready' });
    const refused = ready(await crs.get('WebhookEndpoint', ns, 'bank'));
    expect(refused).toMatchObject({ reason: 'InvalidClientCertificate' });
    expect(refused?.message).toContain(
      'tls.clientCertificateSecretRef (Secret bank-client): the certificate expired at 2020-01-02T00:00:00.000Z',
    );
    expect(refused?.message).not.toContain('PRIVATE KEY');

    // cert-manager renews it: the Secret event reconciles the endpoint (no resync, no restart)
    const renewed = pki.issue('bank-renewed', { usage: 'client' });
    const t0 = Date.now();
    await apply(conn, ns, tlsSecret('bank-client', read(renewed.cert), read(renewed.key)));
    const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'bank');
    expect(Date.now() - t0).toBeLessThan(10_000);
    const row = await store.endpointByUid(cr.metadata.uid);
    expect(row?.tlsClientCertificate?.trim()).toBe(read(renewed.cert).trim());
    expect(row?.tlsClientCertificateExpiresAt?.getTime()).toBeGreaterThan(Date.now());
  });

  it('a tls.crt that does not parse is InvalidClientCertificate; the row keeps the last good certificate', async () => {
    const uid = (await customObjects(conn).get('WebhookEndpoint', ns, 'bank'))!.metadata.uid;
    const before = await store.endpointByUid(uid);
    await apply(conn, ns, tlsSecret('bank-client', 'not a certificate', 'nor a key'));
    const crs = customObjects(conn);
    await eventually(async () => ready(await crs.get('WebhookEndpoint', ns, 'bank'))?.reason === 'InvalidClientCertificate', {
      what: 'bank InvalidClientCertificate',
    });
    expect(ready(await crs.get('WebhookEndpoint', ns, 'bank'))?.message).toMatch(
      /tls\.crt is not a PEM certificate; the row written for the last good configuration stays in effect/,
    );
    const after = await store.endpointByUid(uid);
    expect(after?.tlsClientCertificate).toBe(before?.tlsClientCertificate);
  });

  it('caBundleRef kind ConfigMap: the bundle reaches the row, and a changed ConfigMap is in it within seconds', async () => {
    await apply(
      conn,
      ns,
      `${caConfigMap('partner-ca', read(pki.caCert))}---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: partner}
spec:
  source: bank-feed
  url: https://api.partner.example/hooks
  tls: {caBundleRef: {kind: ConfigMap, name: partner-ca, key: ca.crt}}
`,
    );
    const cr = await whenReady(conn, 'WebhookEndpoint', ns, 'partner');
    expect((await store.endpointByUid(cr.metadata.uid))?.tlsCaBundle?.trim()).toBe(read(pki.caCert).trim());

    const t0 = Date.now();
    await apply(conn, ns, caConfigMap('partner-ca', read(otherPki.caCert)));
    await eventually(async () => (await store.endpointByUid(cr.metadata.uid))?.tlsCaBundle?.trim() === read(otherPki.caCert).trim(), {
      what: 'the new CA bundle in the row',
    });
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('a ConfigMap that does not exist is SecretNotFound naming the ConfigMap', async () => {
    await apply(
      conn,
      ns,
      `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: nowhere}
spec:
  source: bank-feed
  url: https://api.nowhere.example/hooks
  tls: {caBundleRef: {kind: ConfigMap, name: no-such-ca, key: ca.crt}}
`,
    );
    const crs = customObjects(conn);
    await eventually(async () => ready(await crs.get('WebhookEndpoint', ns, 'nowhere'))?.status === 'False', { what: 'nowhere not Ready' });
    expect(ready(await crs.get('WebhookEndpoint', ns, 'nowhere'))).toMatchObject({
      reason: 'SecretNotFound',
      message: expect.stringContaining(`ConfigMap ${ns}/no-such-ca not found`),
    });
  });
});
