import { describe, expect, it, onTestFinished } from 'vitest';
import type { Page } from 'playwright-core';
import { startReceiver } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { screenshot } from './support/browser.js';
import { consoleStack } from './support/console-stack.js';
import { heading } from './support/sign-in.js';
import { tokenUnavailableSource } from './support/token-endpoint.js';

// What an SRE meets in the console when a receiver breaks (docs/console.md), each checked in
// Debian's chromium against dev mode as `npm start` runs it: the overview's count charts, the
// delivery's endpoint, the operational events' rows, a token endpoint that is down, and the top
// bar by keyboard on a phone.

/**
 * An init script that keeps, on each canvas, the texts drawn on it since it was last cleared whole
 * (uPlot clears its canvas and draws everything again at each redraw): what a person reads on the
 * chart, its tick labels included, which the DOM does not hold.
 */
const RECORD_CANVAS_TEXT = `(() => {
  const proto = CanvasRenderingContext2D.prototype;
  const fill = proto.fillText, clear = proto.clearRect;
  proto.fillText = function (text, x, y, ...rest) {
    (this.canvas.__drawn ??= []).push({ text: String(text), x, y });
    return fill.call(this, text, x, y, ...rest);
  };
  proto.clearRect = function (x, y, w, h) {
    if (x <= 0 && y <= 0 && w >= this.canvas.width && h >= this.canvas.height) this.canvas.__drawn = [];
    return clear.call(this, x, y, w, h);
  };
})();`;

/** The labels drawn left of a chart's plotting area: its y axis's ticks, as they read. */
const yAxisLabels = (page: Page, chartId: string): Promise<string[]> =>
  page.evaluate<string[]>(`(() => {
    const figure = document.querySelector('figure[aria-labelledby="${chartId}-title"]');
    const canvas = figure && figure.querySelector('canvas');
    if (!canvas) return [];
    const box = canvas.getBoundingClientRect();
    const left = (figure.querySelector('.u-over').getBoundingClientRect().left - box.left) * (canvas.width / box.width);
    return (canvas.__drawn ?? []).filter((d) => d.x < left - 1).map((d) => d.text);
  })()`);

