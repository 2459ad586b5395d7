import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifests } from '../../src/manifests/read-manifests.js';
import { syncManifests } from '../../src/manifests/sync-manifests.js';
import { createLogger } from '../../src/observability/logger.js';
import { basic, http } from '../support/http.js';
import { PROVIDERS, provider, verificationYaml, whsec, type Provider } from '../support/providers.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startStack, type Stack } from '../support/stack.js';
import { eventually } from '../support/wait.js';

// Webhooks signed by each provider's own library (test/support/providers.ts) sent over HTTP to the
// real ingest, configured by a folder of manifests read as dev mode reads it: accepted, stored and
// delivered; every tampered, stale, unsigned or wrongly signed variant refused with nothing stored.

const now = (): number => Math.floor(Date.now() / 1000);
let seq = 0;

interface Keys {
  /** Secret key -> value of the Secret `signing` */
  values: Record<string, string>;
  /** per source, the keys its secretRefs name */
  refs: Record<string, string[]>;
}

function manifests(receiverUrl: string, keys: Keys): string {
  const secret = `apiVersion: v1\nkind: Secret\nmetadata: {name: signing}\nstringData:\n${Object.entries(keys.values)
    .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
    .join('\n')}\n  basic-password: both-pass\n`;
  const docs = PROVIDERS.map(
    (p) => `apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: ${p.source}}
spec:
  source: ${p.source}
  verification: ${verificationYaml(p, 'signing', keys.refs[p.source] ?? [`${p.source}-1`])}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: ${p.source}-sink}
spec: {source: ${p.source}, url: "${receiverUrl}/${p.source}", maxAttempts: 1}
`,
  );
  const both = `apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: both}
spec:
  source: both
  username: both
  passwordSecretRef: {name: signing, key: basic-password}
  verification: ${verificationYaml(provider('Stripe'), 'signing', ['stripe-1'])}
`;
  return [secret, ...docs, both].join('---\n');
}

const initialKeys = (): Keys => ({
  values: Object.fromEntries(PROVIDERS.map((p) => [`${p.source}-1`, p.secret])),
  refs: Object.fromEntries(PROVIDERS.map((p) => [p.source, [`${p.source}-1`]])),
});

