import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevMode, type DevMode } from '../support/dev-mode.js';
import { basic, http } from '../support/http.js';
import { provider } from '../support/providers.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually, sleep } from '../support/wait.js';

// a source verified by Stripe's signature (docs/sources.md), delivered to a receiver of its own
const stripe = provider('Stripe');
let signedSinkUrl = '';

const manifests = (receiverUrl: string, fragileUrl: string, enable?: string) => `
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: dev-pass, token: dev-token, stripe-signing: "${stripe.secret}"}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: stripe}
spec:
  source: stripe
  verification: {type: Stripe, secretRefs: [{name: creds, key: stripe-signing}]}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: stripe-sink}
spec: {source: stripe, url: "${signedSinkUrl}/stripe"}
---
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: acme}
spec:
  source: acme
  username: acme
  passwordSecretRef: {name: creds, key: password}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: sink}
spec:
  source: acme
  url: ${receiverUrl}/sink
  auth: {type: BEARER, secretRef: {name: creds, key: token}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: plain}
spec:
  source: acme
  eventType: only.this
  url: ${receiverUrl}/plain
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: fragile}
spec:
  source: fragile
  username: fragile
  passwordSecretRef: {name: creds, key: password}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata:
  name: fragile
${enable === undefined ? '' : `  annotations: {webhookfanout.io/enable: "${enable}"}\n`}spec:
  source: fragile
  url: ${fragileUrl}
  maxAttempts: 1
  autoDisable: {afterConsecutiveFailures: 1}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: throttled}
spec:
  source: acme
  eventType: burst
  url: ${receiverUrl}/throttled
  rateLimit: {perSecond: 2}
  maxConcurrency: 1
`;

