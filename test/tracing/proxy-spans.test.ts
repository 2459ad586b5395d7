import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdentityProvider, type IdentityProvider } from '../../src/dev/identity-provider.js';
import { createLogger } from '../../src/observability/logger.js';
import { startTracing, type Tracing } from '../../src/observability/tracing.js';
import { waitForBuilds } from '../support/builds.js';
import { createTestPki } from '../support/certs.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.js';
import { writeProxyCredentialFiles } from '../support/proxy-credentials.js';
import { OTLP_SPAN_KIND, startCollector, type CollectedSpan, type Collector } from '../support/otel-collector.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startTinyproxy, type Tinyproxy } from '../support/tinyproxy.js';
import { eventually } from '../support/wait.js';
import {
  addEndpoint,
  addEvent,
  deliveryOf,
  endpointSpec,
  startFanoutHarness,
  uniqueSource,
  type FanoutHarness,
} from '../fanout/support/harness.js';

// built in the background on a new machine (scripts/tools/builds.sh): wait before collecting
await waitForBuilds('otelcol');

/**
 * The forward proxy and the OAuth2 token request as spans (issue 42; docs/tracing.md), read back
 * from a real OTLP receiver (the OpenTelemetry Collector): the worker as cmd/worker.ts builds it,
 * with DELIVERY_PROXY_URL and credential files, real Temporal and Postgres, Debian's tinyproxy
 * asking for Basic credentials, an HTTPS receiver of a private CA, the project's identity provider.
 * A new tunnel is a `forward proxy CONNECT` span under the attempt that opened it (undici connects
 * in that request's async context); a request on a tunnel kept alive has none; a CONNECT the proxy
 * refuses is the span with an error status and the proxy's answer.
 */
const { CLIENT } = OTLP_SPAN_KIND;
const USERNAME = 'egress';
const PASSWORD = `proxy-${randomUUID()}`;
const AUDIENCE = 'https://api.partner.example';
const CLIENT_SECRET = `client-${randomUUID()}`;

let collector: Collector;
let tracing: Tracing;
let proxy: Tinyproxy;
let h: FanoutHarness;
let https: HttpsReceiver;
let httpsUrl: string;
let caBundle: string;
let idp: IdentityProvider;
let plain: Receiver;

