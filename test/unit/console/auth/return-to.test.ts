import { describe, expect, it } from 'vitest';
import { CALLBACK_PATH, safeReturnTo } from '../../../../src/console/auth/return-to.js';

describe('where the console returns after login: its own pages only', () => {
  it.each([
    ['/console/events?source=shop', '/console/events?source=shop'],
    ['/console/deliveries/d1', '/console/deliveries/d1'],
    ['/console/', '/console/'],
    // anything else opens the overview
    [null, '/console/'],
    ['', '/console/'],
    ['/console', '/console/'],
    ['https://evil.example/console/', '/console/'],
    ['//evil.example/console/', '/console/'],
    ['/api/events', '/console/'],
    ['/consoleevil/', '/console/'],
    [`${CALLBACK_PATH}#access_token=x`, '/console/'],
    ['javascript:alert(1)', '/console/'],
  ])('%s -> %s', (asked, expected) => {
    expect(safeReturnTo(asked)).toBe(expected);
  });
});
