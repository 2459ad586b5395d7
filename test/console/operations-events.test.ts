import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startReceiver } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { screenshot } from './support/browser.js';
import { consoleStack } from './support/console-stack.js';
import { heading } from './support/sign-in.js';

// The service's own happenings (docs/operations-events.md) in the console, in Debian's chromium
// against dev mode as `npm start` runs it: a delivery that fails for good raises delivery.failed,
// an event of the reserved source `webhook-fanout`, which the console lists and opens like any
// source's event, its payload naming the endpoint.

describe('web console: operational events', () => {
  const stack = consoleStack({ flow: 'implicit' });

  it('a delivery that failed for good shows as a delivery.failed event of source webhook-fanout, listed by source and opened with its payload', async () => {
    const down = await startReceiver([{ status: 500, body: 'ledger is down' }]);
    onTestFinished(() => down.close());
    const s = await stack.source('ops-seen', { ledger: { url: `${down.url}/ledger`, maxAttempts: 1 } });
    await s.send({ id: `order-${randomBytes(4).toString('hex')}`, type: 'order.created' });
    await eventually(async () => (await s.deliveries())[0]?.status === 'FAILED', 60_000);
    // the delivery.failed of that endpoint (written in the statement that settled its attempt)
    const opsId = await eventually(async () => {
      const { rows } = await stack.db.raw<{ rows: Array<{ id: string }> }>(
        `SELECT id FROM webhook_event WHERE source = 'webhook-fanout' AND event_type = 'delivery.failed'
            AND convert_from(payload, 'UTF8') LIKE ?`,
        [`%${s.endpoint('ledger').split('/').pop() ?? ''}%`],
      );
      return rows[0]?.id;
    }, 60_000);

    const { page } = await stack.admin();
    await page.goto(stack.url('/events?source=webhook-fanout'));
    await heading(page, 'Events');
    const link = page.getByRole('link', { name: `Event ${opsId}` });
    await link.waitFor({ timeout: 60_000 });
    const row = page.getByRole('row').filter({ has: link });
    expect(await row.innerText()).toContain('delivery.failed');
    await screenshot(page, 'operations-events');
    await link.click();
    await heading(page, 'Event');
    expect(page.url()).toBe(stack.url(`/events/${opsId}`));
    // its payload, as a subscriber receives it: the type and the endpoint it is about
    await page.getByText('"type": "delivery.failed"').waitFor();
    await page.getByText('"kind": "WebhookEndpoint"').first().waitFor();
  }, 180_000);
});
