import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { basic, http } from '../support/http.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { axeViolations, launchChromium, screenshot, watchedPage, type Watched } from './support/browser.js';
import { startDevConsole, type DevConsole } from './support/dev-console.js';
import { heading, readOnlyUser, signIn } from './support/sign-in.js';

// Filters and transforms in the console (docs/content-routing.md), in Debian's chromium against
// dev mode as `npm start` runs it, on the run's Postgres and Temporal, with real receivers: the
// endpoints page shows each endpoint's filter and transform; an event's page says, of the endpoint
// whose filter rejected it, that its filter did not match, while the other got the delivery. The
// rejecting filter carries markup: it must show as text and run nothing.

const PASSWORD = 'shop-pass';
const BIG_FILTER = 'event.data.amount >= 100';
const TRANSFORM = '{"kind": type, "total": data.amount}';
const SMALL_FILTER = 'event.data.amount < 100 || event.type == "<img src=x onerror=window.__probeImg=1>"';

const manifests = (r: { big: Receiver; small: Receiver }) => `
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: ${PASSWORD}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: InboundCredential
metadata: {name: shop}
spec: {source: shop, username: shop, passwordSecretRef: {name: creds, key: password}}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: big}
spec:
  source: shop
  url: "${r.big.url}/big"
  maxAttempts: 1
  filter: |-
    ${BIG_FILTER}
  transform:
    jsonata: |-
      ${TRANSFORM}
---
apiVersion: webhookfanout.io/v1alpha1
kind: WebhookEndpoint
metadata: {name: small}
spec:
  source: shop
  url: "${r.small.url}/small"
  maxAttempts: 1
  filter: |-
    ${SMALL_FILTER}
`;

/** axe-core's serious and critical findings, as the console test checks every page */
const seriousA11yViolations = async (page: Page) =>
  (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');

describe('web console: filters, transforms and "filter did not match", in a real browser against dev mode', () => {
  let browser: Browser;
  let database: TestDatabase;
  let dev: DevConsole;
  let reader: Watched;
  const receivers = {} as { big: Receiver; small: Receiver };
  let eventId = '';

  const console$ = (path = '/') => `${dev.url}/console${path}`;

  beforeAll(async () => {
    receivers.big = await startReceiver();
    receivers.small = await startReceiver();
    database = await createTestDatabase();
    dev = await startDevConsole({
      manifests: manifests(receivers),
      env: {
        DATABASE_URL: database.url,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: `content-console-${randomBytes(4).toString('hex')}`,
      },
    });
    // dev mode compiled both expressions and wrote them on the rows
    await eventually(async () => (await database.db('webhook_endpoint').whereNotNull('filter').select('id')).length === 2, 60_000).catch(
      (err: unknown) => {
        throw new Error(`dev mode did not sync both filtered endpoints: ${String(err)}\n${dev.output()}`);
      },
    );
    const res = await http(`${dev.url}/api/webhooks/shop`, {
      headers: { authorization: basic('shop', PASSWORD), 'content-type': 'application/json' },
      body: JSON.stringify({ id: `order-${randomBytes(4).toString('hex')}`, type: 'order.created', amount: 500 }),
    });
    expect(res.status, res.text).toBe(200);
    eventId = (res.json() as { eventId: string }).eventId;
    await eventually(async () => receivers.big.requests.length === 1, 60_000);
    browser = await launchChromium();
    reader = await watchedPage(browser);
  }, 300_000);

  afterAll(async () => {
    await reader?.close().catch(() => undefined);
    await browser?.close();
    await dev?.stop();
    await database?.destroy();
    for (const r of Object.values(receivers)) await r?.close();
  }, 60_000);

  it('the filter let the big endpoint have the event, in the shape of its transform; the small one got nothing', async () => {
    expect(JSON.parse(receivers.big.requests[0]!.body.toString('utf8'))).toEqual({ kind: 'order.created', total: 500 });
    // the event is final once its one delivery is: nothing more will reach the small endpoint
    const status = async () =>
      ((await database.db('webhook_event').where({ id: eventId }).first('status')) as { status: string } | undefined)?.status;
    await eventually(async () => (await status()) === 'COMPLETED', 60_000);
    expect(receivers.small.requests).toHaveLength(0);
  });

  it('the endpoints page shows each endpoint its filter and transform lines, as the manifests wrote them', async () => {
    const { page } = reader;
    await page.goto(console$('/endpoints?source=shop'));
    await signIn(page, dev.authUrl, readOnlyUser(dev.output()));
    await heading(page, 'Endpoints');
    const rows = page.getByRole('table', { name: 'Endpoints' }).getByRole('row');
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBe(3); // header + two endpoints
    expect(await page.getByLabel('filter of default/big').innerText()).toBe(BIG_FILTER);
    expect(await page.getByLabel('transform of default/big').innerText()).toBe(TRANSFORM);
    expect(await page.getByLabel('filter of default/small').innerText()).toBe(SMALL_FILTER);
    expect(await page.getByLabel('transform of default/small').count()).toBe(0);
    // the line a user reads in the row, label and expression together
    const big = rows.filter({ hasText: 'default/big' });
    expect(await big.innerText()).toContain(`filter ${BIG_FILTER}`);
    expect(await big.innerText()).toContain(`transform ${TRANSFORM}`);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'content-routing-endpoints');
  }, 120_000);

  it('the event page: the delivery to big, and for small "filter did not match" with its filter, as text', async () => {
    const { page } = reader;
    await page.goto(console$(`/events/${eventId}`));
    await heading(page, 'Event');
    const deliveries = page.getByRole('table', { name: 'Deliveries of this event' }).getByRole('row');
    await expect.poll(() => deliveries.count(), { timeout: 30_000 }).toBe(2); // header + the delivery to big
    expect(await deliveries.nth(1).innerText()).toContain('default/big');

    const list = page.getByRole('list', { name: 'Endpoints without a delivery' });
    const note = list.getByRole('listitem').filter({ hasText: 'default/small' });
    await note.waitFor({ timeout: 30_000 });
    expect(await note.innerText()).toContain('default/small: filter did not match this event');
    expect(await note.locator('code').innerText()).toBe(SMALL_FILTER);
    // only small is listed: big got its delivery
    expect(await list.getByRole('listitem').count()).toBe(1);

    // the filter's markup is text: no element made of it, no script run
    expect(await page.locator('.without-delivery img').count()).toBe(0);
    expect(await reader.probeGlobals()).toEqual([]);
    expect(reader.dialogs).toEqual([]);
    expect(await reader.cspViolations()).toEqual([]);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'content-routing-event');
  }, 120_000);

  it("big's delivery page: the attempt log shows the body its transform made, as sent", async () => {
    const { page } = reader;
    await page.goto(console$(`/events/${eventId}`));
    await heading(page, 'Event');
    const row = page.getByRole('table', { name: 'Deliveries of this event' }).getByRole('row').filter({ hasText: 'default/big' });
    await row.getByRole('link').click();
    await heading(page, 'Delivery');
    const sent = page.getByLabel('Body sent by attempt 1');
    await sent.waitFor({ timeout: 30_000 });
    expect(JSON.parse(await sent.innerText())).toEqual({ kind: 'order.created', total: 500 });
    expect(await sent.innerText()).toBe(receivers.big.requests[0]!.body.toString('utf8'));
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, 'content-routing-delivery');
  }, 120_000);
});