beforeAll(async () => {
  collector = await startCollector();
  // what the worker's environment would say; the exporter and the batch processor read process.env
  Object.assign(process.env, {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  tracing = await startTracing('worker', process.env, createLogger({ level: 'silent' }));

  const pki = createTestPki('traced-proxy');
  const cert = pki.issue('receiver', { ips: ['127.0.0.1'], usage: 'server' });
  caBundle = readFileSync(pki.caCert, 'utf8');
  https = await startHttpsReceiver(cert);
  // a tunnel stays open between deliveries (undici keeps it for the Keep-Alive the server announces)
  https.server.keepAliveTimeout = 60_000;
  httpsUrl = https.url;

  const proxyCredentials = writeProxyCredentialFiles(USERNAME, PASSWORD);
  [proxy, idp, plain] = await Promise.all([
    startTinyproxy({ basicAuth: { username: USERNAME, password: PASSWORD } }),
    startIdentityProvider({
      audience: AUDIENCE,
      clients: [
        { clientId: 'traced', clientSecret: CLIENT_SECRET, permissions: ['read:webhooks'], tokenEndpointAuthMethod: 'client_secret_basic' },
      ],
    }),
    startReceiver([{ status: 200, body: 'ok' }]),
  ]);
  h = await startFanoutHarness({
    deliveryProxy: { url: proxy.url, noProxy: [], credentials: proxyCredentials.files },
  });
}, 120_000);

afterAll(async () => {
  await h?.close();
  await tracing?.shutdown();
  await Promise.all([proxy?.close(), idp?.close(), plain?.close(), collector?.stop()]);
  await https?.close();
});

/** The attempt spans of an event, oldest first, once `count` are exported. */
const attemptsOf = (eventId: string, count: number): Promise<CollectedSpan[]> =>
  eventually(
    async () => {
      const found = collector.spans.filter((s) => s.kind === CLIENT && s.name === 'POST' && s.attributes['webhook.event_id'] === eventId);
      return found.length >= count ? found : undefined;
    },
    { timeoutMs: 20_000, what: `${count} attempt span(s) of ${eventId}` },
  );

const childrenOf = (parent: CollectedSpan, name: string): CollectedSpan[] =>
  collector.spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId && s.name === name);

const basicCredentials = Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64');

/** Nothing a span says may carry the proxy's credentials or an OAuth2 secret. */
function expectNoSecrets(spans: CollectedSpan[]): void {
  const said = JSON.stringify(spans);
  for (const secret of [PASSWORD, basicCredentials, CLIENT_SECRET]) expect(said).not.toContain(secret);
}

describe('the forward proxy as spans', () => {
  let source: string;
  let endpointId: string;

  beforeAll(async () => {
    source = uniqueSource('traced');
    const { id } = await h.repos.endpoints.upsertByResourceUid(`test:${randomUUID()}`, {
      ...endpointSpec({ source, url: httpsUrl, maxAttempts: 1 }),
      tlsCaBundle: caBundle,
    });
    endpointId = id;
  });

  it('a delivery that opens a tunnel has a CONNECT span under its attempt span: the proxy, the target, its 200', async () => {
    const eventId = await addEvent(h.repos, { source });
    expect(await h.runFanout(eventId)).toBe('COMPLETED');
    expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1, lastResponseStatus: 204 });
    const [first] = await attemptsOf(eventId, 1);
    const connects = await eventually(
      async () => {
        const c = childrenOf(first!, 'forward proxy CONNECT');
        return c.length > 0 ? c : undefined;
      },
      { what: 'the CONNECT span under the attempt span' },
    );
    const target = new URL(httpsUrl).host;
    expect(connects).toHaveLength(1);
    expect(connects[0]).toMatchObject({
      service: 'webhook-fanout-worker',
      kind: CLIENT,
      attributes: {
        'http.request.method': 'CONNECT',
        'server.address': '127.0.0.1',
        'server.port': proxy.port,
        'webhook.proxy': `127.0.0.1:${proxy.port}`,
        'webhook.proxy_target': target,
        'http.response.status_code': 200,
      },
    });
    expect(connects[0]!.status.code ?? 0).not.toBe(2);
    expect(first!.attributes).toMatchObject({ 'webhook.outcome': 'success', 'http.response.status_code': 204 });
    expect(await proxy.requests()).toContainEqual(`CONNECT ${target} HTTP/1.1`);
    expectNoSecrets(collector.spans);
  });

  it('a delivery on the tunnel kept alive has no CONNECT span, and the proxy saw no other CONNECT', async () => {
    const eventId = await addEvent(h.repos, { source });
    expect(await h.runFanout(eventId)).toBe('COMPLETED');
    const [attempt] = await attemptsOf(eventId, 1);
    // the first attempt's span and its CONNECT were exported in earlier batches: this one is complete too
    await eventually(async () => collector.spans.some((s) => s.spanId === attempt!.spanId), { what: 'the attempt span' });
    expect(childrenOf(attempt!, 'forward proxy CONNECT')).toEqual([]);
    expect(attempt!.events.map((e) => e.name)).toContain('through the forward proxy');
    const target = new URL(httpsUrl).host;
    expect((await proxy.requests()).filter((l) => l === `CONNECT ${target} HTTP/1.1`)).toHaveLength(1);
  });

  it('a CONNECT the proxy refuses, or a proxy that is down, is a span with an error status (and the proxy answer); the delivery waits and then goes through', async () => {
    // the proxy's password changes under the worker (tinyproxy answers 401 to wrong credentials);
    // the restart also ends the tunnel kept alive, so the next delivery asks for a new one
    await proxy.stop();
    await proxy.start({ username: USERNAME, password: 'not-what-the-worker-sends' });
    const eventId = await addEvent(h.repos, { source });
    let result: Promise<string> | undefined;
    try {
      await h.start(eventId);
      result = h.client.workflow.getHandle(eventId).result() as Promise<string>;
      const refused = await eventually(
        async () => {
          const attempts = collector.spans.filter((s) => s.name === 'POST' && s.attributes['webhook.event_id'] === eventId);
          return attempts.flatMap((a) => childrenOf(a, 'forward proxy CONNECT')).find((c) => c.status.code === 2);
        },
        { what: 'a refused CONNECT span' },
      );
      expect(refused).toMatchObject({
        attributes: { 'http.response.status_code': 401, 'webhook.proxy_target': new URL(httpsUrl).host },
        status: { code: 2, message: 'forward proxy answered 401 to CONNECT' },
      });
      const attempt = collector.spans.find((s) => s.spanId === refused.parentSpanId);
      expect(attempt?.attributes).toMatchObject({ 'webhook.outcome': 'deferred', 'webhook.status_class': 'proxy' });

      // the proxy down: the CONNECT is never answered, its span says why
      await proxy.stop();
      const unreachable = await eventually(
        async () => {
          const attempts = collector.spans.filter((s) => s.name === 'POST' && s.attributes['webhook.event_id'] === eventId);
          return attempts
            .flatMap((a) => childrenOf(a, 'forward proxy CONNECT'))
            .find((c) => c.status.code === 2 && c.attributes['http.response.status_code'] === undefined);
        },
        { what: 'a CONNECT span of the proxy down' },
      );
      expect(unreachable.status.message).toMatch(/^forward proxy unreachable: .*ECONNREFUSED/);
      expect(unreachable.attributes).toMatchObject({ 'webhook.proxy': `127.0.0.1:${proxy.port}` });
    } finally {
      await proxy.stop();
      await proxy.start({ username: USERNAME, password: PASSWORD });
    }
    expect(await result).toBe('COMPLETED');
    // the refusals cost no attempt
    expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    expectNoSecrets(collector.spans);
  });
});

