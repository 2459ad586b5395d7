import { describe, expect, it } from 'vitest';
import { screenshot } from './support/browser.js';
import { consoleStack } from './support/console-stack.js';
import { heading } from './support/sign-in.js';

// What an SRE saw wrong when looking at the console's pages with eyes (docs/console.md), each
// checked here in Debian's chromium against dev mode as `npm start` runs it.

describe('web console as an SRE looks at it', () => {
  const stack = consoleStack({ flow: 'implicit' });

  it("at a phone's width (390 x 844) no page is wider than the screen: wide tables scroll inside their card, the overview's charts fit", async () => {
    const { page } = await stack.admin();
    await page.setViewportSize({ width: 390, height: 844 });
    // an endpoint, so that the endpoints table (with its column of actions) is drawn
    const s = await stack.source('narrow', { hook: { url: 'https://partner.example/a/long/path/of/the/partner/hook?tenant=acme' } });
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
});