describe('web console when a receiver breaks', () => {
  const stack = consoleStack({ flow: 'implicit' });

  it("the overview's count charts put their ticks on whole numbers: no 0.25 delivery on a small count's axis", async () => {
    const down = await startReceiver([{ status: 500, body: 'down' }]);
    onTestFinished(() => down.close());
    const s = await stack.source('whole', { down: { url: `${down.url}/down`, maxAttempts: 1 } });
    await s.send({ id: 'whole-1', type: 'order.created' });
    await eventually(async () => (await s.deliveries())[0]?.status === 'FAILED', 60_000);

    const w = await stack.admin();
    await w.context.addInitScript({ content: RECORD_CANVAS_TEXT });
    const { page } = w;
    await page.goto(stack.url('/'));
    await heading(page, 'Overview');
    const read: Record<string, string[]> = {};
    for (const id of ['chart-events', 'chart-outcomes']) {
      // drawn once the figures came (0 and at least one tick above it)
      read[id] = await eventually(async () => {
        const labels = await yAxisLabels(page, id);
        return labels.length >= 2 && labels;
      }, 30_000);
    }
    await screenshot(page, 'overview-count-ticks');
    for (const [id, labels] of Object.entries(read)) {
      expect(labels, `${id}: ${JSON.stringify(labels)}`).toContain('0');
      expect(
        labels.filter((l) => !/^\d{1,3}(,\d{3})*$/.test(l)),
        `${id}'s y axis reads ${JSON.stringify(labels)}`,
      ).toEqual([]);
    }
  }, 120_000);

  it("a delivery's Summary names its endpoint as a link to that endpoint's deliveries", async () => {
    const receiver = await startReceiver([{ status: 200, body: 'ok' }]);
    onTestFinished(() => receiver.close());
    const s = await stack.source('endpoint-link', { ledger: { url: `${receiver.url}/ledger` } });
    await s.send({ id: 'endpoint-link-1', type: 'order.created' });
    const delivery = await eventually(async () => (await s.deliveries())[0], 60_000);
    const { id: endpointId } = (await stack
      .db('webhook_endpoint')
      .where({ name: s.endpoint('ledger'), active: true })
      .first('id')) as {
      id: string;
    };

    const { page } = await stack.admin();
    await page.goto(stack.url(`/deliveries/${delivery.id}`));
    await heading(page, 'Delivery');
    const field = page.locator('.fields > div', { has: page.getByText('Endpoint', { exact: true }) }).locator('dd');
    const link = field.getByRole('link', { name: `Deliveries of ${s.endpoint('ledger')}` });
    await link.waitFor();
    expect(await link.innerText()).toBe(s.endpoint('ledger'));
    expect(await field.innerText()).toBe(`${s.endpoint('ledger')} (POST ${receiver.url}/ledger)`);
    await screenshot(page, 'delivery-endpoint-link');
    await link.click();
    await heading(page, 'Deliveries');
    expect(page.url()).toBe(stack.url(`/deliveries?endpointId=${endpointId}`));
    await page.getByRole('link', { name: `Delivery ${delivery.id}` }).waitFor();
  }, 120_000);

  it("an operational event's row in the events list names the endpoint and the delivery it is about, each a link", async () => {
    const down = await startReceiver([{ status: 500, body: 'ledger is down' }]);
    onTestFinished(() => down.close());
    const s = await stack.source('ops-about', { ledger: { url: `${down.url}/ledger`, maxAttempts: 1 } });
    await s.send({ id: 'ops-about-1', type: 'order.created' });
    const delivery = await eventually(async () => {
      const d = (await s.deliveries())[0];
      return d?.status === 'FAILED' && d;
    }, 60_000);
    const { id: endpointId } = (await stack
      .db('webhook_endpoint')
      .where({ name: s.endpoint('ledger'), active: true })
      .first('id')) as {
      id: string;
    };
    // its delivery.failed (written in the statement that settled the attempt)
    const opsId = await eventually(async () => {
      const row = (await stack
        .db('webhook_event')
        .where({ source: 'webhook-fanout', event_type: 'delivery.failed', external_event_id: `delivery.failed:${delivery.id}:1` })
        .first('id')) as { id: string } | undefined;
      return row?.id;
    }, 60_000);

    const { page } = await stack.admin();
    await page.goto(stack.url('/events?source=webhook-fanout&type=delivery.failed'));
    await heading(page, 'Events');
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: `Event ${opsId}` }) });
    await row.waitFor({ timeout: 60_000 });
    const endpointLink = row.getByRole('link', { name: `Deliveries of ${s.endpoint('ledger')}` });
    const deliveryLink = row.getByRole('link', { name: `Delivery ${delivery.id}` });
    expect(await endpointLink.innerText()).toBe(s.endpoint('ledger'));
    expect(await deliveryLink.innerText()).toBe(`delivery ${delivery.id.slice(0, 8)}`);
    expect(await endpointLink.getAttribute('href')).toBe(`/console/deliveries?endpointId=${endpointId}`);
    await screenshot(page, 'operations-events-about');
    await deliveryLink.click();
    await heading(page, 'Delivery');
    expect(page.url()).toBe(stack.url(`/deliveries/${delivery.id}`));
  }, 120_000);

  it('a PENDING delivery of an endpoint whose OAuth2 token endpoint is unavailable says so: its host, since when and what failed, as text; never a secret', async () => {
    // the token endpoint answers 503 with words of its own, markup included; the receiver is never reached
    const secret = 'the-client-secret-4711';
    const { s, idp, receiver } = await tokenUnavailableSource(stack, 'token-down', { description: '<b>x</b> maintenance', secret });
    const eventId = await s.send({ id: 'token-down-1', type: 'order.created' });
    // what the worker wrote when the token endpoint failed the delivery (db/endpoints.ts recordTokenUnavailable)
    const row = await eventually(async () => {
      const r = (await stack
        .db('webhook_endpoint')
        .where({ name: s.endpoint('partner'), active: true })
        .first('oauth2_token_unavailable', 'oauth2_token_unavailable_since')) as
        { oauth2_token_unavailable: string | null; oauth2_token_unavailable_since: Date | null } | undefined;
      return r?.oauth2_token_unavailable && r.oauth2_token_unavailable_since ? r : undefined;
    }, 60_000);
    expect(row.oauth2_token_unavailable).toContain('HTTP 503');
    const message = row.oauth2_token_unavailable!;
    const since = row.oauth2_token_unavailable_since!.toISOString();
    const delivery = (await s.deliveries())[0]!;
    expect(delivery.status).toBe('PENDING');
    expect(receiver.requests).toHaveLength(0);
    const host = new URL(idp.url).host;

    const { page } = await stack.admin();
    await page.goto(stack.url(`/deliveries/${delivery.id}`));
    await heading(page, 'Delivery');
    const status = page.locator('.fields > div', { has: page.getByText('Status', { exact: true }) }).locator('dd');
    const note = status.locator('.token-wait');
    await note.waitFor();
    const time = note.locator('time');
    expect(await time.getAttribute('datetime')).toBe(since);
    const shown = await time.innerText();
    expect(await status.innerText()).toMatch(/^PENDING\s+/);
    expect(await note.innerText()).toBe(`waiting: the token endpoint ${host} is unavailable since ${shown} (${message})`);
    expect(await note.locator('b').count()).toBe(0);
    const attempts = page.locator('.fields > div', { has: page.getByText('Attempts', { exact: true }) }).locator('dd');
    expect(await attempts.innerText()).toBe('0');
    await screenshot(page, 'delivery-token-unavailable');
    expect(await page.content()).not.toContain(secret);

    // the event's deliveries table says it in short
    await page.goto(stack.url(`/events/${eventId}`));
    await heading(page, 'Event');
    const inTable = page
      .getByRole('table', { name: 'Deliveries of this event' })
      .getByRole('row')
      .filter({ hasText: s.endpoint('partner') })
      .locator('.token-wait');
    await inTable.waitFor();
    expect(await inTable.innerText()).toBe(`waiting: the token endpoint ${host} is unavailable since ${shown}`);

    // the endpoints page: WAITING, and the warning beside it
    await page.goto(stack.url(`/endpoints?source=${s.source}`));
    await heading(page, 'Endpoints');
    const endpointRow = page.getByRole('row', { name: s.endpoint('partner') });
    const warning = endpointRow.locator('.warning', { hasText: 'Token endpoint' });
    await warning.waitFor();
    expect(await warning.innerText()).toBe(
      `Token endpoint ${host} unavailable since ${await warning.locator('time').innerText()}: ${message}`,
    );
    expect(await warning.locator('b').count()).toBe(0);
    await endpointRow.locator('.status', { hasText: 'WAITING' }).waitFor();
    await screenshot(page, 'endpoints-token-unavailable');
    expect(await page.content()).not.toContain(secret);
  }, 150_000);

  it('on a phone-sized window Tab goes through the top bar as the eye reads it: Log out, beside the name, before the links under it', async () => {
    const { page } = await stack.admin();
    const order: Record<number, { focus: string[]; seen: string[] }> = {};
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 844 });
      await page.goto(stack.url('/deliveries'));
      await heading(page, 'Deliveries');
      // from the skip link, the top bar's first stop, Tab by Tab until focus leaves the top bar
      await page.locator('header .skip-link').focus();
      const stops: Array<{ name: string; x: number; y: number }> = [];
      for (let i = 0; i < 15; i++) {
        await page.keyboard.press('Tab');
        const stop = await page.evaluate<{ name: string; x: number; y: number } | null>(`(() => {
          const el = document.activeElement;
          if (!el || !el.closest('header')) return null;
          const r = el.getBoundingClientRect();
          return { name: el.textContent.trim(), x: r.left, y: r.top + r.height / 2 };
        })()`);
        if (stop === null) break;
        stops.push(stop);
      }
      await screenshot(page, `topbar-tab-${width}`);
      // as the eye reads: line by line (centres within 12 px are one line), left to right
      const seen = [...stops].sort((a, b) => (Math.abs(a.y - b.y) < 12 ? a.x - b.x : a.y - b.y));
      order[width] = { focus: stops.map((s) => s.name), seen: seen.map((s) => s.name) };
    }
    expect(order[390]!.focus).toEqual(order[390]!.seen);
    expect(order[390]!.focus[0]).toBe('Log out');
    expect(order[1280]!.focus).toEqual(order[1280]!.seen);
    expect(order[1280]!.focus.at(-1)).toBe('Log out');
    expect(order[390]!.focus).toHaveLength(7);
  }, 120_000);

  it('an endpoint whose token endpoint was unavailable, then answers 400 invalid_scope, reads neither WAITING nor "unavailable": its deliveries FAIL on that', async () => {
    const { s, idp, receiver } = await tokenUnavailableSource(stack, 'token-answers', {
      description: 'maintenance',
      secret: 'token-answers-secret',
      endpoint: { maxAttempts: 1 },
    });
    await s.send({ id: 'token-answers-1', type: 'order.created' });
    // the worker wrote the 503 on the endpoint's row
    await eventually(async () => {
      const r = (await stack
        .db('webhook_endpoint')
        .where({ name: s.endpoint('partner'), active: true })
        .first('oauth2_token_unavailable')) as { oauth2_token_unavailable: string | null } | undefined;
      return r?.oauth2_token_unavailable?.includes('HTTP 503') === true;
    }, 60_000);

    // back, and it answers: not this scope
    idp.setScript([
      {
        status: 400,
        body: JSON.stringify({ error: 'invalid_scope', error_description: 'not granted' }),
        headers: { 'content-type': 'application/json' },
      },
    ]);
    const delivery = await eventually(async () => {
      const d = (await s.deliveries())[0];
      return d?.status === 'FAILED' && d;
    }, 90_000);
    expect(receiver.requests).toHaveLength(0);

    const { page } = await stack.admin();
    await page.goto(stack.url(`/deliveries/${delivery.id}`));
    await heading(page, 'Delivery');
    await page.getByText('invalid_scope').first().waitFor();

    await page.goto(stack.url(`/endpoints?source=${s.source}`));
    await heading(page, 'Endpoints');
    const endpointRow = page.getByRole('row', { name: s.endpoint('partner') });
    await endpointRow.waitFor();
    await screenshot(page, 'endpoints-token-answers-again');
    const status = await endpointRow.locator('.status').first().innerText();
    const warnings = await endpointRow.locator('.warning').allInnerTexts();
    expect({ status, warnings }).toEqual({ status: 'ACTIVE', warnings: [] });
  }, 180_000);
});