describe('the OAuth2 token request as a span', () => {
  it('is a client span under the attempt that needed the token, naming the token endpoint and the client, never the secret or the token', async () => {
    const source = uniqueSource('traced-oauth2');
    const endpointId = await addEndpoint(h.repos, {
      source,
      url: plain.url,
      authType: 'OAUTH2_CLIENT_CREDENTIALS',
      authSecret: CLIENT_SECRET,
      authOAuth2: {
        tokenUrl: `${idp.url}/oauth/token`,
        clientId: 'traced',
        scopes: ['read:webhooks'],
        audience: AUDIENCE,
        clientAuthentication: 'ClientSecretBasic',
        keyId: null,
      },
    });
    const eventId = await addEvent(h.repos, { source });
    expect(await h.runFanout(eventId)).toBe('COMPLETED');
    expect(await deliveryOf(h.repos, eventId, endpointId)).toMatchObject({ status: 'SUCCESS', attempts: 1 });
    const [attempt] = await attemptsOf(eventId, 1);
    const token = await eventually(async () => childrenOf(attempt!, 'OAuth2 token request')[0], { what: 'the token request span' });
    const idpUrl = new URL(idp.url);
    expect(token).toMatchObject({
      kind: CLIENT,
      attributes: {
        'server.address': idpUrl.hostname,
        'server.port': Number(idpUrl.port),
        'url.scheme': 'http',
        'oauth2.client_id': 'traced',
        'oauth2.client_authentication': 'ClientSecretBasic',
      },
    });
    expect(token.status.code ?? 0).not.toBe(2);
    const sent = String(plain.requests.at(-1)?.headers.authorization).replace(/^Bearer /, '');
    expect(sent.length).toBeGreaterThan(20);
    expect(JSON.stringify(collector.spans)).not.toContain(sent);
    expectNoSecrets(collector.spans);
  });
});
