import { describe, expect, it } from 'vitest';
import { claimsOf } from '../../../../src/console/auth/claims.js';

const jwt = (claims: unknown) =>
  `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;

describe('what the console reads of its token (presentation only: the API checks every call)', () => {
  it.each([
    [
      'Auth0 permissions array',
      { sub: 'auth0|1', permissions: ['read:webhooks', 'replay:webhooks'] },
      'auth0|1',
      ['read:webhooks', 'replay:webhooks'],
    ],
    ['scope string', { sub: 'u', scope: 'openid read:webhooks' }, 'u', ['openid', 'read:webhooks']],
    ['both', { sub: 'u', permissions: ['read:webhooks'], scope: 'replay:webhooks' }, 'u', ['read:webhooks', 'replay:webhooks']],
    ['neither', { sub: 'u' }, 'u', []],
    ['non-string permissions ignored', { sub: 'u', permissions: [1, null, 'read:webhooks'] }, 'u', ['read:webhooks']],
    ['no subject', { permissions: [] }, 'signed in', []],
    ['unicode subject (base64url with - and _)', { sub: 'ü?>~ü?>~', permissions: [] }, 'ü?>~ü?>~', []],
  ])('%s', (_name, claims, subject, permissions) => {
    const c = claimsOf(jwt(claims));
    expect(c.subject).toBe(subject);
    expect([...c.permissions].sort()).toEqual([...permissions].sort());
  });

  it.each(['', 'not-a-jwt', 'a.b.c', 'a.!!!.c'])('a malformed token gives no permission: %j', (token) => {
    expect(claimsOf(token).permissions.size).toBe(0);
  });
});
