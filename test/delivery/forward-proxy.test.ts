import { readFileSync } from 'node:fs';
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNoProxy } from '../../src/config/no-proxy.js';
import { createAddressPolicy } from '../../src/delivery/address-policy.js';
import type { Destination, HttpTarget } from '../../src/delivery/destination.js';
import { systemResolve, type Resolve } from '../../src/delivery/guarded-lookup.js';
import type { DeliveryOutcome } from '../../src/delivery/types.js';
import { createHttpDestination } from '../../src/destinations/http/http-destination.js';
import type { ForwardProxy } from '../../src/destinations/http/forward-proxy.js';
import { createTestPki, type TestPki } from '../support/certs.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startSquid, type Squid } from '../support/squid.js';
import { startTinyproxy, type Tinyproxy } from '../support/tinyproxy.js';
import { eventually } from '../support/wait.js';
import { messageAndTarget, outbound } from './outbound.js';

// DELIVERY_PROXY_URL against Debian's tinyproxy: an http target goes to the proxy as an
// absolute-form request, an https one through a CONNECT tunnel (with the receiver's private CA and
// a client certificate inside it), each read back in the proxy's own log; spec.proxy Direct and
// DELIVERY_NO_PROXY go around it; the SSRF policy decides on the target before the proxy is
// asked; a proxy that is down, or wants other credentials, is a deferred outcome (the
// installation's failure, no attempt), and the next send goes through once it is back.

const read = (file: string) => readFileSync(file, 'utf8');
const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

let open: Tinyproxy;
let guarded: Tinyproxy;
let receiver: Receiver;
let pki: TestPki;
let clientPki: TestPki;
let https: HttpsReceiver;
let httpsUrl: string;
let httpsSeen: string[];
const destinations: Destination<HttpTarget>[] = [];

/** Names the tests resolve: metadata.test is a cloud-metadata address; anything else as the system does. */
const resolve: Resolve = async (hostname, options) =>
  hostname === 'metadata.test' ? [{ address: '169.254.169.254', family: 4 } satisfies LookupAddress] : systemResolve(hostname, options);

function destinationVia(proxy: { url: string }, over: Partial<ForwardProxy> = {}): Destination<HttpTarget> {
  const d = createHttpDestination({
    addressPolicy: createAddressPolicy(),
    resolve,
    proxy: { url: proxy.url, noProxy: createNoProxy([]), authorization: () => null, ...over },
  });
  destinations.push(d);
  return d;
}

const send = (d: Destination<HttpTarget>, url: string, target: Partial<HttpTarget> = {}): Promise<DeliveryOutcome> => {
  const built = messageAndTarget(outbound(url));
  return d.send(built.message, { ...built.target, ...target }, { timeoutMs: 5_000 });
};

beforeAll(async () => {
  [open, guarded, receiver] = await Promise.all([
    startTinyproxy(),
    startTinyproxy({ basicAuth: { username: 'egress', password: 'first-password' } }),
    startReceiver([{ status: 200, body: 'ok' }]),
  ]);
  pki = createTestPki('proxied-receiver');
  clientPki = createTestPki('proxied-clients');
  const cert = pki.issue('receiver', { ips: ['127.0.0.1'], usage: 'server' });
  https = await startHttpsReceiver({ ...cert, clientCa: clientPki.caCert });
  ({ url: httpsUrl, clients: httpsSeen } = https);
});

afterAll(async () => {
  await Promise.all(destinations.map((d) => d.close()));
  await Promise.all([open?.close(), guarded?.close(), receiver?.close(), https?.close()]);
});

const clientTls = (name: string): NonNullable<HttpTarget['tls']> => {
  const c = clientPki.issue(name, { usage: 'client' });
  return { certificate: read(c.cert), key: read(c.key), caBundle: read(pki.caCert) };
};