/** `npm start` as a user runs it: the CLI in a child process, on its own embedded dependencies. */
describe('dev mode (webhook-fanout dev)', () => {
  let dir: string;
  let receiver: Receiver;
  let fragile: Receiver;
  let signedSink: Receiver;
  let dev: DevMode;
  let port: number;
  let mgmt: number;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'wf-dev-'));
    // mkdtemp makes it 0700; as root, embedded Postgres runs as the "postgres" user and must reach it
    await chmod(dir, 0o755);
    receiver = await startReceiver();
    fragile = await startReceiver([{ status: 500, body: 'down' }]);
    signedSink = await startReceiver();
    signedSinkUrl = signedSink.url;
    await writeFile(path.join(dir, 'manifests.yaml'), manifests(receiver.url, fragile.url));
    dev = await startDevMode({ configDir: dir, dataDir: path.join(dir, 'data'), timeoutMs: 90_000 });
    port = Number(new URL(dev.url).port);
    mgmt = dev.managementPort;
  }, 240_000);

  afterAll(async () => {
    await dev?.stop(1_000);
    await receiver?.close();
    await fragile?.close();
    await signedSink?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('prints where it listens and which manifests it loaded', () => {
    expect(dev.output()).toContain(`POST http://127.0.0.1:${port}/api/webhooks/{source}`);
    expect(dev.output()).toContain(`http://localhost:${mgmt}/metrics`);
    expect(dev.output()).toMatch(/5 endpoint\(s\), 3 credential\(s\)/);
  });

  it('prints the console URL and its dev users; the console names the local identity provider and its own client', async () => {
    expect(dev.output()).toContain(`console           http://127.0.0.1:${port}/console/`);
    expect(dev.output()).toContain('sign in as        dev / dev-password');
    expect(dev.output()).toContain('or, read-only     dev-readonly / dev-readonly-password');
    expect(dev.output()).toContain(
      'or, a tenant      dev-tenant / dev-tenant-password  (read:webhooks replay:webhooks, namespace default only)',
    );
    // built from this checkout's src/console when missing or stale, then served as in production
    const page = await request(`http://127.0.0.1:${port}/console/events`);
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(await page.body.text()).toMatch(/<script type="module"[^>]* src="\/console\/assets\/[^"]+-[A-Za-z0-9_-]{8}\.js"/);
    const res = await request(`http://127.0.0.1:${port}/console/config.json`);
    expect(res.statusCode).toBe(200);
    const cfg = (await res.body.json()) as { authUrl: string; clientId: string; flow: string };
    expect(cfg).toMatchObject({ clientId: 'webhook-fanout-console', flow: 'implicit' });
    // the login page of the printed identity provider accepts the console's callback at this address
    const authorize = await request(
      `${cfg.authUrl}/authorize?${new URLSearchParams({ response_type: 'token', client_id: cfg.clientId, redirect_uri: `http://127.0.0.1:${port}/console/callback`, audience: 'https://webhook-fanout.local/api', scope: 'openid profile email', state: 's' }).toString()}`,
    );
    expect(authorize.statusCode).toBe(200);
    expect(await authorize.body.text()).toContain('Sign in to webhook-fanout');
  });

  it('listens on loopback only: the public port and the management port', async () => {
    // /proc/net/tcp{,6}: local address:port in hex, state 0A = LISTEN
    const { readFile } = await import('node:fs/promises');
    const listening = async (p: number) => {
      const rows: string[] = [];
      for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
        const text = await readFile(file, 'utf8').catch(() => '');
        for (const line of text.split('\n').slice(1)) {
          const [, local, , state] = line.trim().split(/\s+/);
          if (state === '0A' && local?.endsWith(`:${p.toString(16).toUpperCase().padStart(4, '0')}`)) rows.push(local.split(':')[0] ?? '');
        }
      }
      return rows;
    };
    for (const p of [port, mgmt]) {
      const addresses = await listening(p);
      expect(addresses.length, `port ${p}`).toBeGreaterThan(0);
      // 0100007F is 127.0.0.1 in /proc's byte order; 0.0.0.0 or :: would be all interfaces
      expect(
        addresses.every((a) => a === '0100007F'),
        `port ${p}: ${addresses.join(', ')}`,
      ).toBe(true);
    }
  });

  it('delivers a webhook to the endpoints of the manifests', async () => {
    const res = await http(`http://127.0.0.1:${port}/api/webhooks/acme`, {
      headers: { authorization: basic('acme', 'dev-pass'), 'content-type': 'application/json' },
      body: '{"id":"dev-1","type":"any.type"}',
    });
    expect(res.status).toBe(200);
    await eventually(async () => receiver.requests.length >= 1, 30_000);
    expect(receiver.requests[0]!.path).toMatch(/\/sink$/);
    expect(receiver.requests[0]!.headers.authorization).toBe('Bearer dev-token');
    const ready = await http(`http://127.0.0.1:${mgmt}/readyz`, { method: 'GET' });
    expect(ready.status).toBe(200);
    const metrics = await http(`http://127.0.0.1:${mgmt}/metrics`, { method: 'GET' });
    expect(metrics.text).toMatch(/webhook_fanout_inbound_requests_total\{source="acme",outcome="accepted"\} 1/);
    await sleep(500);
    expect(receiver.requests).toHaveLength(1);
  });

  it('a webhook signed by stripe-node is verified and delivered; unsigned or tampered, refused with 401', async () => {
    const e = stripe.event(1);
    const send = async (body: string, headers: Record<string, string>) =>
      http(`http://127.0.0.1:${port}/api/webhooks/stripe`, { headers: { 'content-type': 'application/json', ...headers }, body });
    const signature = await stripe.sign(e.body, stripe.secret, Math.floor(Date.now() / 1000));
    expect((await send(e.body, {})).status).toBe(401);
    expect((await send(e.body.replace('1200', '1201'), signature)).status).toBe(401);
    const res = await send(e.body, signature);
    expect(res.status, res.text).toBe(200);
    await eventually(async () => signedSink.requests.length >= 1, 30_000);
    expect(signedSink.requests[0]!.body.toString()).toBe(e.body);
    expect(signedSink.requests[0]!.headers['x-webhook-event-type']).toBe('invoice.paid');
    const metrics = (await http(`http://127.0.0.1:${mgmt}/metrics`, { method: 'GET' })).text;
    expect(metrics).toMatch(/webhook_fanout_inbound_refused_total\{source="stripe",reason="missing_signature"\} 1/);
    expect(metrics).toMatch(/webhook_fanout_inbound_refused_total\{source="stripe",reason="bad_signature"\} 1/);
  });

  it('auto-disables an endpoint of the manifests and, when its annotation webhookfanout.io/enable gets a value, redrives what it missed once', async () => {
    const send = (id: string) =>
      http(`http://127.0.0.1:${port}/api/webhooks/fragile`, {
        headers: { authorization: basic('fragile', 'dev-pass'), 'content-type': 'application/json' },
        body: JSON.stringify({ id, type: 'fragile.test' }),
      });
    const metrics = async () => (await http(`http://127.0.0.1:${mgmt}/metrics`, { method: 'GET' })).text;
    expect((await send('fragile-1')).status).toBe(200);
    await eventually(
      async () => /webhook_fanout_endpoint_auto_disables_total\{endpoint="default\/fragile"\} 1/.test(await metrics()),
      30_000,
    );
    await eventually(async () => /webhook_fanout_endpoints_disabled 1/.test(await metrics()), 30_000);
    expect(fragile.requests).toHaveLength(1);

    // missed while disabled
    expect((await send('fragile-2')).status).toBe(200);
    expect((await send('fragile-3')).status).toBe(200);
    await sleep(2_000);
    expect(fragile.requests).toHaveLength(1);

    fragile.setScript([{ status: 200, body: 'back' }]);
    await writeFile(path.join(dir, 'manifests.yaml'), manifests(receiver.url, fragile.url, 'now'));
    await eventually(async () => fragile.requests.length >= 3, 30_000);
    await eventually(async () => /webhook_fanout_endpoints_disabled 0/.test(await metrics()), 30_000);
    await sleep(1_000);
    expect(fragile.requests.map((r) => JSON.parse(r.body.toString()).id)).toEqual(['fragile-1', 'fragile-2', 'fragile-3']);
  }, 90_000);
  it('applies a WebhookReplay manifest once: the delivery is sent again, and not a third time when the folder reloads', async () => {
    const from = new Date(Date.now() - 1000);
    const res = await http(`http://127.0.0.1:${port}/api/webhooks/acme`, {
      headers: { authorization: basic('acme', 'dev-pass'), 'content-type': 'application/json' },
      body: '{"id":"replay-me","type":"only.this"}',
    });
    expect(res.status).toBe(200);
    const { eventId } = res.json() as { eventId: string };
    const toPlain = () => receiver.requests.filter((q) => q.path.endsWith('/plain') && q.headers['x-webhook-event-id'] === eventId);
    await eventually(async () => toPlain().length === 1, 30_000);
    const replay = `apiVersion: webhookfanout.io/v1alpha1
kind: WebhookReplay
metadata: {name: plain-again}
spec:
  endpointRef: {name: plain}
  window: {from: "${from.toISOString()}", to: "${new Date(Date.now() + 1000).toISOString()}"}
  statuses: [SUCCESS]
`;
    await writeFile(path.join(dir, 'replay.yaml'), replay);
    await eventually(async () => toPlain().length === 2, 30_000);
    // a reload of the folder (any edit) applies nothing twice
    await writeFile(path.join(dir, 'replay.yaml'), `${replay}# touched\n`);
    await sleep(3_000);
    expect(toPlain()).toHaveLength(2);
  });

  it('holds the limits a manifest declares: a burst reaches its endpoint 1/perSecond apart', async () => {
    const before = receiver.requests.length;
    for (let i = 0; i < 4; i++) {
      const res = await http(`http://127.0.0.1:${port}/api/webhooks/acme`, {
        headers: { authorization: basic('acme', 'dev-pass'), 'content-type': 'application/json' },
        body: `{"id":"burst-${i}","type":"burst"}`,
      });
      expect(res.status).toBe(200);
    }
    const throttled = () => receiver.requests.slice(before).filter((q) => q.path.endsWith('/throttled'));
    await eventually(async () => throttled().length >= 4, 30_000);
    const at = throttled()
      .map((q) => q.startedAt)
      .sort((a, b) => a - b);
    // 2 a second: 500 ms apart when admitted; the catch-all sink got the burst at once
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(400);
  });

  it('its log lines are JSON: no ANSI colours, no task tokens (the banner aside)', () => {
    expect(dev.output()).not.toContain('\u001b[');
    expect(dev.output()).not.toContain('taskToken');
    const banner = /^( {2}.*|webhook-fanout dev mode is running|)$/;
    const other = dev
      .output()
      .split('\n')
      .filter((l) => !banner.test(l) && !l.startsWith('{'));
    expect(other).toEqual([]);
  });

  it('stops everything it started on SIGTERM within 30 s', async () => {
    const started = Date.now();
    // SIGKILL after 30 s: no exit code then
    const code = await dev.stop(30_000);
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(30_000);
    // its embedded Postgres and Temporal dev server are gone with it
    const { execSync } = await import('node:child_process');
    const leftovers = execSync(`ps -eo args | grep -F '${dir}' | grep -v grep || true`).toString().trim();
    expect(leftovers).toBe('');
  }, 40_000);
});
