import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contentEvent, type ContentEvent } from '../../../src/content/event-view.js';
import { formatExpressionError } from '../../../src/content/filter.js';
import { compileTransform, TRANSFORM_MAX_BYTES, TRANSFORM_MAX_LENGTH, TRANSFORM_TIME_LIMIT_MS } from '../../../src/content/transform.js';

const fixture = (name: string) => readFileSync(new URL(`../../fixtures/payloads/${name}`, import.meta.url));
const event = (type: string, payload: Buffer | string, headers: Record<string, string> = {}): ContentEvent =>
  contentEvent({
    source: 'src',
    eventType: type,
    externalEventId: 'ext-1',
    receivedAt: new Date('2026-03-14T15:09:26Z'),
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer secret', ...headers },
    payload: Buffer.from(payload),
  });
const stripe = event('invoice.paid', fixture('stripe-invoice-paid.json'));
const github = event('push', fixture('github-push.json'), { 'X-GitHub-Event': 'push' });
const shopify = event('orders/create', fixture('shopify-order-create.json'));

async function apply(expr: string, e: ContentEvent) {
  const t = compileTransform(expr);
  if (!t.ok) throw new Error(`does not compile: ${formatExpressionError(t.error)}`);
  return t.value.apply(e);
}

describe('transform over real provider payloads', () => {
  it.each([
    ['{"kind": type, "total": data.amount}', event('order.created', '{"amount": 42}'), { kind: 'order.created', total: 42 }],
    [
      '{"kind": type, "invoice": data.data.object.id, "total": data.data.object.amount_paid / 100, "currency": $uppercase(data.data.object.currency), "lines": $count(data.data.object.lines.data)}',
      stripe,
      { kind: 'invoice.paid', invoice: 'in_1PqR8qLkdIwHu7ixAbCdEfGh', total: 125, currency: 'USD', lines: 2 },
    ],
    [
      '{"text": data.pusher.name & " pushed " & $string($count(data.commits)) & " commits to " & data.repository.full_name, "event": headers."x-github-event"}',
      github,
      { text: 'octocat pushed 2 commits to octo-org/octo-repo', event: 'push' },
    ],
    ['{"deploy": $boolean(data.commits[$contains(message, "[deploy]")])}', github, { deploy: true }],
    ['{"skus": data.line_items.sku, "total": $number(data.total_price)}', shopify, { skus: ['IPOD2008PINK', 'IPOD2008BLACK'], total: 403 }],
    ['{"vendors": data.line_items[vendor != null].vendor}', shopify, { vendors: 'Apple' }],
    // absent fields drop out of an object; null stays
    ['{"coupon": data.data.object.coupon, "discount": data.data.object.discount}', stripe, { discount: null }],
    // the credentials never reach the expression
    ['{"auth": headers.authorization, "ct": headers."content-type"}', stripe, { ct: 'application/json' }],
    ['{"id": id, "source": source, "at": receivedAt}', stripe, { id: 'ext-1', source: 'src', at: '2026-03-14T15:09:26.000Z' }],
    ['$replace(type, /^invoice\\.(\\w+)$/, "billing.$1")', stripe, 'billing.paid'],
    ['$pad(type, -15, "*")', stripe, '***invoice.paid'],
    // a body that is not JSON: data is null
    ['{"raw": data}', event('t', 'a=b'), { raw: null }],
  ] as const)('%s', async (expr, e, body) => {
    const out = await apply(expr, e);
    expect(out).toHaveProperty('body');
    if ('body' in out) expect(JSON.parse(out.body.toString('utf8'))).toEqual(body);
  });

  it.each([
    ['nothing.here', 'gave nothing'],
    ['$number("x")', 'D3030'],
    ['data.data.object.lines.data.amount.nope()', ''],
    ['function($x) { $x }', 'not JSON'],
  ])('%s fails the delivery with the reason', async (expr, words) => {
    const out = await apply(expr, stripe);
    expect(out).toHaveProperty('error');
    if ('error' in out) expect(out.error).toContain(words);
  });
});

describe('compiling a transform names the problem and where', () => {
  it.each([
    ['{"kind": type, "total": ', 1, 24, 'S0203'],
    // JSONata places a token's position at its end
    ['{"a": 1,\n "b": $match(type, /(?=x)/)}', 2, 26, 'invalid RE2 pattern'],
    ['', 1, 1, 'empty transform'],
    ['1'.repeat(TRANSFORM_MAX_LENGTH + 1), 1, TRANSFORM_MAX_LENGTH + 1, 'transform too long'],
  ] as const)('%s', (expr, line, column, words) => {
    const t = compileTransform(expr);
    expect(t.ok).toBe(false);
    if (t.ok) return;
    expect(t.error.message).toContain(words);
    expect([t.error.line, t.error.column]).toEqual([line, column]);
  });
});

describe('a transform is bounded', () => {
  it.each([
    // loops and recursion: JSONata's own time and depth checks, between steps
    ['( $f := function($x){ $f($x) }; $f(1) )', 'evaluation steps'],
    ['( $f := function($x){ 1 + $f($x) }; $f(1) )', 'D1011'],
    ['$sort([1..100000], function($a, $b){ $a < $b })', ''],
    // sizes made in one step
    ['$map([1..10000000], function($x){ $x * 2 })', 'D2015'],
    ['$pad("x", 100000000)', `over ${TRANSFORM_MAX_BYTES}`],
    ['$length($reduce([1..40], function($a, $i){ $a & $a }, "x"))', `over ${TRANSFORM_MAX_BYTES} bytes`],
  ])('%s stops in milliseconds', async (expr, words) => {
    const started = performance.now();
    const out = await apply(expr, stripe);
    expect(out).toHaveProperty('error');
    if ('error' in out) expect(out.error).toContain(words);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('running past the time limit because the thread was busy is retryable, not a final failure', async () => {
    const t = compileTransform('{"kind": type, "invoice": data.data.object.id, "total": data.data.object.amount_paid / 100}');
    if (!t.ok) throw new Error('does not compile');
    const pending = t.value.apply(stripe);
    // the evaluation has begun; the thread is taken elsewhere (a starved or busy worker) past the limit
    const until = Date.now() + TRANSFORM_TIME_LIMIT_MS + 50;
    while (Date.now() < until);
    expect(await pending).toEqual({
      error: `transform ran past its time limit of ${TRANSFORM_TIME_LIMIT_MS} ms (a busy worker, or a slow expression)`,
      retryable: true,
    });
    // the same input, given the thread, makes its body
    expect(await t.value.apply(stripe)).toHaveProperty('body');
  });

  it('regular expressions run on RE2: (a+)+$ answers in milliseconds', async () => {
    // this thread's CPU, not the wall clock, which a loaded machine stretches; a backtracking
    // engine would take 2^30 steps
    const cpu = process.threadCpuUsage();
    const out = await apply('{"m": $contains(data.s, /(a+)+$/)}', event('t', JSON.stringify({ s: `${'a'.repeat(30)}!` })));
    expect(out).toEqual({ body: Buffer.from('{"m":false}') });
    const used = process.threadCpuUsage(cpu);
    expect((used.user + used.system) / 1000).toBeLessThan(500);
  });

  it(`a body over ${TRANSFORM_MAX_BYTES} bytes is refused`, async () => {
    const out = await apply('[1..50].($pad("", 30000, "x"))', stripe);
    expect(out).toHaveProperty('error');
    if ('error' in out) expect(out.error).toMatch(/the body would be \d+ bytes/);
  });
});
