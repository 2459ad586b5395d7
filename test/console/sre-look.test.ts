import { describe, expect, it, onTestFinished } from 'vitest';
import { startReceiver } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { screenshot } from './support/browser.js';
import { consoleStack } from './support/console-stack.js';
import type { EndpointSpec } from './support/own-source.js';
import { heading } from './support/sign-in.js';
import { failingTokenEndpoint, oauth2Endpoint, oauth2Secret } from './support/token-endpoint.js';

// What an SRE saw wrong when looking at the console's pages with eyes (docs/console.md), each
// checked here in Debian's chromium against dev mode as `npm start` runs it.

/** Whether an element's text is wider than its box (the test's types are node's, not the DOM's). */
const cutShort = (el: unknown): boolean => {
  const box = el as { scrollWidth: number; clientWidth: number };
  return box.scrollWidth > box.clientWidth;
};

/** A Kafka endpoint on a broker nobody listens on: its deliveries exist and fail (broker_unavailable), one attempt each. */
const KAFKA_NOBODY_LISTENS = {
  destination: { type: 'Kafka', kafka: { bootstrapServers: ['127.0.0.1:1'], topic: 'orders.events' } },
  maxAttempts: 1,
} as unknown as EndpointSpec;

describe('web console as an SRE looks at it', () => {
  const stack = consoleStack({ flow: 'implicit' });

  it("at a phone's width (390 x 844) no page is wider than the screen: wide tables scroll inside their card, the overview's charts fit", async () => {
    const { page } = await stack.admin();
    await page.setViewportSize({ width: 390, height: 844 });
    // an endpoint, so that the endpoints table (with its column of actions) is drawn; one with a long
    // name, which the deliveries and replay filters' endpoint select lists as one option
    const s = await stack.source('narrow', {
      hook: { url: 'https://partner.example/a/long/path/of/the/partner/hook?tenant=acme' },
      'payments-ledger-receiver-of-the-billing-platform': { url: 'https://partner.example/b' },
    });
    // an event, so that the overview draws a chart
    await s.send({ id: 'narrow-1', type: 'order.created' });
    const widths: Record<string, number> = {};
    for (const [name, path, title] of [
      ['overview', '/', 'Overview'],
      ['endpoints', `/endpoints?source=${s.source}`, 'Endpoints'],
      ['deliveries', '/deliveries', 'Deliveries'],
      ['events', '/events', 'Events'],
      ['replay', '/replay', 'Bulk replay'],
      ['credentials', '/credentials', 'Inbound credentials'],
    ] as const) {
      await page.goto(stack.url(path));
      await heading(page, title);
      if (name === 'endpoints') await page.getByRole('row', { name: s.endpoint('hook') }).waitFor();
      if (name === 'overview') await page.locator('.charts canvas').first().waitFor();
      widths[name] = await page.evaluate<number>('document.documentElement.scrollWidth');
      await screenshot(page, `narrow-${name}`);
    }
    expect(widths).toEqual({ overview: 390, endpoints: 390, deliveries: 390, events: 390, replay: 390, credentials: 390 });
  }, 120_000);

  it("a Kafka endpoint's delivery names its destination as the endpoints page does (Kafka kafka://...), never as an HTTP POST", async () => {
    const s = await stack.source('kafka-seen', { orders: KAFKA_NOBODY_LISTENS });
    await s.send({ id: 'kafka-1', type: 'order.created' });
    const delivery = await eventually(async () => (await s.deliveries())[0], 60_000);

    const { page } = await stack.admin();
    await page.goto(stack.url(`/deliveries/${delivery.id}`));
    await heading(page, 'Delivery');
    const endpoint = page.locator('.fields > div', { has: page.getByText('Endpoint', { exact: true }) }).locator('dd');
    await endpoint.getByText(s.endpoint('orders')).waitFor();
    expect(await endpoint.innerText()).toBe(`${s.endpoint('orders')} (Kafka kafka://127.0.0.1:1/orders.events)`);
    await screenshot(page, 'delivery-kafka');

    await page.goto(stack.url(`/endpoints?source=${s.source}`));
    await heading(page, 'Endpoints');
    const row = page.getByRole('row', { name: s.endpoint('orders') });
    await row.waitFor();
    expect(await row.locator('td').nth(2).innerText()).toBe('Kafka kafka://127.0.0.1:1/orders.events');
  }, 120_000);

  it("a PENDING delivery of an endpoint whose OAuth2 token is refused says it waits for a token, the server's words as text", async () => {
    // a token endpoint that refuses with the words seeded below: the worker, asking it, writes nothing
    // new (an endpoint it could not reach would be recorded as unavailable, migration 092)
    const idp = await failingTokenEndpoint(401, 'invalid_client', '<b>x</b> bad client');
    onTestFinished(() => idp.close());
    const s = await stack.source(
      'token-wait',
      { partner: oauth2Endpoint('https://partner.example/hooks', `${idp.url}/oauth/token`) },
      { secrets: oauth2Secret('the-client-secret') },
    );
    // what the worker records when the token endpoint refuses (db/endpoints.ts recordTokenRefusal), markup included
    const message = 'oauth2_token_refused: the token endpoint answered HTTP 401 invalid_client (<b>x</b> bad client)';
    const since = new Date('2026-11-29T12:00:00.000Z');
    expect(
      await stack
        .db('webhook_endpoint')
        .where({ name: s.endpoint('partner'), active: true })
        .update({ oauth2_token_refusal: message, oauth2_token_refused_at: since }),
    ).toBe(1);
    const eventId = await s.send({ id: 'token-wait-1', type: 'order.created' });
    const delivery = await eventually(async () => (await s.deliveries())[0], 60_000);

    const { page } = await stack.admin();
    await page.goto(stack.url(`/deliveries/${delivery.id}`));
    await heading(page, 'Delivery');
    const status = page.locator('.fields > div', { has: page.getByText('Status', { exact: true }) }).locator('dd');
    const note = status.locator('.token-wait');
    await note.waitFor();
    const time = note.locator('time');
    expect(await time.getAttribute('datetime')).toBe(since.toISOString());
    expect(await status.innerText()).toMatch(/^PENDING\s+/);
    const shown = await time.innerText();
    expect(await note.innerText()).toBe(`waiting for a token: refused since ${shown}: ${message}`);
    expect(await note.locator('b').count()).toBe(0);
    await screenshot(page, 'delivery-token-wait');

    // the event's deliveries table says it in short
    await page.goto(stack.url(`/events/${eventId}`));
    await heading(page, 'Event');
    const row = page
      .getByRole('table', { name: 'Deliveries of this event' })
      .getByRole('row')
      .filter({ hasText: s.endpoint('partner') });
    await row.locator('.token-wait').waitFor();
    expect(await row.locator('.token-wait').innerText()).toBe(`waiting for a token: refused since ${shown}`);
  }, 120_000);

  it("a delivery's fields and attempt log wrap between words: no word that fits a line is cut in two ('be hind', 'not r etried')", async () => {
    const refusing = await startReceiver([{ status: 400, body: 'no' }]);
    onTestFinished(() => refusing.close());
    const s = await stack.source('words', {
      'orders-receiver': { url: `${refusing.url}/partner/webhooks/orders`, maxAttempts: 1, ordering: { key: 'event.data.customer' } },
    });
    await s.send({ id: 'words-1', type: 'order.created', customer: 'cus_1' });
    const delivery = await eventually(async () => {
      const d = (await s.deliveries())[0];
      return d?.status === 'FAILED' && d;
    }, 60_000);

    const { page } = await stack.admin();
    await page.goto(stack.url(`/deliveries/${delivery.id}`));
    await heading(page, 'Delivery');
    await page.locator('.fields').getByText('holds its key').waitFor();
    await page.getByRole('table', { name: 'Attempts, in order' }).getByText('not retried').waitFor();
    // at several widths (where lines end moves with them), every word (a run without spaces) of the
    // summary's values and the attempts' errors that is narrower than its box sits on one line
    const cut: string[] = [];
    for (const width of [1280, 1100, 900, 700, 390]) {
      await page.setViewportSize({ width, height: 800 });
      cut.push(
        ...(
          await page.evaluate<string[]>(`(() => {
        const cut = [];
        for (const box of document.querySelectorAll('.fields dd, table.attempts td')) {
          const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const m of node.data.matchAll(/\\S+/g)) {
              const range = document.createRange();
              range.setStart(node, m.index);
              range.setEnd(node, m.index + m[0].length);
              const rects = [...range.getClientRects()].filter((r) => r.width > 0);
              const width = rects.reduce((sum, r) => sum + r.width, 0);
              if (rects.length > 1 && width < box.clientWidth - 24) cut.push(m[0]);
            }
          }
        }
        return cut;
      })()`)
        ).map((w) => `${width} px: ${w}`),
      );
    }
    await screenshot(page, 'delivery-words');
    expect(cut).toEqual([]);
  }, 120_000);

  it("at a phone's width the attempt log scrolls sideways at its own width instead of squeezing each column to a letter", async () => {
    const body = JSON.stringify({
      error: 'validation_failed',
      detail: 'field customer_reference_number_for_the_billing_system is not allowed',
    });
    const refusing = await startReceiver([{ status: 400, body }]);
    onTestFinished(() => refusing.close());
    const s = await stack.source('attempts-narrow', { partner: { url: `${refusing.url}/partner`, maxAttempts: 1 } });
    await s.send({ id: 'attempts-narrow-1', type: 'order.created' });
    const delivery = await eventually(async () => {
      const d = (await s.deliveries())[0];
      return d?.status === 'FAILED' && d;
    }, 60_000);

    const { page } = await stack.admin();
    await page.goto(stack.url(`/deliveries/${delivery.id}`));
    await heading(page, 'Delivery');
    const row = page.getByRole('table', { name: 'Attempts, in order' }).getByRole('row').nth(1);
    await row.getByText('not retried').waitFor();
    const heights: Record<number, number> = {};
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 844 });
      heights[width] = (await row.boundingBox())?.height ?? 0;
    }
    await screenshot(page, 'narrow-attempts');
    // the same row, a line or two more at most on a phone (it was several hundred pixels: the body a letter wide)
    expect(heights[390], JSON.stringify(heights)).toBeLessThan(heights[1280]! * 1.6);
  }, 120_000);

  it('a last error or external id cut short in a table carries the whole text as its title', async () => {
    const s = await stack.source('cut-short', { orders: KAFKA_NOBODY_LISTENS });
    const externalId = `order-${'0123456789abcdef'.repeat(4)}`;
    await s.send({ id: externalId, type: 'order.created' });
    const delivery = await eventually(async () => {
      const d = (await s.deliveries())[0];
      return d?.status === 'FAILED' && d;
    }, 60_000);

    const { page } = await stack.admin();
    // the whole error, as the delivery's page shows it
    await page.goto(stack.url(`/deliveries/${delivery.id}`));
    await heading(page, 'Delivery');
    const lastError = page.locator('.fields > div', { has: page.getByText('Last error', { exact: true }) }).locator('dd');
    await lastError.getByText('broker_unavailable').waitFor();
    const error = await lastError.innerText();

    await page.goto(stack.url(`/deliveries?source=${s.source}`));
    await heading(page, 'Deliveries');
    const cell = page
      .getByRole('row')
      .filter({ has: page.getByRole('link', { name: `Delivery ${delivery.id}` }) })
      .locator('td.truncate');
    await cell.waitFor();
    // it is cut short on the page
    expect(await cell.evaluate(cutShort)).toBe(true);
    expect(await cell.getAttribute('title')).toBe(error);

    await page.goto(stack.url(`/events?source=${s.source}`));
    await heading(page, 'Events');
    const id = page.getByRole('table').getByRole('row').nth(1).locator('td.truncate');
    await id.waitFor();
    expect(await id.evaluate(cutShort)).toBe(true);
    expect(await id.getAttribute('title')).toBe(externalId);
  }, 120_000);

  it("at a phone's width the top bar is the name and the login on one line, the pages' links below: the page's heading shows in the first screen's top third", async () => {
    const { page } = await stack.admin();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(stack.url('/deliveries'));
    await heading(page, 'Deliveries');
    const header = (await page.locator('header.topbar').boundingBox())!;
    const brand = (await page.locator('header .brand').boundingBox())!;
    const user = (await page.getByRole('button', { name: 'Log out' }).boundingBox())!;
    const links = page.getByRole('navigation', { name: 'Console' }).getByRole('link');
    const boxes = await Promise.all((await links.all()).map(async (l) => (await l.boundingBox())!));
    await screenshot(page, 'narrow-topbar');
    // brand and Log out on the first line; every link below them and on the screen
    expect(Math.abs(brand.y + brand.height / 2 - (user.y + user.height / 2))).toBeLessThan(12);
    for (const b of boxes) {
      expect(b.y).toBeGreaterThanOrEqual(brand.y + brand.height);
      expect(b.x + b.width).toBeLessThanOrEqual(390);
    }
    expect(boxes.length).toBe(6);
    // it was 250 px: a third of the screen before the page began
    expect(header.height).toBeLessThan(140);
  }, 120_000);

  it("the overview's failure rate chart keeps a 0-100 % axis: a 100 % rate is drawn at its top, not half-way up a 0-200 % axis", async () => {
    const down = await startReceiver([{ status: 500, body: 'down' }]);
    onTestFinished(() => down.close());
    const s = await stack.source('rate', { down: { url: `${down.url}/down`, maxAttempts: 1 } });
    await s.send({ id: 'rate-1', type: 'order.created' });
    await eventually(async () => (await s.deliveries())[0]?.status === 'FAILED', 60_000);

    const { page } = await stack.admin();
    await page.goto(stack.url('/'));
    await heading(page, 'Overview');
    const chart = page.getByRole('figure', { name: /^Failure rate per endpoint/ });
    await chart.locator('canvas').waitFor();
    await page.waitForTimeout(500);
    // the topmost pixel of a series' colour (saturated: not the grey grid, not the black labels),
    // as a fraction of the plotting area's height from its top
    const top = await page.evaluate<number | null>(`(() => {
      const figure = document.querySelector('figure[aria-labelledby="chart-failure-title"]');
      const canvas = figure.querySelector('canvas');
      const over = figure.querySelector('.u-over').getBoundingClientRect();
      const box = canvas.getBoundingClientRect();
      const scale = canvas.width / box.width;
      const { data, width } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      const x0 = Math.round((over.left - box.left) * scale), x1 = Math.round((over.right - box.left) * scale);
      const y0 = Math.round((over.top - box.top) * scale), y1 = Math.round((over.bottom - box.top) * scale);
      for (let y = Math.max(0, y0 - 10); y < y1; y++) {
        for (let x = x0; x < x1; x++) {
          const i = (y * width + x) * 4;
          const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
          if (a > 200 && Math.max(r, g, b) - Math.min(r, g, b) > 60) return (y - y0) / (y1 - y0);
        }
      }
      return null;
    })()`);
    await screenshot(page, 'overview-failure-rate');
    expect(top).not.toBeNull();
    expect(top!).toBeLessThan(0.1);
  }, 120_000);

  it("an ordered delivery's place is named as its event's number in ingest's order, not a bare 'position 5' read as the fifth of its key", async () => {
    const refusing = await startReceiver([{ status: 400, body: 'no' }]);
    onTestFinished(() => refusing.close());
    const s = await stack.source('place', {
      orders: { url: `${refusing.url}/orders`, maxAttempts: 1, ordering: { key: 'event.data.customer' } },
    });
    const eventId = await s.send({ id: 'place-1', type: 'order.created', customer: 'cus_1' });
    const delivery = await eventually(async () => {
      const d = (await s.deliveries())[0];
      return d?.status === 'FAILED' && d;
    }, 60_000);
    const { position } = (await stack.db('webhook_event').where({ id: eventId }).first('position')) as { position: string | number };

    const { page } = await stack.admin();
    await page.goto(stack.url(`/deliveries/${delivery.id}`));
    await heading(page, 'Delivery');
    const order = page.locator('.fields > div', { has: page.getByText('Order', { exact: true }) }).locator('dd');
    await order.getByText('holds its key').waitFor();
    expect(await order.innerText()).toBe(`holds its key: the deliveries of its key behind it wait (event #${position} in ingest's order)`);
  }, 120_000);
});