describe('deliveries through a forward proxy (tinyproxy)', () => {
  it('an http target is sent to the proxy as an absolute-form request, and the receiver answers through it', async () => {
    const d = destinationVia(open);
    const before = receiver.requests.length;
    const outcome = await send(d, `${receiver.url}?via=proxy`);
    expect(outcome).toMatchObject({ kind: 'success', status: 200 });
    expect(receiver.requests.length).toBe(before + 1);
    expect(await open.requests()).toContainEqual(`POST ${receiver.url}?via=proxy HTTP/1.1`);
  });

  it('an https target goes through a CONNECT tunnel, with its private CA and client certificate end to end', async () => {
    const d = destinationVia(open);
    const outcome = await send(d, httpsUrl, { tls: clientTls('proxied-a') });
    expect(outcome).toMatchObject({ kind: 'success', status: 204 });
    expect(httpsSeen.at(-1)).toBe('proxied-a');
    const { port } = new URL(httpsUrl);
    expect(await open.requests()).toContainEqual(`CONNECT 127.0.0.1:${port} HTTP/1.1`);
  });

  it('spec.proxy Direct goes around the proxy', async () => {
    const d = destinationVia(open);
    const outcome = await send(d, `${receiver.url}?via=direct`, { proxy: 'Direct' });
    expect(outcome).toMatchObject({ kind: 'success', status: 200 });
    expect(receiver.requests.at(-1)?.path).toBe('/hook?via=direct');
    expect((await open.requests()).some((l) => l.includes('via=direct'))).toBe(false);
  });

  it('DELIVERY_NO_PROXY goes around the proxy for the hosts it names (a name and its subdomains, an address, a CIDR)', async () => {
    const byName = destinationVia(open, { noProxy: createNoProxy(['localhost']) });
    const byCidr = destinationVia(open, { noProxy: createNoProxy(['127.0.0.0/8']) });
    const other = destinationVia(open, { noProxy: createNoProxy(['partner.example']) });
    const localhost = receiver.url.replace('127.0.0.1', 'localhost');
    expect(await send(byName, `${localhost}?via=noproxy-name`)).toMatchObject({ kind: 'success' });
    expect(await send(byCidr, `${receiver.url}?via=noproxy-cidr`)).toMatchObject({ kind: 'success' });
    expect(await send(other, `${receiver.url}?via=proxied-other`)).toMatchObject({ kind: 'success' });
    const lines = await open.requests();
    expect(lines.some((l) => l.includes('via=noproxy'))).toBe(false);
    expect(lines.some((l) => l.includes('via=proxied-other'))).toBe(true);
  });

  it('the SSRF policy decides on the target before the proxy is asked: a metadata address or a name resolving to one is refused', async () => {
    const d = destinationVia(open);
    const before = (await open.requests()).length;
    const literal = await send(d, 'http://169.254.169.254/latest/meta-data/');
    const named = await send(d, 'https://metadata.test/latest/meta-data/');
    expect(literal).toMatchObject({ kind: 'permanent', statusClass: 'blocked' });
    expect(named).toMatchObject({ kind: 'permanent', statusClass: 'blocked' });
    expect(named.kind !== 'success' && named.error).toMatch(/169\.254\.169\.254 \(resolved from metadata\.test\)/);
    expect((await open.requests()).length).toBe(before);
  });

  it('a proxy that wants credentials answers 407: deferred (the installation must fix it), for http and https alike', async () => {
    const d = destinationVia(guarded);
    for (const url of [receiver.url, httpsUrl]) {
      const outcome = await send(d, url, url === httpsUrl ? { tls: clientTls('proxied-b') } : {});
      expect(outcome, url).toMatchObject({ kind: 'deferred', cause: 'proxy', reason: 'auth_required', status: 407, statusClass: 'proxy' });
    }
  });

  it("the proxy's credentials are sent, and rotated ones are used from the next send without a restart", async () => {
    let authorization = basic('egress', 'first-password');
    const d = destinationVia(guarded, { authorization: () => authorization });
    expect(await send(d, `${receiver.url}?via=auth-1`)).toMatchObject({ kind: 'success', status: 200 });
    expect(await send(d, httpsUrl, { tls: clientTls('proxied-c') })).toMatchObject({ kind: 'success', status: 204 });

    // the proxy's password changes, then the Secret the worker reads; meanwhile the old one is
    // refused (tinyproxy answers 401 to a CONNECT with wrong credentials, 407 without any): deferred
    await guarded.stop();
    await guarded.start({ username: 'egress', password: 'second-password' });
    expect(await send(d, httpsUrl, { tls: clientTls('proxied-g') })).toMatchObject({
      kind: 'deferred',
      reason: 'auth_required',
      status: 401,
    });
    authorization = basic('egress', 'second-password');
    expect(await send(d, `${receiver.url}?via=auth-3`)).toMatchObject({ kind: 'success', status: 200 });
    expect(await send(d, httpsUrl, { tls: clientTls('proxied-d') })).toMatchObject({ kind: 'success', status: 204 });
    expect(httpsSeen.at(-1)).toBe('proxied-d');
  });

  it('a proxy that is down is deferred, not the endpoint failing; once it is back the next send goes through', async () => {
    const d = destinationVia(open);
    await open.stop();
    try {
      for (const [url, tls] of [
        [receiver.url, undefined],
        [httpsUrl, clientTls('proxied-e')],
      ] as const) {
        const outcome = await send(d, url, tls ? { tls } : {});
        expect(outcome, url).toMatchObject({ kind: 'deferred', cause: 'proxy', reason: 'unreachable', status: null });
        expect(outcome.kind !== 'success' && outcome.error).toMatch(/forward proxy unreachable: .*ECONNREFUSED/);
      }
    } finally {
      await open.start();
    }
    expect(await send(d, `${receiver.url}?via=back`)).toMatchObject({ kind: 'success', status: 200 });
    expect(await send(d, httpsUrl, { tls: clientTls('proxied-f') })).toMatchObject({ kind: 'success', status: 204 });
    expect(await open.requests()).toContainEqual(`POST ${receiver.url}?via=back HTTP/1.1`);
  });

  it('a receiver the proxy can not reach is the endpoint failing, not the proxy (an attempt, retried)', async () => {
    const d = destinationVia(open);
    const closed = await startReceiver();
    const url = closed.url;
    await closed.close();
    const outcome = await send(d, url);
    expect(outcome.kind).toBe('retryable');
  });
});

