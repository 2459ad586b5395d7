import { describe, expect, it } from 'vitest';
import { tokenFailureOutcome } from '../../../../src/destinations/http/oauth2-destination.js';
import {
  DEFAULT_LIFETIME_MS,
  isCredentialsRefusal,
  isRefusal,
  redacted,
  REFRESH_MARGIN_MS,
  tokenTimes,
} from '../../../../src/destinations/http/oauth2-tokens.js';

// When a kept OAuth2 token is renewed, and how a token request's failure ends the attempt.
describe('tokenTimes: renewed a margin before expires_in', () => {
  const now = 1_000_000;
  it.each<[string, number | undefined, number, number]>([
    ['an hour: renewed a minute before', 3600, 3600_000 - REFRESH_MARGIN_MS, 3600_000],
    ['two minutes: a quarter of its life (30 s) before', 120, 90_000, 120_000],
    ['two seconds: a quarter of its life before', 2, 1_500, 2_000],
    ['no expires_in: the default lifetime', undefined, DEFAULT_LIFETIME_MS - REFRESH_MARGIN_MS, DEFAULT_LIFETIME_MS],
    ['0 (nonsense): the default lifetime', 0, DEFAULT_LIFETIME_MS - REFRESH_MARGIN_MS, DEFAULT_LIFETIME_MS],
    ['a year: capped at a day', 365 * 86_400, 86_400_000 - REFRESH_MARGIN_MS, 86_400_000],
  ])('%s', (_what, expiresIn, renewAfter, expiresAfter) => {
    expect(tokenTimes(now, expiresIn)).toEqual({ renewAt: now + renewAfter, expiresAt: now + expiresAfter });
  });
});

describe("isRefusal: the token endpoint's 4xx is final, except those that ask to come back", () => {
  it.each<[number, boolean]>([
    [400, true],
    [401, true],
    [403, true],
    [404, true],
    [408, false],
    [429, false],
    [500, false],
    [503, false],
  ])('HTTP %i -> %s', (status, refusal) => {
    expect(isRefusal(status)).toBe(refusal);
  });
});

describe('isCredentialsRefusal: the answers that say our client credentials are wrong (the delivery waits, the endpoint is not Ready)', () => {
  it.each<[number, unknown, boolean]>([
    [401, 'invalid_client', true],
    [400, 'invalid_client', true],
    [400, 'unauthorized_client', true],
    [401, undefined, true],
    [400, 'invalid_scope', false],
    [400, 'invalid_request', false],
    [403, undefined, false],
    [503, 'invalid_client', false],
    [429, 'unauthorized_client', false],
  ])('HTTP %i %s -> %s', (status, error, refused) => {
    expect(isCredentialsRefusal(status, error)).toBe(refused);
  });
});

describe('tokenFailureOutcome: unavailable and refused credentials wait; other refusals follow the error registry', () => {
  it.each([
    [
      { code: 'oauth2_token_refused' as const, detail: 'the token endpoint answered HTTP 401 invalid_client', credentialsRefused: true },
      { kind: 'deferred', cause: 'token', reason: 'refused', statusClass: 'token' },
    ],
    [
      { code: 'oauth2_token_refused' as const, detail: 'the token endpoint answered HTTP 400 invalid_scope' },
      { kind: 'permanent', statusClass: 'token' },
    ],
    [
      { code: 'oauth2_token_unavailable' as const, detail: 'the token endpoint answered HTTP 503' },
      { kind: 'deferred', cause: 'token', reason: 'unavailable', statusClass: 'token' },
    ],
    [
      { code: 'oauth2_token_unavailable' as const, detail: 'no answer', timedOut: true },
      { kind: 'deferred', cause: 'token', reason: 'unavailable', statusClass: 'token' },
    ],
    [
      { code: 'address_blocked' as const, detail: 'token endpoint: address 169.254.169.254 is blocked' },
      { kind: 'permanent', statusClass: 'blocked' },
    ],
  ])('%o -> %o', (failure, expected) => {
    const outcome = tokenFailureOutcome(failure, 12);
    expect(outcome).toMatchObject({ ...expected, status: null, body: null, durationMs: 12 });
    expect(outcome.kind !== 'success' && outcome.error).toBe(`${failure.code}: ${failure.detail}`);
  });
});

const SECRET = 'pa+ss/w0rd=42&x "é"';
const ID = 'client one';
const form = (s: string) => new URLSearchParams({ s }).toString().slice(2);
const base64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

describe('redacted: no form of the client secret a token endpoint may echo stays in the words', () => {
  it.each([
    ['as it is', SECRET],
    ['percent-encoded', encodeURIComponent(SECRET)],
    ["form-encoded (ClientSecretPost's body)", form(SECRET)],
    ['JSON-escaped', JSON.stringify(SECRET).slice(1, -1)],
    ["ClientSecretBasic's header (base64 of the form-encoded id:secret)", base64(`${form(ID)}:${form(SECRET)}`)],
    ['the same without its padding', base64(`${form(ID)}:${form(SECRET)}`).replace(/=+$/, '')],
    ['base64 of the unencoded pair', base64(`${ID}:${SECRET}`)],
    ['base64url of the pair', Buffer.from(`${form(ID)}:${form(SECRET)}`).toString('base64url')],
  ])('%s', (_what, echoed) => {
    const failure = { code: 'oauth2_token_unavailable' as const, detail: `HTTP 503: could not handle ${echoed} (retry later)` };
    const out = redacted(failure, SECRET, ID);
    expect(out.detail).toBe('HTTP 503: could not handle *** (retry later)');
    expect(out.code).toBe(failure.code);
  });

  it('leaves words without the secret as they are (the same object), and a secret too short to look for', () => {
    const failure = { code: 'oauth2_token_refused' as const, detail: 'invalid_client: client authentication failed' };
    expect(redacted(failure, SECRET, ID)).toBe(failure);
    const short = { code: 'oauth2_token_refused' as const, detail: 'abc in the words' };
    expect(redacted(short, 'abc', 'x').detail).toBe('abc in the words');
  });
});
