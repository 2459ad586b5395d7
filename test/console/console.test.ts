import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { http } from '../support/http.js';
import { startReceiver, type Receiver, type Script } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { axeViolations, controls, screenshot, tabOrder } from './support/browser.js';
import { consoleStack } from './support/console-stack.js';
import { heading, readOnlyUser, signIn, tenantUser } from './support/sign-in.js';

// The web console in a real browser (Debian's chromium through playwright-core) against dev mode
// as `npm start` runs it: the dev identity provider's login page, ingest serving the built console
// with its Content-Security-Policy, the admin API, real receivers. Each test makes the source,
// endpoints and events it reads (console-stack.ts), so it passes alone and in any order.

// every probe, if it ran, would set the global it names (test/console/support/browser.ts)
const PROBES = {
  script: '<script>window.__probeScript=1</script>',
  img: '<img src=x onerror="window.__probeImg=1;alert(1)">',
  js: 'javascript:window.__probeJs=1',
  title: '</title><script>window.__probeTitle=1</script><title>',
  svg: '<svg onload="window.__probeSvg=1"></svg>',
};
const PROBE_TEXT = Object.values(PROBES).join(' ');

/** A receiver for this test only, closed when it ends. */
async function receiver(script?: Script): Promise<Receiver> {
  const r = await startReceiver(script);
  onTestFinished(() => r.close());
  return r;
}

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

