import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { basic, http } from '../support/http.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { launchChromium, screenshot, watchedPage, type Watched } from './support/browser.js';
import { startDevConsole, type DevConsole } from './support/dev-console.js';
import { heading, signIn, tenantUser } from './support/sign-in.js';

// The console as a tenant (docs/tenancy.md): dev mode's `dev-tenant`, whose tokens carry the
// namespaces claim with the examples' namespace (`default`), signs in in a real chromium and sees,
// on every page, only what the API shows its token: the `default` namespace's credential, endpoint,
// their deliveries and events; the `other` namespace's not even by their URLs.

const PASSWORD = 'tenant-pass';

const manifests = (r: { mine: Receiver; theirs: Receiver }) => `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: default}
stringData: {password: ${PASSWORD}}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: other}
stringData: {password: ${PASSWORD}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: shop, namespace: default}
spec: {source: shop, username: shop, passwordSecretRef: {name: creds, key: password}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: ledger, namespace: other}
spec: {source: ledger, username: ledger, passwordSecretRef: {name: creds, key: password}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: mine, namespace: default}
spec: {source: shop, url: "${r.mine.url}/mine", maxAttempts: 1}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: theirs, namespace: other}
spec: {source: ledger, url: "${r.theirs.url}/theirs", maxAttempts: 1}
`;

describe('web console as dev-tenant: every page shows only its namespace', () => {
  let browser: Browser;
  let database: TestDatabase;
  let dev: DevConsole;
  let tenant: Watched;
  const receivers = {} as { mine: Receiver; theirs: Receiver };
  const ids = { mineEvent: '', theirEvent: '', theirDelivery: '' };

  const send = (source: string, body: unknown) =>
    http(`${dev.url}/api/webhooks/${source}`, {
      headers: { authorization: basic(source, PASSWORD), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => {
      expect(r.status, r.text).toBe(200);
      return (r.json() as { eventId: string }).eventId;
    });

  const console$ = (path = '/') => `${dev.url}/console${path}`;

  beforeAll(async () => {
    receivers.mine = await startReceiver();
    receivers.theirs = await startReceiver();
    database = await createTestDatabase();
    dev = await startDevConsole({
      manifests: manifests(receivers),
      env: {
        DATABASE_URL: database.url,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: `tenant-console-${randomBytes(4).toString('hex')}`,
      },
    });
    const db = database.db;
    // dev mode writes each row's namespace from its manifest's metadata.namespace
    await eventually(async () => (await db('webhook_endpoint').whereNotNull('namespace').select('name')).length === 2, 60_000).catch(
      (err: unknown) => {
        throw new Error(`dev mode did not sync both endpoints with their namespaces: ${String(err)}\n${dev.output()}`);
      },
    );

    ids.mineEvent = await send('shop', { id: `mine-${randomBytes(4).toString('hex')}`, type: 'order.created' });
    ids.theirEvent = await send('ledger', { id: `theirs-${randomBytes(4).toString('hex')}`, type: 'entry.booked' });
    await eventually(async () => receivers.mine.requests.length === 1 && receivers.theirs.requests.length === 1, 60_000);
    const d = (await db('webhook_delivery').where({ event_id: ids.theirEvent }).first()) as { id: string } | undefined;
    ids.theirDelivery = d?.id ?? '';
    browser = await launchChromium();
    tenant = await watchedPage(browser);
  }, 300_000);

  afterAll(async () => {
    await tenant?.close().catch(() => undefined);
    await browser?.close();
    await dev?.stop();
    await database?.destroy();
    for (const r of Object.values(receivers)) await r?.close();
  }, 60_000);

  it('dev mode prints dev-tenant at start, beside the other users', () => {
    expect(tenantUser(dev.output())).toEqual({ username: 'dev-tenant', password: 'dev-tenant-password' });
  });

  it("signs in as dev-tenant and shows its namespace beside the user's name", async () => {
    const { page } = tenant;
    await page.goto(console$('/events'));
    await signIn(page, dev.authUrl, tenantUser(dev.output()));
    await heading(page, 'Events');
    const user = page.locator('.user');
    await user.getByText('dev-tenant').waitFor();
    await expect.poll(() => page.getByTestId('namespaces').innerText()).toBe('namespace default');
    await screenshot(page, 'tenant-events');
  }, 120_000);

  it("events: its own, not the other namespace's; the other's event and delivery pages say not found", async () => {
    const { page } = tenant;
    await page.goto(console$('/events'));
    await page.getByRole('link', { name: `Event ${ids.mineEvent}` }).waitFor({ timeout: 30_000 });
    expect(await page.getByRole('link', { name: `Event ${ids.theirEvent}` }).count()).toBe(0);

    await page.goto(console$(`/events/${ids.theirEvent}`));
    await page.getByText('Not found (404)').waitFor();
    expect(await page.getByText('entry.booked').count()).toBe(0);
    await page.goto(console$(`/deliveries/${ids.theirDelivery}`));
    await page.getByText('Not found (404)').waitFor();
  }, 60_000);

  it('deliveries, endpoints, credentials: its namespace only', async () => {
    const { page } = tenant;
    await page.goto(console$('/deliveries'));
    await heading(page, 'Deliveries');
    const deliveryRows = page.getByRole('table', { name: 'Deliveries, newest first' }).getByRole('row');
    await expect.poll(() => deliveryRows.count(), { timeout: 30_000 }).toBe(2); // header + its one delivery
    expect(await page.getByText(ids.theirDelivery).count()).toBe(0);

    await page.goto(console$('/endpoints'));
    await heading(page, 'Endpoints');
    const endpointRows = page.getByRole('table', { name: 'Endpoints' }).getByRole('row');
    await expect.poll(() => endpointRows.count()).toBe(2);
    expect(await endpointRows.nth(1).innerText()).toContain('namespace default');
    expect(await page.getByText('theirs').count()).toBe(0);

    await page.goto(console$('/credentials'));
    await heading(page, 'Inbound credentials');
    await page.getByRole('link', { name: 'Events of shop' }).waitFor();
    expect(await page.getByRole('link', { name: 'Events of ledger' }).count()).toBe(0);
  }, 60_000);

  it("the overview's charts count its source only", async () => {
    const { page } = tenant;
    await page.goto(console$('/'));
    await heading(page, 'Overview');
    const events = page.getByRole('figure', { name: 'Events received per source, last hour' });
    await events.locator('canvas').waitFor({ timeout: 60_000 });
    await events.getByText('Figures').click();
    await events.getByRole('columnheader', { name: 'shop' }).waitFor();
    expect(await events.getByRole('columnheader', { name: 'ledger' }).count()).toBe(0);
    await screenshot(page, 'tenant-overview');
  }, 90_000);
});
