import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contentEvent, type ContentEvent } from '../../../src/content/event-view.js';
import {
  compileFilter,
  FILTER_COST_LIMIT,
  FILTER_MAX_LENGTH,
  FILTER_TIME_LIMIT_MS,
  formatExpressionError,
} from '../../../src/content/filter.js';

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/payloads/${name}`, import.meta.url));

const event = (source: string, type: string, id: string, payload: Buffer | string, headers: Record<string, string> = {}): ContentEvent =>
  contentEvent({
    source,
    eventType: type,
    externalEventId: id,
    receivedAt: new Date('2026-03-14T15:09:26Z'),
    headers: { 'Content-Type': 'application/json', ...headers },
    payload: Buffer.from(payload),
  });

const stripe = event('stripe', 'invoice.paid', 'evt_1PqR8sLkdIwHu7ix0a1b2c3d', fixture('stripe-invoice-paid.json'), {
  'Stripe-Signature': 't=1,v1=abc',
  Authorization: 'Basic c2VjcmV0',
});
const github = event('github', 'push', '72d3162e-cc78-11e3-81ab-4c9367dc0958', fixture('github-push.json'), {
  'X-GitHub-Event': 'push',
  'X-GitHub-Delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
});
const shopify = event('shopify', 'orders/create', 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043', fixture('shopify-order-create.json'), {
  'X-Shopify-Topic': 'orders/create',
  'X-Shopify-Shop-Domain': 'example.myshopify.com',
});
const form = event('slack', 'command', 'c1', 'token=x&text=hello', { 'content-type': 'application/x-www-form-urlencoded' });

function run(expr: string, e: ContentEvent) {
  const c = compileFilter(expr);
  if (!c.ok) throw new Error(`does not compile: ${formatExpressionError(c.error)}`);
  return c.value.evaluate(e);
}

describe('filter over real provider payloads', () => {
  it.each([
    // the example
    ["event.type.startsWith('invoice.') && event.data.data.object.amount_paid >= 10000", stripe, true],
    ["event.type.startsWith('invoice.') && event.data.data.object.amount_paid >= 20000", stripe, false],
    // operators: == != < <= > >= && || ! ?: + - * / % in []
    ["event.source == 'stripe' && event.source != 'github'", stripe, true],
    ['event.data.data.object.amount_due < 12501 && event.data.data.object.amount_due <= 12500', stripe, true],
    ['event.data.data.object.total > 12499 && event.data.data.object.total >= 12500', stripe, true],
    ['!(event.data.data.object.paid) || false', stripe, false],
    ["(event.data.data.object.status == 'paid' ? 1 : 2) == 1", stripe, true],
    ['event.data.data.object.subtotal + 1.0 - 2.0 == 12499.0', stripe, true],
    ['event.data.data.object.total * 2.0 / 4.0 == 6250.0', stripe, true],
    ['12 % 5 == 2', stripe, true],
    ["'acme' in [event.data.data.object.metadata.tenant, 'other']", stripe, true],
    ["'tenant' in event.data.data.object.metadata", stripe, true],
    ["event.data.data.object.lines.data[1].description.contains('seat')", stripe, true],
    ["event.data.data.object.metadata['plan'] == 'pro'", stripe, true],
    // a JSON number is a double; an int literal compares with it
    ['event.data.data.object.amount_paid == 12500', stripe, true],
    // has() and absent fields
    // a field present with null: has() is false in @bufbuild/cel 0.6 (docs/decisions.md), == null is true
    ['has(event.data.data.object.discount)', stripe, false],
    ['event.data.data.object.discount == null', stripe, true],
    ['has(event.data.data.object.coupon)', stripe, false],
    ["!has(event.data.data.object.coupon) || event.data.data.object.coupon == 'x'", stripe, true],
    ['has(event.headers.authorization)', stripe, false],
    // size(), string functions, matches() on RE2
    ['size(event.data.data.object.lines.data) == 2 && event.data.data.object.lines.data.size() == 2', stripe, true],
    ['size(event.type) == 12 && event.type.size() == 12', stripe, true],
    ["event.type.endsWith('.paid') && event.type.startsWith('invoice')", stripe, true],
    ["event.data.data.object.customer_email.matches('^[a-z.]+@example\\\\.com$')", stripe, true],
    ["event.headers['stripe-signature'].startsWith('t=')", stripe, true],
    // comprehensions: all, exists, exists_one, map, filter
    ["event.data.commits.exists(c, c.message.contains('[deploy]'))", github, true],
    ['event.data.commits.all(c, c.distinct)', github, true],
    ["event.data.commits.exists_one(c, c.author.username == 'octocat')", github, true],
    ["event.data.commits.map(c, c.author.username) == ['octocat', 'hubot']", github, true],
    ["event.data.commits.filter(c, 'README.md' in c.modified).size() == 1", github, true],
    ["event.data.ref == 'refs/heads/main' && event.headers['x-github-event'] == 'push'", github, true],
    ["event.data.repository.topics.exists(t, t == 'payments')", github, false],
    ["event.data.line_items.exists(i, i.vendor == 'Apple')", shopify, true],
    // a null inside a list element: compared, not an error
    ["event.data.line_items.all(i, i.vendor == null || i.vendor == 'Apple')", shopify, true],
    ['double(event.data.total_price) > 400.0', shopify, true],
    ['int(double(event.data.current_total_price)) == 403', shopify, true],
    ["event.data.tags.contains('vip') && !event.data.tags.contains('retail')", shopify, true],
    ["string(event.data.test) == 'true' && bool('true')", shopify, true],
    ["event.data.shipping_address.country_code in ['US', 'CA'] && event.data.billing_address == null", shopify, true],
    ["event.headers['x-shopify-shop-domain'].endsWith('.myshopify.com')", shopify, true],
    // timestamps and durations
    ["event.receivedAt > timestamp('2026-01-01T00:00:00Z')", stripe, true],
    ["event.receivedAt - timestamp('2026-03-14T15:00:00Z') < duration('10m')", stripe, true],
    ['event.receivedAt.getFullYear() == 2026 && event.receivedAt.getMonth() == 2 && event.receivedAt.getDayOfMonth() == 13', stripe, true],
    ["event.receivedAt.getHours('Europe/Paris') == 16 && event.receivedAt.getDayOfWeek() == 6", stripe, true],
    ['timestamp(event.data.commits[0].timestamp) < timestamp(event.data.commits[1].timestamp)', github, true],
    // the type, id, source of the event
    ["event.id == 'evt_1PqR8sLkdIwHu7ix0a1b2c3d' && type(event.data) == map", stripe, true],
    // a body that is not JSON: data is null
    ['event.data == null', form, true],
    ['event.data != null', stripe, true],
  ] as const)('%s', (expr, e, expected) => {
    expect(run(expr, e)).toEqual({ matched: expected });
  });

  it.each([
    // a missing field without has(): an error, which prepare counts as not matched
    ['event.data.data.object.coupon.id == 1', stripe, 'no such key'],
    // a field of null
    ['event.data.data.object.discount.coupon == 1', stripe, ''],
    // data is null when the body is not JSON
    ["event.data.text == 'hello'", form, ''],
    // a wrong type
    ['event.data.total_price > 10', shopify, 'no matching overload'],
    // a result that is not a bool
    ['event.type', stripe, 'not a bool'],
  ] as const)('%s -> an evaluation error, not a match', (expr, e, words) => {
    const outcome = run(expr, e);
    expect(outcome).toHaveProperty('error');
    if ('error' in outcome && words !== '') expect(outcome.error.toLowerCase()).toContain(words === 'no such key' ? 'not found' : words);
  });
});

describe('compiling a filter names the problem and where', () => {
  it.each([
    ['event.type.startsWith(', 1, 11, 'syntax error'],
    ["event.type == 'a' &&\n  event.typo == 'b'", 2, 8, "event has no field 'typo'"],
    ['evnt.type == "x"', 1, 1, "undeclared reference to 'evnt'"],
    ["event.type.startsWith('a', 'b')", 1, 11, 'does not take 2 argument'],
    ['event.type.lowerAscii() == "a"', 1, 11, 'unknown function lowerAscii()'],
    ["event.type.matches('(?=x)')", 1, 20, 'invalid RE2 pattern'],
    ['', 1, 1, 'empty filter'],
    ['x'.repeat(FILTER_MAX_LENGTH + 1), 1, FILTER_MAX_LENGTH + 1, 'filter too long'],
    [Array.from({ length: 600 }, () => 'true').join('&&'), 1, 1, 'expression too large'],
  ] as const)('%s', (expr, line, column, words) => {
    const c = compileFilter(expr);
    expect(c.ok).toBe(false);
    if (c.ok) return;
    expect(c.error.message).toContain(words);
    if (words !== 'expression too large') expect([c.error.line, c.error.column]).toEqual([line, column]);
  });

  it('a comprehension variable named like a field is in scope, and event inside it is still event', () => {
    expect(run('event.data.commits.exists(event, event.distinct)', github)).toEqual({ matched: true });
    expect(run("event.data.commits.exists(c, event.type == 'push')", github)).toEqual({ matched: true });
  });
});

describe('a filter is bounded', () => {
  const list = `[${Array.from({ length: 200 }, (_, i) => i).join(',')}]`;

  it('matches() runs on RE2: (a+)+$ against thirty a and a ! answers in milliseconds', () => {
    const e = event('s', 't', 'i', JSON.stringify({ s: `${'a'.repeat(30)}!` }));
    // this thread's CPU, not the wall clock (a loaded machine stretched it past the bound); a
    // backtracking engine would take 2^30 steps
    const cpu = process.threadCpuUsage();
    expect(run("event.data.s.matches('(a+)+$')", e)).toEqual({ matched: false });
    const used = process.threadCpuUsage(cpu);
    expect((used.user + used.system) / 1000).toBeLessThan(100);
  });

  it(`the cost limit stops nested comprehensions after ${FILTER_COST_LIMIT} steps, even under an ||`, () => {
    for (const expr of [
      `${list}.all(a, ${list}.all(b, ${list}.all(c, true)))`,
      `${list}.exists(a, ${list}.exists(b, a + b < 0)) || true`,
    ]) {
      const started = performance.now();
      const outcome = run(expr, stripe);
      expect(outcome).toHaveProperty('error');
      if ('error' in outcome) expect(outcome.error).toMatch(/cost limit exceeded|time limit exceeded/);
      expect(performance.now() - started).toBeLessThan(1000);
    }
  });

  it(`steps that each do a lot stop at the time limit, ${FILTER_TIME_LIMIT_MS} ms of this thread's CPU (a starved worker's wall clock does not count)`, () => {
    const items = Array.from({ length: 5000 }, (_, i) => `item-${i}`);
    const e = event('s', 't', 'i', JSON.stringify({ items }));
    const cpu = process.threadCpuUsage();
    const outcome = run('event.data.items.all(x, x in event.data.items)', e);
    expect(outcome).toEqual({ error: `time limit exceeded: over ${FILTER_TIME_LIMIT_MS} ms of CPU` });
    const used = process.threadCpuUsage(cpu);
    expect((used.user + used.system) / 1000).toBeLessThan(FILTER_TIME_LIMIT_MS * 3);
  });

  it('a filter within the limits is not cut short (one comprehension over 2000 items)', () => {
    const items = Array.from({ length: 2000 }, (_, i) => i);
    const e = event('s', 't', 'i', JSON.stringify({ items }));
    expect(run('event.data.items.all(x, x >= 0.0)', e)).toEqual({ matched: true });
  });
});