describe('web console in a real browser, against dev mode (implicit flow, the default)', () => {
  const stack = consoleStack({ flow: 'implicit' });

  it('prints the console URL and a login at start', () => {
    const { dev, adminUser } = stack;
    expect(dev.output()).toContain(`${dev.url}/console/`);
    expect(dev.output()).toContain(`${adminUser.username} / ${adminUser.password}`);
    expect(readOnlyUser(dev.output()).username).not.toBe(adminUser.username);
  });

  it("logs in through the identity provider's login page (response_type=token) and returns to the page asked for; the token leaves the address bar and the history at once", async () => {
    const { dev } = stack;
    const w = await stack.page();
    const { page } = w;
    await page.goto(stack.url('/events?source=shop'));
    await page.waitForURL((u) => u.href.startsWith(`${dev.authUrl}/authorize`));
    const authorize = new URL(page.url());
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      response_type: 'token',
      client_id: expect.any(String),
      redirect_uri: `${dev.url}/console/callback`,
      audience: 'https://webhook-fanout.local/api',
      scope: 'openid profile email',
      state: expect.stringMatching(/^[\w-]{20,}$/),
      nonce: expect.stringMatching(/^[\w-]{20,}$/),
    });
    await screenshot(page, 'login');
    await signIn(page, dev.authUrl, stack.adminUser);
    await page.waitForURL(stack.url('/events?source=shop'));
    await heading(page, 'Events');
    const token = await stack.holdToken(w);
    expect(page.url()).not.toContain('access_token');
    // no entry of the tab's history holds the token (DevTools protocol: the whole list)
    const cdp = await w.context.newCDPSession(page);
    const history = (await cdp.send('Page.getNavigationHistory')) as { entries: Array<{ url: string }> };
    expect(history.entries.length).toBeGreaterThan(1);
    for (const e of history.entries) {
      expect(e.url).not.toContain(token);
      expect(e.url).not.toContain('access_token');
    }
    await cdp.detach();
    expect(await page.evaluate<number>('localStorage.length')).toBe(0);
    expect(await page.getByRole('button', { name: 'Log out' }).isVisible()).toBe(true);
  }, 120_000);

  it('the overview of a user who sees nothing yet says so; an event sent then shows there, and its page, its delivery and the attempt log open from there', async () => {
    // dev-tenant sees namespace `default` only, which this test alone uses: nothing there yet,
    // whatever the other tests sent
    const { page } = await stack.signedIn(tenantUser(stack.dev.output()), '/');
    // nothing sent yet: the outcome chart says that no delivery ended rather than drawing a 0-100 axis of zeros
    await heading(page, 'Overview');
    const outcomes = page.getByRole('figure', { name: 'Deliveries by outcome, last hour' });
    await outcomes.getByText('No delivery ended in this range.').waitFor();
    expect(await outcomes.locator('canvas').count()).toBe(0);
    await screenshot(page, 'overview-empty');

    const good = await receiver();
    const flaky = await receiver([{ status: 500, body: 'flaky is down' }]);
    const s = await stack.source(
      'overview',
      { good: { url: `${good.url}/good` }, flaky: { url: `${flaky.url}/flaky`, eventType: 'order.flaky', maxAttempts: 1 } },
      { namespace: 'default' },
    );
    const eventId = await s.send({ id: unique('order'), type: 'order.flaky', total: 42 });
    // both deliveries ended (good SUCCESS, flaky FAILED) before the overview loads its figures
    await eventually(async () => {
      const ds = await s.deliveries();
      return ds.length === 2 && ds.every((d) => d.status === 'SUCCESS' || d.status === 'FAILED');
    }, 60_000);
    await page.goto(stack.url('/'));
    await heading(page, 'Overview');
    const link = page.getByRole('link', { name: `Event ${eventId}` });
    await link.waitFor({ timeout: 60_000 });
    // the charts of the stats route: the event counted for its source, drawn on a canvas, its figures in a table
    const events = page.getByRole('figure', { name: 'Events received per source, last hour' });
    await events.locator('canvas').waitFor();
    await events.getByText('Figures').click();
    await events.getByRole('columnheader', { name: s.source }).waitFor();
    // drawn once a delivery ended (the stats refresh every 30 s on their own)
    await outcomes.locator('canvas').waitFor({ timeout: 90_000 });
    await page.getByRole('figure', { name: /Failure rate per endpoint/ }).waitFor();
    await page.getByRole('figure', { name: /p95 delivery latency per endpoint/ }).waitFor();
    await events.getByText('Figures').click();
    await screenshot(page, 'overview');
    await page.getByRole('link', { name: 'last day' }).click();
    await page.getByRole('heading', { name: 'Traffic, last day' }).waitFor();
    expect(page.url()).toBe(stack.url('/?range=day'));
    await page.getByRole('link', { name: 'last hour' }).click();
    await link.waitFor();
    await link.click();
    await heading(page, 'Event');
    expect(page.url()).toBe(stack.url(`/events/${eventId}`));
    await page.getByText('"total": 42').waitFor();
    // two deliveries: good (SUCCESS) and flaky (FAILED, one attempt); wait until both settled
    const rows = page.getByRole('table', { name: 'Deliveries of this event' }).getByRole('row');
    await eventually(
      async () => (await rows.filter({ hasText: 'FAILED' }).count()) === 1 && (await rows.filter({ hasText: 'SUCCESS' }).count()) === 1,
      60_000,
    );
    await screenshot(page, 'event');
    await rows
      .filter({ hasText: s.endpoint('flaky') })
      .getByRole('link')
      .click();
    await heading(page, 'Delivery');
    const attempts = page.getByRole('table', { name: 'Attempts, in order' });
    await attempts.waitFor();
    const attemptRows = attempts.getByRole('row');
    expect(await attemptRows.count()).toBe(2); // header + attempt 1
    await expect.poll(() => attemptRows.nth(1).innerText()).toMatch(/1\s+FAILED\s+500\s+\d+ ms/);
    expect(await attemptRows.nth(1).innerText()).toContain('flaky is down');
  }, 240_000);

  it('replays a FAILED delivery from its page and shows it SUCCESS', async () => {
    const { page } = await stack.admin();
    const flaky = await receiver([{ status: 500, body: 'flaky is down' }]);
    const s = await stack.source('replay', { flaky: { url: `${flaky.url}/flaky`, maxAttempts: 1 } });
    await s.send({ id: unique('order'), type: 'order.flaky' });
    const [failed] = await eventually(async () => {
      const ds = await s.deliveries();
      return ds[0]?.status === 'FAILED' && ds;
    }, 60_000);
    await page.goto(stack.url(`/deliveries/${failed!.id}`));
    await heading(page, 'Delivery');
    const attemptRows = page.getByRole('table', { name: 'Attempts, in order' }).getByRole('row');
    await expect.poll(() => attemptRows.count()).toBe(2);
    flaky.setScript([{ status: 200, body: 'flaky is back' }]);
    await page.getByRole('button', { name: 'Replay delivery' }).click();
    await page.locator('.fields').getByText('SUCCESS', { exact: true }).waitFor({ timeout: 60_000 });
    await expect.poll(() => attemptRows.count(), { timeout: 30_000 }).toBe(3);
    expect(await attemptRows.nth(1).innerText()).toMatch(/1\s+FAILED\s+500/);
    expect(await attemptRows.nth(2).innerText()).toMatch(/2\s+SUCCESS\s+200/);
    await screenshot(page, 'delivery');
    expect(flaky.requests).toHaveLength(2);
  }, 120_000);

  it('bulk replay: a dry run shows how many and which, and replays them only once confirmed', async () => {
    const { page } = await stack.admin();
    const flaky = await receiver([{ status: 500, body: 'flaky is down again' }]);
    const s = await stack.source('bulk', { flaky: { url: `${flaky.url}/flaky`, maxAttempts: 1 } });
    await s.send({ id: unique('bulk'), type: 'order.flaky' });
    await s.send({ id: unique('bulk'), type: 'order.flaky' });
    await eventually(async () => flaky.requests.length === 2, 60_000);
    await page.goto(stack.url('/'));
    await heading(page, 'Overview');
    await page.getByRole('link', { name: 'Bulk replay' }).click();
    await heading(page, 'Bulk replay');
    await page.getByLabel('Endpoint').selectOption({ label: `${s.endpoint('flaky')} (${s.source})` });
    // the FAILED rows may take a moment to settle after the receiver answered
    await eventually(async () => {
      await page.getByRole('button', { name: 'Dry run' }).click();
      const summary = page.locator('.dry-run-summary');
      await summary.waitFor();
      return /^2 FAILED deliveries match; a replay would take the newest 2\./.test(await summary.innerText());
    }, 60_000);
    expect(page.url()).toContain('run=dry');
    const which = page.getByRole('table', { name: 'FAILED deliveries matching the filters, newest first' });
    expect(await which.getByRole('row').count()).toBe(3);
    await screenshot(page, 'bulk-replay');
    expect(flaky.requests.length).toBe(2); // a dry run sends nothing
    flaky.setScript([{ status: 200, body: 'ok' }]);
    await page.getByRole('button', { name: 'Replay 2 deliveries…' }).click();
    await page.getByRole('button', { name: 'Confirm replay' }).click();
    await page.getByText('2 deliveries handed to 2 replay runs').waitFor();
    await eventually(async () => flaky.requests.length === 4, 60_000);
  }, 120_000);

  it('finds an event by the id its sender gave it, and by its own id', async () => {
    const { page } = await stack.admin();
    const s = await stack.source('lookup');
    const external = unique('lookup');
    const eventId = await s.send({ id: external, type: 'order.created' });
    await page.goto(stack.url('/events'));
    await heading(page, 'Events');
    await page.getByLabel('Event id or external id').fill(external);
    await page.getByRole('button', { name: 'Find event' }).click();
    await page.getByText('An external id is unique per source: enter the source too.').waitFor();
    await page.getByLabel('Source (for an external id)').fill(s.source);
    await page.getByRole('button', { name: 'Find event' }).click();
    await page.waitForURL(stack.url(`/events/${eventId}`));
    await page.getByText(external).first().waitFor();
    await page.goto(stack.url('/events'));
    await page.getByLabel('Event id or external id').fill(eventId);
    await page.getByRole('button', { name: 'Find event' }).click();
    await page.waitForURL(stack.url(`/events/${eventId}`));
    await heading(page, 'Event');
  }, 120_000);

  it('a read-only user sees no replay or enable control; the bulk replay page says why, and a 403 is shown as such', async () => {
    // something to replay and something to enable, both there for the read-only user to not touch
    const flaky = await receiver([{ status: 500, body: 'down' }]);
    const fragile = await receiver([{ status: 500, body: 'fragile is down' }]);
    const s = await stack.source('reader', {
      flaky: { url: `${flaky.url}/flaky`, eventType: 'order.flaky', maxAttempts: 1 },
      fragile: { url: `${fragile.url}/fragile`, eventType: 'ping', maxAttempts: 1, autoDisable: { afterConsecutiveFailures: 1 } },
    });
    const failedEvent = await s.send({ id: unique('ro'), type: 'order.flaky' });
    await s.send({ id: unique('fragile'), type: 'ping' });
    await eventually(async () => fragile.requests.length === 1 && flaky.requests.length === 1, 60_000);

    const reader = await stack.page();
    const { page } = reader;
    await page.goto(stack.url(`/events/${failedEvent}`));
    await signIn(page, stack.dev.authUrl, readOnlyUser(stack.dev.output()));
    await page.waitForURL(stack.url(`/events/${failedEvent}`));
    await heading(page, 'Event');
    await stack.holdToken(reader);
    const rows = page.getByRole('table', { name: 'Deliveries of this event' }).getByRole('row');
    await eventually(async () => (await rows.filter({ hasText: 'FAILED' }).count()) === 1, 60_000);
    expect(await page.getByRole('button', { name: /Replay/ }).count()).toBe(0);
    await rows.filter({ hasText: 'FAILED' }).getByRole('link').click();
    await heading(page, 'Delivery');
    await page.getByRole('table', { name: 'Attempts, in order' }).waitFor();
    expect(await page.getByRole('button', { name: /Replay/ }).count()).toBe(0);
    expect(await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Bulk replay' }).count()).toBe(0);
    expect(await page.getByText('(read-only)').count()).toBe(1);

    await page.getByRole('link', { name: 'Endpoints' }).click();
    await heading(page, 'Endpoints');
    await page
      .getByRole('row', { name: s.endpoint('fragile') })
      .getByText('DISABLED', { exact: true })
      .waitFor({ timeout: 60_000 });
    expect(await page.getByRole('button', { name: /Enable/ }).count()).toBe(0);

    // typed in by hand: the page says the permission is missing, and the API's 403 shows as such
    await page.goto(stack.url('/replay'));
    await heading(page, 'Bulk replay');
    await page.getByText('Bulk replay needs the replay:webhooks permission').waitFor();
    await page.getByRole('button', { name: 'Dry run' }).click();
    await page.getByText('Forbidden (403)').waitFor();
    await screenshot(page, 'read-only-replay-403');
    expect(await page.locator('main').innerText()).toContain('the token lacks the replay:webhooks permission');
  }, 150_000);

  it('enables a disabled endpoint; its held deliveries arrive', async () => {
    const { page } = await stack.admin();
    const fragile = await receiver([{ status: 500, body: 'fragile is down' }]);
    const s = await stack.source('enable', {
      fragile: { url: `${fragile.url}/fragile`, maxAttempts: 1, autoDisable: { afterConsecutiveFailures: 1 } },
    });
    const name = s.endpoint('fragile');
    // one FAILED delivery disables it
    await s.send({ id: unique('fragile'), type: 'any' });
    await eventually(() => s.disabled('fragile'), 60_000);
    await page.goto(stack.url('/endpoints?state=DISABLED'));
    await heading(page, 'Endpoints');
    const row = page.getByRole('row', { name });
    await row.waitFor({ timeout: 60_000 });
    // sent while it is disabled: held, not delivered
    const held = unique('fragile-held');
    await s.send({ id: held, type: 'any' });
    let shown = '';
    await eventually(async () => {
      await page.reload();
      await row.waitFor();
      shown = await row.innerText();
      return (await row.getByRole('link', { name: /held deliveries/ }).innerText()).trim() === '1';
    }, 60_000).catch((err: unknown) => {
      throw new Error(`the endpoint row shows: ${shown}\n${stack.dev.output().slice(-3000)}`, { cause: err });
    });
    expect(fragile.requests.map((r) => JSON.parse(r.body.toString()).id)).not.toContain(held);
    expect(fragile.requests).toHaveLength(1);
    await screenshot(page, 'endpoints');
    fragile.setScript([{ status: 200, body: 'fragile is back' }]);
    await row.getByRole('button', { name: `Enable ${name}` }).click();
    await page.getByText(`${name} is ACTIVE again`).waitFor();
    await eventually(async () => fragile.requests.some((r) => JSON.parse(r.body.toString()).id === held), 60_000);
    await page.goto(stack.url('/endpoints'));
    await page.getByRole('row', { name }).getByText('ACTIVE', { exact: true }).waitFor();
    await eventually(
      async () => (await page.getByRole('row', { name }).getByRole('link', { name: /held/ }).innerText()).trim() === '0',
      60_000,
    );
  }, 150_000);

  it("an OAuth2 endpoint whose token endpoint refuses its credentials shows the server's words as a warning, as text; one not refused shows none", async () => {
    const { page } = await stack.admin();
    const oauth2 = (path: string) => ({
      url: `https://partner.example/${path}`,
      auth: {
        type: 'OAuth2ClientCredentials',
        oauth2: {
          tokenUrl: 'https://idp.partner.example/oauth/token',
          clientId: 'webhook-fanout',
          clientSecretRef: { name: 'partner-oauth', key: 'client-secret' },
        },
      },
    });
    const s = await stack.source(
      'oauth',
      { refused: oauth2('refused'), fine: oauth2('fine') },
      { secrets: { 'partner-oauth': { 'client-secret': 'the-client-secret' } } },
    );
    // what the worker records when the token endpoint refuses (db/endpoints.ts recordTokenRefusal): the server's words, markup included
    const message = 'oauth2_token_refused: the token endpoint answered HTTP 401 invalid_client (<b>x</b> bad client)';
    const since = new Date('2026-11-29T12:00:00.000Z');
    const updated = await stack
      .db('webhook_endpoint')
      .where({ name: s.endpoint('refused'), active: true })
      .update({ oauth2_token_refusal: message, oauth2_token_refused_at: since });
    expect(updated).toBe(1);

    await page.goto(stack.url(`/endpoints?source=${s.source}`));
    await heading(page, 'Endpoints');
    const refused = page.getByRole('row', { name: s.endpoint('refused') });
    const warning = refused.locator('.warning', { hasText: 'Token request refused since' });
    await warning.waitFor({ timeout: 60_000 });
    const time = warning.locator('time');
    expect(await time.getAttribute('datetime')).toBe(since.toISOString());
    expect(await warning.innerText()).toBe(`Token request refused since ${await time.innerText()}: ${message}`);
    // the tags are shown, not made into an element
    expect(await warning.locator('b').count()).toBe(0);
    // its badge says it waits, not a green ACTIVE above the warning; the other one is ACTIVE
    await refused.locator('.status', { hasText: 'WAITING' }).waitFor();
    expect(await refused.getByText('ACTIVE', { exact: true }).count()).toBe(0);
    const fine = page.getByRole('row', { name: s.endpoint('fine') });
    await fine.getByText('OAUTH2_CLIENT_CREDENTIALS').waitFor();
    expect(await fine.getByText('Token request refused').count()).toBe(0);
    await fine.locator('.status', { hasText: 'ACTIVE' }).waitFor();
    await screenshot(page, 'endpoints-token-refused');
  }, 120_000);

  it('an event whose payload, headers and endpoint answer carry <script>, <img onerror>, javascript: and </title> probes runs none of them', async () => {
    const admin = await stack.admin();
    const { page } = admin;
    const hostile = await receiver([
      { status: 502, body: `<html><title>x</title>${PROBE_TEXT}</html>`, headers: { 'content-type': 'text/html' } },
    ]);
    const s = await stack.source('probe', { hostile: { url: `${hostile.url}/hostile`, maxAttempts: 1 } });
    const probeEventId = await s.send(
      {
        id: `${PROBES.img}-${randomBytes(3).toString('hex')}`,
        type: 'probe',
        html: PROBES.script,
        link: PROBES.js,
        title: PROBES.title,
        svg: PROBES.svg,
      },
      { 'x-probe-img': PROBES.img, 'x-probe-title': PROBES.title, 'x-probe-link': PROBES.js },
    );
    await eventually(async () => hostile.requests.length >= 1, 60_000);
    for (const path of ['/', '/events', `/events/${probeEventId}`]) {
      await page.goto(stack.url(path));
      await page.locator('h1').waitFor();
      await page.getByText(PROBES.img, { exact: false }).first().waitFor({ timeout: 60_000 });
    }
    // on the event page: the payload and the headers shown as the text they are
    const pre = page.getByRole('region', { name: 'Payload' }).locator('pre');
    await page.getByRole('button', { name: 'Raw text' }).click();
    expect(await pre.innerText()).toContain(PROBES.script);
    expect(await page.getByRole('row', { name: /x-probe-title/ }).innerText()).toContain(PROBES.title);
    expect(await page.title()).toBe('Event · webhook-fanout');
    await screenshot(page, 'event-hostile');
    const rows = page.getByRole('table', { name: 'Deliveries of this event' }).getByRole('row');
    await eventually(async () => (await rows.filter({ hasText: 'FAILED' }).count()) === 1, 60_000);
    await rows
      .filter({ hasText: s.endpoint('hostile') })
      .getByRole('link')
      .click();
    await heading(page, 'Delivery');
    const body = page.getByLabel('Response body of attempt 1');
    await body.waitFor();
    expect(await body.innerText()).toContain(PROBES.script);
    // links are the console's own: none points anywhere else, none is javascript:
    const hrefs = await page.locator('a[href]').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    for (const h of hrefs) expect(h).toMatch(/^(\/console\/|#main$)/);

    expect(admin.dialogs).toEqual([]);
    expect(await admin.probeGlobals()).toEqual([]);
    expect(await admin.cspViolations()).toEqual([]);
    const metrics = (await http(stack.dev.metricsUrl, { method: 'GET' })).text;
    for (const line of metrics.split('\n').filter((l) => l.startsWith('webhook_fanout_console_csp_violations_total{'))) {
      expect(line).toMatch(/ 0$/);
    }
  }, 150_000);

  it("bulk replay's dry run lists only the deliveries of the event type asked for, as the replay would take them", async () => {
    const { page } = await stack.admin();
    const hostile = await receiver([{ status: 502, body: 'bad gateway' }]);
    const flaky = await receiver([{ status: 500, body: 'down' }]);
    const s = await stack.source('bulk-type', {
      hostile: { url: `${hostile.url}/hostile`, eventType: 'probe', maxAttempts: 1 },
      flaky: { url: `${flaky.url}/flaky`, eventType: 'order.flaky', maxAttempts: 1 },
    });
    // one FAILED delivery of each type
    await s.send({ id: unique('probe'), type: 'probe' });
    await s.send({ id: unique('order'), type: 'order.flaky' });
    await eventually(async () => (await s.deliveries()).filter((d) => d.status === 'FAILED').length === 2, 60_000);

    const summary = page.locator('.dry-run-summary');
    const which = page.getByRole('table', { name: 'FAILED deliveries matching the filters, newest first' }).getByRole('row');
    // the endpoints' list arrives late (a slow API): what is typed before it stays once it is in
    await page.route('**/api/endpoints**', async (r) => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await r.continue();
    });
    await page.goto(stack.url('/replay'));
    await heading(page, 'Bulk replay');
    await page.getByLabel('Source').fill(s.source);
    await page.getByLabel('Event type').fill('probe');
    await page
      .getByLabel('Endpoint')
      .locator('option', { hasText: s.endpoint('hostile') })
      .waitFor({ state: 'attached' });
    expect([await page.getByLabel('Source').inputValue(), await page.getByLabel('Event type').inputValue()]).toEqual([s.source, 'probe']);
    await page.getByRole('button', { name: 'Dry run' }).click();
    await expect
      .poll(() => summary.innerText(), { timeout: 30_000 })
      .toMatch(/^1 FAILED delivery matches; a replay would take the newest 1\./);
    await expect.poll(() => which.count()).toBe(2); // header + the probe's delivery
    expect(await which.nth(1).innerText()).toContain(s.endpoint('hostile'));
    await screenshot(page, 'bulk-replay-event-type');

    // without the type: the other type's FAILED delivery too (order.flaky's), in the count and in the list alike
    await page.getByLabel('Event type').fill('');
    await page.getByRole('button', { name: 'Dry run' }).click();
    await expect.poll(() => page.url()).not.toContain('eventType');
    await expect
      .poll(() => summary.innerText(), { timeout: 30_000 })
      .toMatch(/^2 FAILED deliveries match; a replay would take the newest 2\./);
    await expect.poll(() => which.count()).toBe(3);
    expect(await which.allInnerTexts()).toEqual(
      expect.arrayContaining([expect.stringContaining(s.endpoint('hostile')), expect.stringContaining(s.endpoint('flaky'))]),
    );
  }, 120_000);

  it('every page passes axe-core with no serious or critical violation, and keyboard alone reaches every control', async () => {
    const { page } = await stack.admin();
    const flaky = await receiver([{ status: 500, body: 'down' }]);
    const s = await stack.source('axe', { flaky: { url: `${flaky.url}/flaky`, maxAttempts: 1 } });
    const eventId = await s.send({ id: unique('order'), type: 'order.created', total: 42, lines: [{ sku: 'a', qty: 1 }] });
    const [delivery] = await eventually(async () => {
      const ds = await s.deliveries();
      return ds[0]?.status === 'FAILED' && ds;
    }, 60_000);
    const pages: Array<[string, string]> = [
      ['overview', '/'],
      ['events', `/events?source=${s.source}`],
      ['event', `/events/${eventId}`],
      ['deliveries', '/deliveries?status=FAILED'],
      ['delivery', `/deliveries/${delivery!.id}`],
      ['bulk-replay', '/replay'],
      ['endpoints', '/endpoints'],
      ['credentials', '/credentials'],
      ['not-found', '/no-such-page'],
    ];
    for (const [name, path] of pages) {
      await page.goto(stack.url(path));
      await page.locator('h1').waitFor();
      await page.locator('.loading').first().waitFor({ state: 'detached' });
      await screenshot(page, `page-${name}`);
      const serious = (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
      expect(serious, `${name}: ${JSON.stringify(serious, null, 1)}`).toEqual([]);
      const reachable = await tabOrder(page);
      const all = await controls(page);
      expect(all.length, name).toBeGreaterThan(3);
      for (const c of all) expect(reachable, `${name}: ${c} is not reachable with Tab`).toContain(c);
    }
    // and used by keyboard alone: from the events list to an event
    await page.goto(stack.url(`/events?source=${s.source}`));
    await heading(page, 'Events');
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      const label = await page.evaluate<string | null>("document.activeElement && document.activeElement.getAttribute('aria-label')");
      if (label?.startsWith('Event ')) break;
    }
    await page.keyboard.press('Enter');
    await heading(page, 'Event');
    expect(page.url()).toBe(stack.url(`/events/${eventId}`));
  }, 240_000);

  it("an expired token, or one the API refuses, leads back to login; none of the session's tokens appears in a request URL or in the service's log", async () => {
    const { dev, adminUser } = stack;
    const w = await stack.admin();
    const { page } = w;
    await page.goto(stack.url('/endpoints'));
    await heading(page, 'Endpoints');
    const held = [await stack.holdToken(w)];
    // the session's expiry comes: the console goes to the login by itself, no click needed
    await page.evaluate(`(() => {
      const s = JSON.parse(sessionStorage.getItem('webhook-fanout.session'));
      s.expiresAt = Date.now() + 1500;
      sessionStorage.setItem('webhook-fanout.session', JSON.stringify(s));
    })()`);
    await page.reload();
    await page.waitForURL((u) => u.href.startsWith(`${dev.authUrl}/authorize`), { timeout: 60_000 });
    expect(new URL(page.url()).searchParams.get('response_type')).toBe('token');
    await signIn(page, dev.authUrl, adminUser);
    await page.waitForURL(stack.url('/endpoints'));
    await heading(page, 'Endpoints');
    held.push(await stack.holdToken(w));

    // a token the API answers 401 to (signature broken): back to login too
    await page.evaluate(`(() => {
      const s = JSON.parse(sessionStorage.getItem('webhook-fanout.session'));
      s.accessToken = s.accessToken.slice(0, -6) + 'AAAAAA';
      sessionStorage.setItem('webhook-fanout.session', JSON.stringify(s));
    })()`);
    await page.goto(stack.url('/credentials'));
    await page.waitForURL((u) => u.href.startsWith(`${dev.authUrl}/authorize`), { timeout: 60_000 });
    await signIn(page, dev.authUrl, adminUser);
    await page.waitForURL(stack.url('/credentials'));
    await heading(page, 'Inbound credentials');
    held.push(await stack.holdToken(w));

    // the shared session's token and those of the two sign-ins again: three; the API calls carried them, in the header: in no URL, and not in the log
    expect(new Set(held).size).toBe(3);
    const urls = w.requests.map((r) => r.url());
    expect(urls.filter((u) => u.startsWith(`${dev.url}/api/`)).length).toBeGreaterThan(3);
    for (const u of urls) {
      expect(u).not.toMatch(/access_token/);
      for (const t of held) expect(u).not.toContain(t);
    }
    for (const t of held) {
      expect(dev.output()).not.toContain(t);
      expect(dev.output()).not.toContain(t.split('.')[2]!);
    }
  }, 150_000);

  it('logs out: the token leaves the tab; the console asks for a login again', async () => {
    const { page } = await stack.admin();
    await page.goto(stack.url('/'));
    await heading(page, 'Overview');
    await page.getByRole('button', { name: 'Log out' }).click();
    await heading(page, 'Signed out');
    expect(await page.evaluate<string | null>("sessionStorage.getItem('webhook-fanout.session')")).toBeNull();
    await screenshot(page, 'signed-out');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL((u) => u.href.startsWith(`${stack.dev.authUrl}/authorize`));
  }, 60_000);
});

