import { describe, expect, it } from 'vitest';
import { diagnoseTemporalAuth, isAuthorizationRefusal } from '../../../src/temporal/tls-diagnosis.js';

/** A JWT-shaped key with these claims (unsigned: the diagnosis reads, never verifies). */
const jwt = (claims: object): string =>
  ['{"alg":"RS256"}', JSON.stringify(claims), 'sig'].map((p) => Buffer.from(p).toString('base64url')).join('.');
const NOW = Date.parse('2026-11-25T12:00:00Z');

describe('diagnoseTemporalAuth', () => {
  it.each([
    { name: 'no key', key: undefined, says: 'the server refuses calls without an API key: set TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE' },
    {
      name: 'an expired JWT from the file',
      key: { setting: 'TEMPORAL_API_KEY_FILE' as const, key: jwt({ exp: NOW / 1000 - 60 }) },
      says: 'the API key (TEMPORAL_API_KEY_FILE) expired at 2026-11-25T11:59:00.000Z: set a current one',
    },
    {
      name: 'a current JWT',
      key: { setting: 'TEMPORAL_API_KEY' as const, key: jwt({ exp: NOW / 1000 + 60 }) },
      says: 'the server refuses the API key (TEMPORAL_API_KEY): it is not signed by a key the server trusts or does not grant access to namespace "orders" (TEMPORAL_NAMESPACE)',
    },
    {
      name: 'an opaque key',
      key: { setting: 'TEMPORAL_API_KEY' as const, key: 'not-a-jwt' },
      says: 'the server refuses the API key (TEMPORAL_API_KEY): it is not signed by a key the server trusts or does not grant access to namespace "orders" (TEMPORAL_NAMESPACE)',
    },
    {
      name: 'a file that could not be read',
      key: { setting: 'TEMPORAL_API_KEY_FILE' as const, key: undefined },
      says: 'the server refuses the API key (TEMPORAL_API_KEY_FILE): it is not signed by a key the server trusts or does not grant access to namespace "orders" (TEMPORAL_NAMESPACE)',
    },
  ])('$name', ({ key, says }) => {
    const why = diagnoseTemporalAuth(key, 'orders', NOW);
    expect(why.startsWith(says)).toBe(true);
    // never the key itself
    if (key?.key) expect(why).not.toContain(key.key);
  });
});

describe('isAuthorizationRefusal', () => {
  it.each([
    {
      name: 'PERMISSION_DENIED by code',
      err: Object.assign(new Error('7 PERMISSION_DENIED: Request unauthorized.'), { code: 7 }),
      is: true,
    },
    { name: 'UNAUTHENTICATED by code', err: Object.assign(new Error('x'), { code: 16 }), is: true },
    {
      name: "the client's wrapper, the refusal as its cause",
      err: new Error('Failed to connect to Temporal server', { cause: Object.assign(new Error('denied'), { code: 7 }) }),
      is: true,
    },
    { name: "the worker core's text", err: new Error('Permission denied: Request unauthorized.'), is: true },
    { name: 'UNAVAILABLE', err: Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }), is: false },
    { name: 'a deadline', err: new Error('Failed to connect before the deadline'), is: false },
  ])('$name', ({ err, is }) => {
    expect(isAuthorizationRefusal(err)).toBe(is);
  });
});
