import { describe, expect, it } from 'vitest';
import { endpointBadge, tokenHost, tokenWait } from '../../../../src/console/ui/endpoint-state.js';

type Shown = Parameters<typeof endpointBadge>[0];
type Auth = Shown['auth'];

const refusal = { since: '2026-11-29T12:00:00.000Z', message: 'oauth2_token_refused: invalid_client' };
const none: Auth = { type: 'NONE', username: null, secretSet: false, oauth2: null };
const unavailable = { since: '2026-11-29T13:00:00.000Z', message: 'oauth2_token_unavailable: the token endpoint answered HTTP 503' };
const oauth2 = (tokenRefusal: typeof refusal | null, tokenUnavailable: typeof unavailable | null = null): Auth => ({
  type: 'OAUTH2_CLIENT_CREDENTIALS',
  username: null,
  secretSet: true,
  oauth2: {
    tokenUrl: 'https://***@idp.example:8443/token',
    clientId: 'c',
    scopes: [],
    audience: null,
    clientAuthentication: 'ClientSecretBasic',
    tokenRefusal,
    tokenUnavailable,
  },
});

describe('endpointBadge: what the endpoints page says of an endpoint at a glance', () => {
  const cases: { name: string; e: Shown; label: string; titled: boolean }[] = [
    { name: 'active, nothing wrong', e: { state: 'ACTIVE', deniedReason: null, auth: none }, label: 'ACTIVE', titled: false },
    { name: 'disabled', e: { state: 'DISABLED', deniedReason: null, auth: none }, label: 'DISABLED', titled: false },
    {
      name: 'active, OAuth2 token not refused',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(null) },
      label: 'ACTIVE',
      titled: false,
    },
    {
      name: 'active, token refused: waits',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(refusal) },
      label: 'WAITING',
      titled: true,
    },
    {
      name: 'disabled and token refused: disabled',
      e: { state: 'DISABLED', deniedReason: null, auth: oauth2(refusal) },
      label: 'DISABLED',
      titled: false,
    },
    {
      name: 'active, token endpoint unavailable: waits',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(null, unavailable) },
      label: 'WAITING',
      titled: true,
    },
    {
      name: 'disabled and token endpoint unavailable: disabled',
      e: { state: 'DISABLED', deniedReason: null, auth: oauth2(null, unavailable) },
      label: 'DISABLED',
      titled: false,
    },
    { name: 'revoked', e: { state: 'ACTIVE', deniedReason: 'NotAllowedBySource', auth: none }, label: 'NOT ALLOWED', titled: true },
    {
      name: 'revoked wins over a refused token and disabled',
      e: { state: 'DISABLED', deniedReason: 'SourceNotFound', auth: oauth2(refusal) },
      label: 'NOT ALLOWED',
      titled: true,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const badge = endpointBadge(c.e);
      expect(badge.label).toBe(c.label);
      expect(badge.title !== undefined).toBe(c.titled);
    });
  }
});

describe('tokenWait: why a PENDING delivery does not move while its endpoint waits for a token', () => {
  const refused = { kind: 'refused', ...refusal };
  const down = { kind: 'unavailable', ...unavailable, host: 'idp.example:8443' };
  const cases: { name: string; status: string; e: Shown | undefined; waits: object | null }[] = [
    {
      name: 'PENDING, token refused: waits, with the refusal',
      status: 'PENDING',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(refusal) },
      waits: refused,
    },
    {
      name: 'PENDING, token endpoint unavailable: waits, with its host (no user info), since and what failed',
      status: 'PENDING',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(null, unavailable) },
      waits: down,
    },
    {
      name: 'PENDING, refused and then unavailable: unavailable, what holds it now',
      status: 'PENDING',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(refusal, unavailable) },
      waits: down,
    },
    {
      name: 'FAILED, token endpoint unavailable: it ended',
      status: 'FAILED',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(null, unavailable) },
      waits: null,
    },
    {
      name: 'PENDING, endpoint disabled and token endpoint unavailable: held by the disable',
      status: 'PENDING',
      e: { state: 'DISABLED', deniedReason: null, auth: oauth2(null, unavailable) },
      waits: null,
    },
    { name: 'PENDING, token not refused', status: 'PENDING', e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(null) }, waits: null },
    { name: 'PENDING, no OAuth2', status: 'PENDING', e: { state: 'ACTIVE', deniedReason: null, auth: none }, waits: null },
    { name: 'PENDING, endpoint not loaded yet', status: 'PENDING', e: undefined, waits: null },
    {
      name: 'FAILED, token refused: it ended, it waits for nothing',
      status: 'FAILED',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(refusal) },
      waits: null,
    },
    {
      name: 'SUCCESS, token refused since',
      status: 'SUCCESS',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(refusal) },
      waits: null,
    },
    {
      name: 'PENDING, endpoint disabled and token refused: held by the disable',
      status: 'PENDING',
      e: { state: 'DISABLED', deniedReason: null, auth: oauth2(refusal) },
      waits: null,
    },
    {
      name: 'PENDING, endpoint not allowed and token refused',
      status: 'PENDING',
      e: { state: 'ACTIVE', deniedReason: 'NotAllowedBySource', auth: oauth2(refusal) },
      waits: null,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(tokenWait({ status: c.status }, c.e)).toEqual(c.waits);
    });
  }
});

describe('tokenHost: the token endpoint named by its host', () => {
  it.each<[string, string, string]>([
    ['a URL', 'https://idp.example/oauth/token', 'idp.example'],
    ['with a port', 'https://idp.example:8443/token', 'idp.example:8443'],
    ['user info masked by the API: not shown', 'https://***@idp.example/token', 'idp.example'],
    ['not a URL: as it is', 'idp', 'idp'],
  ])('%s', (_what, url, host) => {
    expect(tokenHost(url)).toBe(host);
  });
});