describe('web console: the authorization code flow with PKCE (CONSOLE_AUTH_FLOW=code)', () => {
  const stack = consoleStack({ flow: 'code' });

  it('logs in through the login page with a code and an S256 challenge, exchanges it, and shows what was sent', async () => {
    const { dev } = stack;
    const s = await stack.source('pkce');
    const eventId = await s.send({ id: 'pkce-1', type: 'order.created' });
    const w = await stack.page();
    const { page } = w;
    await page.goto(stack.url(`/events/${eventId}`));
    await page.waitForURL((u) => u.href.startsWith(`${dev.authUrl}/authorize`));
    const authorize = new URL(page.url()).searchParams;
    expect(authorize.get('response_type')).toBe('code');
    expect(authorize.get('code_challenge_method')).toBe('S256');
    expect(authorize.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(authorize.get('redirect_uri')).toBe(`${dev.url}/console/callback`);
    expect([...authorize.keys()]).not.toContain('code_verifier');
    await signIn(page, dev.authUrl, stack.adminUser);
    await page.waitForURL(stack.url(`/events/${eventId}`));
    await heading(page, 'Event');
    await page.getByText('pkce-1').first().waitFor();
    // the code went back to the identity provider in a POST, the token came in its answer
    const exchange = w.requests.find((r) => r.url() === `${dev.authUrl}/oauth/token`);
    expect(exchange?.method()).toBe('POST');
    expect(exchange?.postData()).toMatch(/code_verifier=[\w-]{43,}/);
    expect(page.url()).not.toContain('code=');
    const token = await stack.holdToken(w);
    for (const r of w.requests) expect(r.url()).not.toContain(token);
    expect(dev.output()).not.toContain(token);
    // the verifier is gone once used
    expect(await page.evaluate<string | null>("sessionStorage.getItem('webhook-fanout.login')")).toBeNull();
  }, 150_000);
});
