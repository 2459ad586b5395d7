import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../src/dev/identity-provider.js';
import type { Endpoint } from '../../src/domain/records.js';
import { addEvent, deliveryOf, startFanoutHarness, type FanoutHarness } from '../fanout/support/harness.js';
import { createTestPki, type TestPki } from '../support/certs.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.js';
import { writeProxyCredentialFiles, type ProxyCredentialFiles } from '../support/proxy-credentials.js';
import type { KubeConnection } from '../support/kube.js';
import { apply, configMapYaml, secretYaml, tlsSecretYaml, whenReady } from '../support/kube-shared.js';
import { ownSource, startOperatorScene, type OperatorScene } from '../support/operator-scene.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTinyproxy, type Tinyproxy } from '../support/tinyproxy.js';
import { eventually, sleep } from '../support/wait.js';

/**
 * Issue 42's "Done when", end to end: a receiver that requires a client certificate, one that
 * requires an OAuth2 token, and one reachable through the forward proxy each get every delivery,
 * and each secret rotated is used from the next delivery without a restart. The Secrets and
 * ConfigMaps are the input: applied to a real kube-apiserver, turned into rows by the whole
 * operator, delivered by the worker as cmd/worker.ts builds it (real Temporal, Postgres) to an
 * HTTPS receiver checking client certificates, through Debian's tinyproxy asking for Basic
 * credentials (files, as the chart mounts its Secret), with tokens of the project's identity
 * provider. Each endpoint has one attempt: a delivery with stale material would fail (or carry
 * the old certificate, token), not be retried into success. Kept-alive connections are closed
 * at each rotation, so a worker holding on to old material would have to connect with it.
 */
let conn: KubeConnection;
let ns: string;
let scene: OperatorScene;
let h: FanoutHarness;
let proxy: Tinyproxy;
let plain: Receiver;
let bank: HttpsReceiver;
let bankUrl: string;
let bankSeen: string[];
let regulated: HttpsReceiver;
let regulatedUrl: string;
let serverPki: TestPki;
let nextServerPki: TestPki;
let clientPki: TestPki;
let proxyCredentials: ProxyCredentialFiles;
const PROXY_USER = 'egress';
const AUDIENCE = 'https://api.partner.example';

const read = (file: string) => readFileSync(file, 'utf8');
const tlsSecret = tlsSecretYaml;
const caConfigMap = (name: string, pem: string) => configMapYaml(name, { 'ca.crt': pem });

/** The row the operator wrote for a WebhookEndpoint, once `settled` says it has what the test applied. */
async function rowOf(name: string, settled: (row: Endpoint) => boolean) {
  const cr = await whenReady(conn, 'WebhookEndpoint', ns, name);
  return eventually(
    async () => {
      const row = await scene.store.endpointByUid(cr.metadata.uid);
      return row && settled(row) ? row : undefined;
    },
    { timeoutMs: 15_000, what: `the row of ${name} with the rotated material` },
  );
}

/** One event of `source` through the worker: the final status and the endpoint's delivery row. */
async function deliverOne(source: string, endpointId: string) {
  const eventId = await addEvent(h.repos, { source, payload: JSON.stringify({ id: randomUUID() }) });
  const status = await h.runFanout(eventId);
  return { status, delivery: await deliveryOf(h.repos, eventId, endpointId) };
}

beforeAll(async () => {
  serverPki = createTestPki('egress-server');
  nextServerPki = createTestPki('egress-server-next');
  clientPki = createTestPki('egress-clients');
  const serverCert = serverPki.issue('bank', { ips: ['127.0.0.1'], usage: 'server' });
  // the bank: a client certificate of its clients' CA, or no handshake
  bank = await startHttpsReceiver({ ...serverCert, clientCa: clientPki.caCert });
  ({ url: bankUrl, clients: bankSeen } = bank);
  // behind the proxy: an https receiver (tinyproxy answers wrong credentials with 401, which only
  // a CONNECT tells apart from a receiver's own 401; docs/deploy.md)
  regulated = await startHttpsReceiver(serverCert);
  regulatedUrl = regulated.url;

  proxyCredentials = writeProxyCredentialFiles(PROXY_USER, 'proxy-v1');
  [scene, proxy, plain] = await Promise.all([
    startOperatorScene('egress'),
    startTinyproxy({ basicAuth: { username: PROXY_USER, password: 'proxy-v1' } }),
    startReceiver([{ status: 204, body: '' }]),
  ]);
  ({ conn, ns } = scene);
  for (const source of ['bank-feed', 'partner-feed', 'regulated-feed']) await ownSource(scene.store.repos, source, ns);
  h = await startFanoutHarness({
    database: scene.tdb,
    deliveryProxy: { url: proxy.url, noProxy: [], credentials: proxyCredentials.files },
  });
}, 180_000);