describe('inbound signatures of real providers (dev-mode manifests, ingest over HTTP, delivered)', () => {
  let stack: Stack;
  let receiver: Receiver;
  let dir: string;
  const logger = createLogger({ level: 'silent' });

  const load = async (keys: Keys): Promise<void> => {
    await writeFile(path.join(dir, 'sources.yaml'), manifests(receiver.url, keys));
    const report = await syncManifests(stack.repos, await readManifests(dir), logger, { defaultAllowedNamespaces: 'Same' });
    expect(report.errors).toEqual([]);
  };
  const stored = async (source: string): Promise<number> =>
    Number((await stack.t.db('webhook_event').where({ source }).count('* as n'))[0]?.n);
  const send = async (p: Provider, body: string, headers: Record<string, string>, source = p.source) =>
    http(`${stack.url}/api/webhooks/${source}`, { headers: { 'content-type': 'application/json', ...headers }, body });
  const signed = async (p: Provider, n = ++seq, secret = p.secret, ts = now()) => {
    const e = p.event(n);
    return { e, headers: { ...e.headers, ...(await p.sign(e.body, secret, ts)) } };
  };
  /** a refusal as the sender sees it: 401 problem+json that names no secret and no reason, nothing stored */
  const expectRefused = async (p: Provider, body: string, headers: Record<string, string>, source = p.source) => {
    const before = await stored(source);
    const res = await send(p, body, headers, source);
    expect(res.status, res.text).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 401, code: 'unauthorized' });
    for (const secret of [p.secret, p.other]) expect(res.text).not.toContain(secret);
    // the same words for every reason: which check failed is for the log and the metric
    expect(res.json()).toMatchObject({ detail: 'missing or invalid credentials or signature for this source' });
    expect(await stored(source)).toBe(before);
  };

  beforeAll(async () => {
    stack = await startStack();
    receiver = await startReceiver();
    dir = await mkdtemp(path.join(tmpdir(), 'wf-sources-'));
    await load(initialKeys());
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
    await receiver?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  describe.each(PROVIDERS)('$type', (p) => {
    it('a webhook signed by the provider is accepted, stored byte for byte with its id and type, and delivered', async () => {
      const { e, headers } = await signed(p);
      const res = await send(p, e.body, headers);
      expect(res.status, res.text).toBe(200);
      const { eventId, duplicate } = res.json() as { eventId: string; duplicate: boolean };
      expect(duplicate).toBe(false);
      const row = await stack.t.db('webhook_event').where({ id: eventId }).first();
      expect(row).toMatchObject({ source: p.source, external_event_id: e.id, event_type: e.type });
      expect(Buffer.compare(row.payload, Buffer.from(e.body))).toBe(0);
      const delivered = await eventually(async () => receiver.requests.find((r) => r.headers['x-webhook-event-id'] === eventId));
      expect(delivered.path).toMatch(new RegExp(`/${p.source}$`));
      expect(delivered.body.toString()).toBe(e.body);
      // the provider's retry of the same event is not delivered twice
      const again = await send(p, e.body, headers);
      expect(again.json()).toEqual({ eventId, duplicate: true });
    });

    it('refused with nothing stored: one byte of the body changed, another secret, no signature header', async () => {
      const { e, headers } = await signed(p);
      await expectRefused(p, e.body.replace('"', ' "'), headers);
      await expectRefused(p, e.body, (await signed(p, seq, p.other)).headers);
      await expectRefused(p, e.body, e.headers);
    });
  });

  describe.each(PROVIDERS.filter((x) => x.timestamped))('$type, signed timestamps', (p) => {
    it('a signature made six minutes ago or six minutes ahead is refused (a replay); four minutes ago is accepted', async () => {
      for (const offset of [-360, 360]) {
        const { e, headers } = await signed(p, ++seq, p.secret, now() + offset);
        await expectRefused(p, e.body, headers);
      }
      const { e, headers } = await signed(p, ++seq, p.secret, now() - 240);
      expect((await send(p, e.body, headers)).status).toBe(200);
    });
  });

  describe.each(PROVIDERS.filter((x) => x.withWrongFirst))('$type, several signatures', (p) => {
    it('a header with a wrong signature before the right one is accepted', async () => {
      const { e, headers } = await signed(p);
      const res = await send(p, e.body, p.withWrongFirst!(headers));
      expect(res.status, res.text).toBe(200);
    });
  });

  it('Basic and a signature together: both are needed', async () => {
    const p = provider('Stripe');
    const { e, headers } = await signed(p);
    await expectRefused(p, e.body, headers, 'both');
    await expectRefused(p, e.body, { ...headers, authorization: basic('both', 'wrong') }, 'both');
    await expectRefused(p, e.body, { ...e.headers, authorization: basic('both', 'both-pass') }, 'both');
    const res = await send(p, e.body, { ...headers, authorization: basic('both', 'both-pass') }, 'both');
    expect(res.status, res.text).toBe(200);
  });

  it('a source with a signature alone refuses Basic credentials, as an unknown source does', async () => {
    const p = provider('GitHub');
    const { e, headers } = await signed(p);
    await expectRefused(p, e.body, { ...headers, authorization: basic('github', 'anything') });
  });

  it("handshakes are answered and not stored: Slack's url_verification gets its challenge, GitHub's ping a 200", async () => {
    const slack = provider('Slack');
    const body = JSON.stringify({
      token: 'legacy',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const before = await stored('slack');
    const res = await send(slack, body, await slack.sign(body, slack.secret, now()));
    expect(res.status, res.text).toBe(200);
    expect(res.json()).toEqual({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    expect(await stored('slack')).toBe(before);
    // unsigned, the same handshake is refused like any call
    await expectRefused(slack, body, {});

    const github = provider('GitHub');
    const ping = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 292430182 });
    const pinged = await send(github, ping, {
      'x-github-event': 'ping',
      'x-github-delivery': 'ping-1',
      ...(await github.sign(ping, github.secret, now())),
    });
    expect(pinged.status, pinged.text).toBe(200);
    expect(await stack.t.db('webhook_event').where({ source: 'github', external_event_id: 'ping-1' }).first()).toBeUndefined();
    const handshakes = (await stack.metrics.inboundRequests.get()).values.filter((v) => v.labels.outcome === 'handshake');
    expect(handshakes.map((v) => [v.labels.source, v.value]).sort()).toEqual([
      ['github', 1],
      ['slack', 1],
    ]);
  });

  it('the refusals are counted by source and reason; the sender was told none of them', async () => {
    const { values } = await stack.metrics.inboundRefused.get();
    const count = (source: string, reason: string) =>
      values.find((v) => v.labels.source === source && v.labels.reason === reason)?.value ?? 0;
    for (const p of PROVIDERS) {
      expect(count(p.source, 'bad_signature'), p.source).toBeGreaterThanOrEqual(2);
      expect(count(p.source, 'missing_signature'), p.source).toBeGreaterThanOrEqual(1);
    }
    for (const p of PROVIDERS.filter((x) => x.timestamped)) expect(count(p.source, 'stale_timestamp'), p.source).toBe(2);
    expect(count('both', 'missing_credentials')).toBe(1);
    expect(count('both', 'bad_credentials')).toBe(1);
    expect(count('github', 'unexpected_credentials')).toBe(1);
  });

  it('the examples of examples/sources are read by dev mode without a problem, one per provider', async () => {
    const set = await readManifests(fileURLToPath(new URL('../../examples/sources/', import.meta.url)));
    expect(set.errors).toEqual([]);
    expect(set.credentials.map((c) => c.spec.verification?.type).sort()).toEqual([
      'GitHub',
      'HMAC',
      'Shopify',
      'Slack',
      'StandardWebhooks',
      'Stripe',
    ]);
  });

  it('rotation: with two secretRefs either secret verifies; a Secret changed at run time is picked up without a restart', async () => {
    const keys = initialKeys();
    for (const p of PROVIDERS) {
      keys.values[`${p.source}-2`] = p.other;
      keys.refs[p.source] = [`${p.source}-2`, `${p.source}-1`];
    }
    await load(keys);
    for (const p of PROVIDERS) {
      for (const secret of [p.secret, p.other]) {
        // the ingest re-reads a credential row within about 2 s
        await eventually(async () => {
          const { e, headers } = await signed(p, ++seq, secret);
          return (await send(p, e.body, headers)).status === 200;
        });
      }
    }
    // the old secret's value is replaced in the Secret: it no longer verifies, the new value does
    const next = new Map(PROVIDERS.map((p) => [p.source, p.type === 'StandardWebhooks' ? whsec() : `${p.other}-next`]));
    for (const p of PROVIDERS) keys.values[`${p.source}-1`] = next.get(p.source) ?? '';
    await load(keys);
    for (const p of PROVIDERS) {
      await eventually(async () => {
        const { e, headers } = await signed(p, ++seq, p.secret);
        return (await send(p, e.body, headers)).status === 401;
      });
      const { e, headers } = await signed(p, ++seq, next.get(p.source));
      expect((await send(p, e.body, headers)).status, p.source).toBe(200);
    }
  }, 60_000);
});
