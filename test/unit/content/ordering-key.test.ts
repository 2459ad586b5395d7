import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contentEvent, type ContentEvent } from '../../../src/content/event-view.js';
import { assertEndpointExpressions, expressionProblems } from '../../../src/content/endpoint-expressions.js';
import { FILTER_MAX_LENGTH, formatExpressionError } from '../../../src/content/filter.js';
import { compileOrderingKey, ORDERING_KEY_MAX_LENGTH, orderingKeyProblem } from '../../../src/content/ordering-key.js';
import { ERROR_CODES } from '../../../src/domain/error-codes.js';
import { isAppError } from '../../../src/domain/errors.js';

// spec.ordering.key (docs/ordering.md): the key an event gets, or why it gets none (then it goes
// into the endpoint's no-key sequence), and the words an invalid key is refused with:
// Ready=False InvalidOrderingKey, dev mode and `validate` (content/endpoint-expressions.ts).

const event = (payload: string, type = 'customer.updated'): ContentEvent =>
  contentEvent({
    source: 'stripe',
    eventType: type,
    externalEventId: 'evt_1',
    receivedAt: new Date('2026-03-14T15:09:26Z'),
    headers: { 'Content-Type': 'application/json', 'X-Tenant': 'acme' },
    payload: Buffer.from(payload),
  });

const customer = event(JSON.stringify({ customer: 'cus_9', amount: 42, count: 3, gone: null, paid: true, tags: ['a'], meta: { a: 1 } }));
const invoice = event(
  readFileSync(new URL('../../fixtures/payloads/stripe-invoice-paid.json', import.meta.url)).toString('utf8'),
  'invoice.paid',
);

function keyOf(expr: string, e: ContentEvent) {
  const c = compileOrderingKey(expr);
  if (!c.ok) throw new Error(`does not compile: ${formatExpressionError(c.error)}`);
  return c.value.keyOf(e);
}

describe('the key an event gets', () => {
  it.each([
    ['event.data.customer', customer, 'cus_9'],
    ['event.data.data.object.customer', invoice, 'cus_QhR8x2yZ3aB4cD'],
    ['event.type', customer, 'customer.updated'],
    ['event.source', customer, 'stripe'],
    ["event.data.customer + '/' + event.type", customer, 'cus_9/customer.updated'],
    ["event.headers['x-tenant']", customer, 'acme'],
    // a number made a string by the expression is a key
    ['string(event.data.amount)', customer, '42'],
    ["has(event.data.nope) ? event.data.nope : 'none'", customer, 'none'],
    // the empty string is a key like any other (one sequence for every event that gives it)
    ["''", customer, ''],
  ] as const)('%s -> %j', (expr, e, key) => {
    expect(keyOf(expr, e)).toEqual({ key });
  });

  it(`a key longer than ${ORDERING_KEY_MAX_LENGTH} characters is cut to its first ${ORDERING_KEY_MAX_LENGTH}`, () => {
    const long = 'x'.repeat(ORDERING_KEY_MAX_LENGTH) + 'tail';
    expect(keyOf('event.data.long', event(JSON.stringify({ long })))).toEqual({ key: 'x'.repeat(ORDERING_KEY_MAX_LENGTH) });
  });
});

describe('an event whose key expression fails or gives no string: no key (the no-key sequence), and why', () => {
  it.each([
    // a missing field
    ['event.data.nope', customer, 'field not found: nope'],
    ['event.data.meta.b', customer, 'field not found: b'],
    // a value that is not a string, named as CEL sees it
    ['event.data.amount', customer, 'the key gave a double, not a string'],
    ['1', customer, 'the key gave an int, not a string'],
    ['event.data.gone', customer, 'the key gave null, not a string'],
    ['event.data.paid', customer, 'the key gave a bool, not a string'],
    ['event.data.tags', customer, 'the key gave a list, not a string'],
    ['event.data.meta', customer, 'the key gave a map, not a string'],
    ['1u', customer, 'the key gave a uint, not a string'],
    ["b'cus_9'", customer, 'the key gave bytes, not a string'],
    // a wrong type inside the expression
    ["event.data.amount + 'x'", customer, 'no matching overload'],
  ] as const)('%s -> %s', (expr, e, words) => {
    const outcome = keyOf(expr, e);
    expect(outcome).toHaveProperty('error');
    if ('error' in outcome) expect(outcome.error.toLowerCase()).toContain(words);
  });
});

describe('an invalid key: the words of InvalidOrderingKey, the same in the operator, dev mode and validate', () => {
  it.each([
    ['event.data.', 'spec.ordering.key at 1:11: syntax error'],
    ['event.typo', "spec.ordering.key at 1:6: event has no field 'typo'"],
    ['customer', "spec.ordering.key at 1:1: undeclared reference to 'customer'"],
    ['event.type.lowerAscii()', 'spec.ordering.key at 1:11: unknown function lowerAscii()'],
    ['', 'spec.ordering.key at 1:1: empty key'],
    [
      'x'.repeat(FILTER_MAX_LENGTH + 1),
      `spec.ordering.key at 1:${FILTER_MAX_LENGTH + 1}: key too long: ${FILTER_MAX_LENGTH + 1} characters, at most ${FILTER_MAX_LENGTH}`,
    ],
  ] as const)('%s -> %s', (key, words) => {
    const problem = orderingKeyProblem(key);
    expect(problem).toBeDefined();
    expect(problem!.startsWith(words)).toBe(true);
    // validate lists it; the reconcile (and dev mode) refuse with it: Ready=False InvalidOrderingKey
    expect(expressionProblems({ ordering: { key } })).toEqual([{ code: 'invalid_ordering_key', message: problem }]);
    let thrown: unknown;
    try {
      assertEndpointExpressions({ ordering: { key } });
    } catch (err) {
      thrown = err;
    }
    expect(isAppError(thrown) && thrown.code).toBe('invalid_ordering_key');
    expect(isAppError(thrown) && thrown.message).toBe(problem);
    expect(ERROR_CODES.invalid_ordering_key.reason).toBe('InvalidOrderingKey');
  });

  it.each([['event.data.customer'], ["event.data.customer + '/' + event.type"], ['event.data.amount']])(
    '%s compiles: no problem (a key that gives no string is decided per event, not refused)',
    (key) => {
      expect(orderingKeyProblem(key)).toBeUndefined();
      expect(expressionProblems({ ordering: { key } })).toEqual([]);
    },
  );

  it('a filter and a key that both fail are both listed, each in its own words', () => {
    expect(expressionProblems({ filter: '', ordering: { key: '' } })).toEqual([
      { code: 'invalid_filter', message: 'spec.filter at 1:1: empty filter' },
      { code: 'invalid_ordering_key', message: 'spec.ordering.key at 1:1: empty key' },
    ]);
  });
});
