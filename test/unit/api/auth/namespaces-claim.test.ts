import { describe, expect, it } from 'vitest';
import { scopeOfClaims } from '../../../../src/api/auth/namespaces-claim.js';
import { DEFAULT_NAMESPACES_CLAIM } from '../../../../src/config/settings.js';

const CLAIM = DEFAULT_NAMESPACES_CLAIM;

describe('scopeOfClaims: a token without the claim sees everything, with it only its namespaces', () => {
  it.each<[string, Record<string, unknown>, unknown]>([
    ['no claim: everything, as before tenancy', { sub: 'a' }, null],
    ['one namespace', { [CLAIM]: ['payments'] }, { namespaces: ['payments'] }],
    ['several, sorted and deduplicated', { [CLAIM]: ['shop', 'payments', 'shop'] }, { namespaces: ['payments', 'shop'] }],
    ['an empty list: a tenant of nothing sees nothing', { [CLAIM]: [] }, { namespaces: [] }],
    ['the longest namespace name', { [CLAIM]: ['a'.repeat(63)] }, { namespaces: ['a'.repeat(63)] }],
    ['another claim of the same name elsewhere does not count', { namespaces: ['x'] }, null],
  ])('%s', (_name, claims, want) => {
    expect(scopeOfClaims(claims, CLAIM)).toEqual(want);
  });

  it.each<[string, unknown, RegExp]>([
    ['a string, not a list', 'payments', /must be an array/],
    ['null', null, /must be an array/],
    ['an object', { payments: true }, /must be an array/],
    ['a number in the list', ['payments', 7], /a number/],
    ['null in the list', [null], /a null/],
    ['upper case', ['Payments'], /"Payments", which is not a namespace name/],
    ['a wildcard', ['*'], /not a namespace name/],
    ['an empty name', [''], /not a namespace name/],
    ['a name over 63 characters', ['a'.repeat(64)], /not a namespace name/],
    ['a trailing dash', ['team-'], /not a namespace name/],
    ['a list longer than 256', Array.from({ length: 257 }, (_, i) => `ns${i}`), /more than 256/],
  ])('refused, naming the problem: %s', (_name, value, message) => {
    const got = scopeOfClaims({ [CLAIM]: value }, CLAIM);
    expect(typeof got).toBe('string');
    expect(got).toMatch(message);
  });

  it('reads the configured claim name, not the default one', () => {
    expect(scopeOfClaims({ tenants: ['a'], [CLAIM]: ['b'] }, 'tenants')).toEqual({ namespaces: ['a'] });
  });
});
