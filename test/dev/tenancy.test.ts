import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { readManifests } from '../../src/manifests/read-manifests.js';
import { syncManifests, type SyncReport } from '../../src/manifests/sync-manifests.js';
import { watchManifests } from '../../src/manifests/watch-manifests.js';
import { uniqueSource } from '../fanout/support/harness.js';
import { basic, http } from '../support/http.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { startStack, type Stack } from '../support/stack.js';
import { eventually } from '../support/wait.js';
import { tenancyManifests, type Allowed, type TenancyNames } from '../support/tenancy-manifests.js';

/**
 * Namespaces as tenants in dev mode (docs/tenancy.md): the tenancy tests' manifests
 * (test/support/tenancy-manifests.ts, the ones test/operator/tenancy.test.ts applies to
 * kube-apiserver) in a folder that dev mode's loader watches, `kind: Namespace` documents giving
 * the labels a selector reads; real webhooks through ingest, delivered by the real worker to a
 * real receiver. The same rule and the same words as the operator, in dev mode's log lines.
 */
let stack: Stack;
let receiver: Receiver;
let dir: string;
let watcher: Awaited<ReturnType<typeof watchManifests>>;
const reports: SyncReport[] = [];
const lines: string[] = [];
let n: TenancyNames;

const logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push((JSON.parse(l) as { msg: string }).msg);
      done();
    },
  }),
);

async function write(opts: { allowed: Allowed; ordersReader?: boolean; credential?: boolean }): Promise<SyncReport> {
  const seen = reports.length;
  await writeFile(path.join(dir, 'tenancy.yaml'), tenancyManifests(n, { ordersReader: false, ...opts }));
  return eventually(async () => (reports.length > seen ? reports.at(-1) : undefined), 10_000);
}

/** Sends one webhook of the source through ingest and waits for its fanout to end: which endpoints it reached. */
async function routedTo(): Promise<string[]> {
  const res = await eventually(async () => {
    const r = await http(`${stack.url}/api/webhooks/${n.source}`, {
      headers: { authorization: basic('pay-sender', 'pay-password'), 'content-type': 'application/json' },
      body: JSON.stringify({ id: `evt-${Math.random()}`, type: 'payment.succeeded' }),
    });
    return r.status === 200 ? r : undefined;
  });
  const { eventId } = res.json() as { eventId: string };
  await eventually(async () => {
    const e = await stack.repos.events.get(eventId);
    return e && e.status !== 'RECEIVED';
  }, 30_000);
  return receiver.requests
    .filter((r) => r.headers['x-webhook-event-id'] === eventId)
    .map((r) => r.path.slice(1))
    .sort();
}

beforeAll(async () => {
  [stack, receiver, dir] = await Promise.all([startStack(), startReceiver(), mkdtemp(path.join(tmpdir(), 'wf-tenancy-'))]);
  n = { pay: 'payments', orders: 'orders', intruder: 'intruder', source: uniqueSource('pay'), receiver: receiver.origin };
  await writeFile(path.join(dir, 'tenancy.yaml'), tenancyManifests(n, { allowed: 'default', ordersReader: false }));
  watcher = await watchManifests({
    dir,
    repos: stack.repos,
    logger,
    options: { defaultAllowedNamespaces: 'Same' },
    debounceMs: 50,
    onSync: (r) => reports.push(r),
  });
}, 120_000);

afterAll(async () => {
  await watcher?.close();
  await stack?.close();
  await receiver?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('dev mode: which endpoints a source allows', () => {
  it('Same by default: the other namespaces are NotAllowedBySource, logged in the operator words, and get nothing', async () => {
    const report = watcher.initial;
    expect(report.errors).toEqual([]);
    expect(report.denied).toEqual([
      `WebhookEndpoint orders/orders: NotAllowedBySource: InboundCredential payments/pay of source "${n.source}" allows endpoints in its own namespace payments only (it sets no spec.allowedEndpoints, and the installation's default is Same); this endpoint is in namespace orders: nothing is routed to this endpoint`,
      `WebhookEndpoint intruder/intruder: NotAllowedBySource: InboundCredential payments/pay of source "${n.source}" allows endpoints in its own namespace payments only (it sets no spec.allowedEndpoints, and the installation's default is Same); this endpoint is in namespace intruder: nothing is routed to this endpoint`,
    ]);
    expect(lines).toContain(`endpoint not allowed by its source: ${report.denied[1]}`);
    expect(await routedTo()).toEqual(['own']);
  });

  it('from: Selector reads the labels of the Namespace documents; an edit of them is applied live', async () => {
    expect((await write({ allowed: 'Selector', ordersReader: true })).denied.map((d) => d.split(':')[0])).toEqual([
      'WebhookEndpoint payments/own',
      'WebhookEndpoint intruder/intruder',
    ]);
    expect(await routedTo()).toEqual(['orders']);
    const unlabelled = await write({ allowed: 'Selector', ordersReader: false });
    expect(unlabelled.denied).toContainEqual(
      expect.stringMatching(/^WebhookEndpoint orders\/orders: NotAllowedBySource: .*the labels of namespace orders do not match/),
    );
    expect(await routedTo()).toEqual([]);
  });

  it('from: All lets every namespace subscribe', async () => {
    expect((await write({ allowed: 'All' })).denied).toEqual([]);
    expect(await routedTo()).toEqual(['intruder', 'orders', 'own']);
  });

  it('without the credential every endpoint of the source is SourceNotFound', async () => {
    const report = await write({ allowed: 'All', credential: false });
    expect(report.denied).toHaveLength(3);
    expect(report.denied[0]).toBe(
      `WebhookEndpoint payments/own: SourceNotFound: source "${n.source}" has no InboundCredential in effect: nothing is routed to this endpoint until one is Ready`,
    );
    const rows = await stack.t.db('webhook_endpoint').where({ source: n.source }).select('namespace', 'denied_reason').orderBy('namespace');
    expect(rows).toEqual([
      { namespace: 'intruder', denied_reason: 'SourceNotFound' },
      { namespace: 'orders', denied_reason: 'SourceNotFound' },
      { namespace: 'payments', denied_reason: 'SourceNotFound' },
    ]);
  });

  it('TENANCY_DEFAULT_ALLOWED_NAMESPACES=All: a credential that says nothing allows every namespace', async () => {
    await write({ allowed: 'default' });
    const all = await watchManifests({ dir, repos: stack.repos, logger, options: { defaultAllowedNamespaces: 'All' } });
    await all.close();
    expect(all.initial.denied).toEqual([]);
    expect(await routedTo()).toEqual(['intruder', 'orders', 'own']);
  });

  it('examples/tenancy loads: the reader namespace subscribes, the others are NotAllowedBySource', async () => {
    const set = await readManifests(fileURLToPath(new URL('../../examples/tenancy/', import.meta.url)));
    const report = await syncManifests(stack.repos, set, logger, { defaultAllowedNamespaces: 'Same' });
    expect(report.errors).toEqual([]);
    expect(report.denied.map((d) => d.split(': ').slice(0, 2).join(': '))).toEqual([
      'WebhookEndpoint marketing/payments: NotAllowedBySource',
      'WebhookEndpoint orders/refunds: NotAllowedBySource',
    ]);
  });
});