afterAll(async () => {
  await h?.close();
  await scene?.close();
  await Promise.all([proxy?.close(), plain?.close(), bank?.close(), regulated?.close()]);
});

describe("issue 42's Done when: every delivery, each secret rotated without a restart", () => {
  it('a receiver that requires a client certificate: the rotated certificate (Secret) and CA bundle (ConfigMap) are used from the next delivery', async () => {
    const v1 = clientPki.issue('bank-client-v1', { usage: 'client' });
    await apply(
      conn,
      ns,
      `${tlsSecret('bank-client', read(v1.cert), read(v1.key))}---
${caConfigMap('bank-ca', read(serverPki.caCert))}---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: bank}
spec:
  source: bank-feed
  url: ${bankUrl}
  maxAttempts: 1
  proxy: Direct
  tls:
    clientCertificateSecretRef: {name: bank-client}
    caBundleRef: {kind: ConfigMap, name: bank-ca, key: ca.crt}
`,
    );
    const row = await rowOf('bank', (r) => r.tlsClientCertificate !== null && r.tlsCaBundle !== null);
    expect(await deliverOne('bank-feed', row.id)).toMatchObject({ status: 'COMPLETED', delivery: { status: 'SUCCESS', attempts: 1 } });
    expect(bankSeen.at(-1)).toBe('bank-client-v1');

    // cert-manager renews the client certificate: the Secret changes, nothing restarts
    const v2 = clientPki.issue('bank-client-v2', { usage: 'client' });
    await apply(conn, ns, tlsSecret('bank-client', read(v2.cert), read(v2.key)));
    await rowOf('bank', (r) => r.tlsClientCertificate?.trim() === read(v2.cert).trim());
    bank.server.closeAllConnections();
    expect(await deliverOne('bank-feed', row.id)).toMatchObject({ status: 'COMPLETED', delivery: { status: 'SUCCESS', attempts: 1 } });
    expect(bankSeen.at(-1)).toBe('bank-client-v2');

    // the bank moves to a server certificate of another CA: the ConfigMap first, then the server
    await apply(conn, ns, caConfigMap('bank-ca', read(nextServerPki.caCert)));
    await rowOf('bank', (r) => r.tlsCaBundle?.trim() === read(nextServerPki.caCert).trim());
    const next = nextServerPki.issue('bank-next', { ips: ['127.0.0.1'], usage: 'server' });
    bank.server.setSecureContext({ cert: read(next.cert), key: read(next.key), ca: read(clientPki.caCert) });
    bank.server.closeAllConnections();
    expect(await deliverOne('bank-feed', row.id)).toMatchObject({ status: 'COMPLETED', delivery: { status: 'SUCCESS', attempts: 1 } });
    expect(bankSeen.at(-1)).toBe('bank-client-v2');
  });

  it('a receiver that requires an OAuth2 token: the rotated client secret (Secret) gets the next token, the old token is not reused', async () => {
    let idp: IdentityProvider = await startIdentityProvider({
      audience: AUDIENCE,
      clients: [
        { clientId: 'fanout', clientSecret: 'secret-v1', permissions: ['read:webhooks'], tokenEndpointAuthMethod: 'client_secret_basic' },
      ],
    });
    try {
      const port = Number(new URL(idp.url).port);
      await apply(
        conn,
        ns,
        `${secretYaml('partner-oauth', { 'client-secret': 'secret-v1' })}---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: partner}
spec:
  source: partner-feed
  url: ${plain.url}
  maxAttempts: 1
  proxy: Direct
  auth:
    type: OAuth2ClientCredentials
    oauth2:
      tokenUrl: ${idp.url}/oauth/token
      clientId: fanout
      clientSecretRef: {name: partner-oauth, key: client-secret}
      scopes: [read:webhooks]
      audience: ${AUDIENCE}
`,
      );
      const row = await rowOf('partner', (r) => r.authSecret === 'secret-v1');
      const tokenOf = async (issuer: IdentityProvider): Promise<string> => {
        const token = /^Bearer (.+)$/.exec(String(plain.requests.at(-1)?.headers.authorization))?.[1] ?? '';
        const jwks = createRemoteJWKSet(new URL(`${issuer.url}/.well-known/jwks.json`));
        const { payload } = await jwtVerify(token, jwks, { issuer: issuer.issuer, audience: AUDIENCE });
        expect(payload.client_id).toBe('fanout');
        return token;
      };
      expect(await deliverOne('partner-feed', row.id)).toMatchObject({ status: 'COMPLETED', delivery: { status: 'SUCCESS', attempts: 1 } });
      const first = await tokenOf(idp);

      // the partner rotates the client's secret (its server knows only the new one, and signs with
      // a new key), then the Secret changes: the token kept for the old secret is not used again
      await idp.close();
      idp = await startIdentityProvider({
        audience: AUDIENCE,
        port,
        clients: [
          { clientId: 'fanout', clientSecret: 'secret-v2', permissions: ['read:webhooks'], tokenEndpointAuthMethod: 'client_secret_basic' },
        ],
      });
      await apply(conn, ns, secretYaml('partner-oauth', { 'client-secret': 'secret-v2' }));
      await rowOf('partner', (r) => r.authSecret === 'secret-v2');
      expect(await deliverOne('partner-feed', row.id)).toMatchObject({ status: 'COMPLETED', delivery: { status: 'SUCCESS', attempts: 1 } });
      expect(idp.tokenRequests()).toBe(1);
      const second = await tokenOf(idp);
      expect(second).not.toBe(first);
      // through the forward proxy, as every token request without a DELIVERY_NO_PROXY entry
      expect(await proxy.requests()).toContainEqual(`POST ${idp.url}/oauth/token HTTP/1.1`);
    } finally {
      await idp.close();
    }
  });

  it("a receiver reached through the proxy: every delivery; the proxy's rotated credentials (files of a Secret) are used without a restart, the wait costing no attempt", async () => {
    await apply(
      conn,
      ns,
      `${caConfigMap('regulated-ca', read(serverPki.caCert))}---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: regulated}
spec:
  source: regulated-feed
  url: ${regulatedUrl}
  maxAttempts: 1
  autoDisable: {afterConsecutiveFailures: 1}
  tls:
    caBundleRef: {kind: ConfigMap, name: regulated-ca, key: ca.crt}
`,
    );
    const row = await rowOf('regulated', (r) => r.tlsCaBundle !== null);
    const tunnels = () =>
      proxy.requests().then((lines) => lines.filter((l) => l === `CONNECT ${new URL(regulatedUrl).host} HTTP/1.1`).length);
    expect(await deliverOne('regulated-feed', row.id)).toMatchObject({ status: 'COMPLETED', delivery: { status: 'SUCCESS', attempts: 1 } });
    expect(regulated.clients).toHaveLength(1);
    expect(await tunnels()).toBe(1);

    // the proxy's password changes first (its restart ends the tunnel); the worker's files (the
    // mounted Secret) a moment later
    await proxy.stop();
    await proxy.start({ username: PROXY_USER, password: 'proxy-v2' });
    const eventId = await addEvent(h.repos, { source: 'regulated-feed' });
    await h.start(eventId);
    const result = h.client.workflow.getHandle(eventId).result() as Promise<string>;
    // refused meanwhile (tinyproxy answers the CONNECT 401): the delivery waits, no attempt spent,
    // nothing toward auto-disable
    await sleep(2_000);
    expect(await deliveryOf(h.repos, eventId, row.id)).toMatchObject({ status: 'PENDING', attempts: 0 });
    expect(regulated.clients).toHaveLength(1);
    proxyCredentials.rotate('proxy-v2');
    // the worker reads the files again within 10 s (PROXY_CREDENTIALS_REFRESH_MS)
    expect(await result).toBe('COMPLETED');
    expect(await deliveryOf(h.repos, eventId, row.id)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expect(await h.repos.endpoints.get(row.id)).toMatchObject({ consecutiveFailures: 0, disabledAt: null });
    expect(regulated.clients).toHaveLength(2);
    // a new tunnel after the restart (the refused CONNECTs may be in its log too)
    expect(await tunnels()).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
