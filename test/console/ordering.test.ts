import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startReceiver, type RecordedRequest } from '../support/receiver.js';
import { eventually } from '../support/wait.js';
import { axeViolations, screenshot } from './support/browser.js';
import { consoleStack } from './support/console-stack.js';
import { heading, readOnlyUser } from './support/sign-in.js';

// Ordered delivery in the console (docs/ordering.md), in Debian's chromium against dev mode as
// `npm start` runs it, with a real receiver: a delivery waiting behind a FAILED one says so and
// links it; the FAILED one that holds its key has a Skip button (for users with replay:webhooks
// only) that asks for a confirmation, then calls the skip API; the deliveries behind it arrive,
// in order.

const seqOf = (r: RecordedRequest): number => (JSON.parse(r.body.toString('utf8')) as { seq: number }).seq;

describe('web console: an ordered key blocked by a FAILED delivery', () => {
  const stack = consoleStack({ flow: 'implicit' });

  it('a waiting delivery says what it waits behind (a link); the FAILED one is skipped from its page, once confirmed; the rest arrive in order', async () => {
    // the poison event is refused with a 4xx (final); the others are taken
    const target = await startReceiver((_n, req) =>
      (JSON.parse(req.body.toString('utf8')) as { poison?: boolean }).poison ? { status: 422, body: 'unprocessable' } : { status: 200 },
    );
    onTestFinished(() => target.close());
    const s = await stack.source('ordered', {
      orders: { url: `${target.url}/orders`, maxAttempts: 1, ordering: { key: 'event.data.customer' } },
    });
    // one at a time, each after its 200: ingest's order is the order sent
    const events: string[] = [];
    for (const [seq, poison] of [
      [1, true],
      [2, false],
      [3, false],
    ] as const) {
      events.push(await s.send({ id: `order-${randomBytes(4).toString('hex')}`, type: 'order.updated', seq, customer: 'cus_1', poison }));
    }
    const [blocking, waiting] = await eventually(async () => {
      const ds = await s.deliveries();
      const byEvent = events.map((e) => ds.find((d) => d.eventId === e));
      return byEvent[0]?.status === 'FAILED' && byEvent.every((d) => d !== undefined) && (byEvent as Array<{ id: string; status: string }>);
    }, 60_000);
    expect(target.requests.map(seqOf)).toEqual([1]);

    const admin = await stack.admin();
    const { page } = admin;
    // the event's deliveries table says it too, the id cut short
    await page.goto(stack.url(`/events/${events[1]}`));
    await heading(page, 'Event');
    const row = page.getByRole('table', { name: 'Deliveries of this event' }).getByRole('row').filter({ hasText: 'PENDING' });
    await row.getByText('waiting behind delivery').waitFor({ timeout: 60_000 });
    expect(await row.getByRole('link', { name: `waiting behind delivery ${blocking!.id}` }).innerText()).toBe(blocking!.id.slice(0, 8));

    await page.goto(stack.url(`/deliveries/${waiting!.id}`));
    await heading(page, 'Delivery');
    const fields = page.locator('.fields');
    await fields.getByText('cus_1', { exact: true }).waitFor();
    const behind = fields.getByRole('link', { name: `waiting behind delivery ${blocking!.id}` });
    await behind.waitFor({ timeout: 60_000 });
    expect(await fields.innerText()).toContain(`waiting behind delivery ${blocking!.id}`);
    // a waiting delivery has nothing to replay or skip
    expect(await page.getByRole('button', { name: /Skip|Replay/ }).count()).toBe(0);
    await screenshot(page, 'ordering-waiting');

    await behind.click();
    await heading(page, 'Delivery');
    expect(page.url()).toBe(stack.url(`/deliveries/${blocking!.id}`));
    await fields.getByText('holds its key').waitFor();
    expect(
      (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical'),
      'axe-core on the blocking delivery',
    ).toEqual([]);

    // nothing is skipped before it is confirmed; Cancel takes the question back
    await page.getByRole('button', { name: 'Skip delivery…' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm the skip' });
    await confirm.waitFor();
    await screenshot(page, 'ordering-skip-confirm');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });
    expect(target.requests.map(seqOf)).toEqual([1]);

    await page.getByRole('button', { name: 'Skip delivery…' }).click();
    await confirm.getByRole('button', { name: 'Confirm skip' }).click();
    await page.getByText('Skipped: the delivery stays FAILED and no longer holds its key').waitFor();
    await fields.getByText('skipped: it no longer holds its key').waitFor();
    expect(await page.getByRole('button', { name: 'Skip delivery…' }).count()).toBe(0);
    // still FAILED, and it may still be replayed (out of order)
    expect(await fields.getByText('FAILED', { exact: true }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Replay delivery' }).count()).toBe(1);
    await screenshot(page, 'ordering-skipped');

    await eventually(async () => target.requests.length === 3, 60_000);
    expect(target.requests.map(seqOf)).toEqual([1, 2, 3]);
    await page.goto(stack.url(`/deliveries/${waiting!.id}`));
    await heading(page, 'Delivery');
    await fields.getByText('SUCCESS', { exact: true }).waitFor({ timeout: 60_000 });
    expect(await fields.getByText('waiting behind delivery').count()).toBe(0);
  }, 240_000);

  it('a read-only user sees what a delivery waits behind, and no Skip button', async () => {
    const target = await startReceiver([{ status: 422, body: 'unprocessable' }, { status: 200 }]);
    onTestFinished(() => target.close());
    const s = await stack.source('ordered-ro', { orders: { url: `${target.url}/orders`, maxAttempts: 1, ordering: {} } });
    const first = await s.send({ id: `ro-${randomBytes(4).toString('hex')}`, type: 'order.updated', seq: 1 });
    await s.send({ id: `ro-${randomBytes(4).toString('hex')}`, type: 'order.updated', seq: 2 });
    const blocking = await eventually(async () => {
      const ds = await s.deliveries();
      const d = ds.find((x) => x.eventId === first);
      return ds.length === 2 && d?.status === 'FAILED' && d;
    }, 60_000);

    const { page } = await stack.signedIn(readOnlyUser(stack.dev.output()), `/deliveries/${blocking.id}`);
    await heading(page, 'Delivery');
    const fields = page.locator('.fields');
    await fields.getByText('holds its key').waitFor();
    // the whole endpoint is one sequence: no key expression
    await fields.getByText('the whole endpoint (one sequence)').waitFor();
    expect(await page.getByRole('button', { name: /Skip|Replay/ }).count()).toBe(0);
    expect(target.requests).toHaveLength(1);
  }, 120_000);
});