// Debian's squid answers as HTTP says where tinyproxy does not: what differs is tested here
describe('deliveries through squid, which answers 407 and 503 itself', () => {
  let squid: Squid;
  const SQUID_USER = { username: 'egress', password: 'squid-password' };

  beforeAll(async () => {
    squid = await startSquid({ basicAuth: SQUID_USER });
  });
  afterAll(async () => {
    await squid?.close();
  });

  it('with its credentials: an http target forwarded, an https one tunnelled (client certificate inside), each in its access log', async () => {
    const d = destinationVia(squid, { authorization: () => basic(SQUID_USER.username, SQUID_USER.password) });
    expect(await send(d, `${receiver.url}?via=squid`)).toMatchObject({ kind: 'success', status: 200 });
    expect(await send(d, httpsUrl, { tls: clientTls('squid-a') })).toMatchObject({ kind: 'success', status: 204 });
    expect(httpsSeen.at(-1)).toBe('squid-a');
    expect(await squid.requests()).toContainEqual(`POST ${receiver.url}?via=squid 200`);
    // squid logs a tunnel when it ends: close the destination's connections (closed once: not again after all)
    destinations.splice(destinations.indexOf(d), 1);
    await d.close();
    await eventually(async () => (await squid.requests()).includes(`CONNECT ${new URL(httpsUrl).host} 200`), {
      what: "the CONNECT in squid's access log",
    });
  });

  it('wrong credentials are a 407 even for an http target: deferred, where tinyproxy answers 401, which no one can tell from the receiver', async () => {
    const wrong = () => basic(SQUID_USER.username, 'not-the-password');
    const d = destinationVia(squid, { authorization: wrong });
    for (const [url, tls] of [
      [`${receiver.url}?via=squid-wrong`, undefined],
      [httpsUrl, clientTls('squid-b')],
    ] as const) {
      const outcome = await send(d, url, tls ? { tls } : {});
      expect(outcome, url).toMatchObject({ kind: 'deferred', cause: 'proxy', reason: 'auth_required', status: 407, statusClass: 'proxy' });
    }
    expect(receiver.requests.some((r) => r.path.includes('via=squid-wrong'))).toBe(false);
    // tinyproxy's answer to the same http request: a 401 relayed as if the receiver's, an attempt of the endpoint
    const tiny = await send(destinationVia(guarded, { authorization: wrong }), `${receiver.url}?via=tiny-wrong`);
    expect(tiny).toMatchObject({ kind: 'permanent', status: 401 });
  });

  it('a receiver it can not reach is its own 503 (X-Squid-Error; 503 to CONNECT): deferred as the proxy failing, where tinyproxy answers 500', async () => {
    const d = destinationVia(squid, { authorization: () => basic(SQUID_USER.username, SQUID_USER.password) });
    const closed = await startReceiver();
    const { port } = new URL(closed.url);
    await closed.close();
    for (const url of [`http://127.0.0.1:${port}/hook`, `https://127.0.0.1:${port}/hook`]) {
      const outcome = await send(d, url, url.startsWith('https:') ? { tls: clientTls('squid-c') } : {});
      expect(outcome, url).toMatchObject({ kind: 'deferred', cause: 'proxy', reason: 'proxy_error', status: 503 });
    }
    expect(await squid.requests()).toEqual(
      expect.arrayContaining([`POST http://127.0.0.1:${port}/hook 503`, `CONNECT 127.0.0.1:${port} 503`]),
    );
  });
});
