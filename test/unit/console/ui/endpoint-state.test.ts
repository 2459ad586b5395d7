import { describe, expect, it } from 'vitest';
import { endpointBadge, tokenWait } from '../../../../src/console/ui/endpoint-state.js';

type Shown = Parameters<typeof endpointBadge>[0];
type Auth = Shown['auth'];

const refusal = { since: '2026-11-29T12:00:00.000Z', message: 'oauth2_token_refused: invalid_client' };
const none: Auth = { type: 'NONE', username: null, secretSet: false, oauth2: null };
const oauth2 = (tokenRefusal: typeof refusal | null): Auth => ({
  type: 'OAUTH2_CLIENT_CREDENTIALS',
  username: null,
  secretSet: true,
  oauth2: {
    tokenUrl: 'https://idp.example/token',
    clientId: 'c',
    scopes: [],
    audience: null,
    clientAuthentication: 'ClientSecretBasic',
    tokenRefusal,
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
  const cases: { name: string; status: string; e: Shown | undefined; waits: boolean }[] = [
    {
      name: 'PENDING, token refused: waits, with the refusal',
      status: 'PENDING',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(refusal) },
      waits: true,
    },
    { name: 'PENDING, token not refused', status: 'PENDING', e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(null) }, waits: false },
    { name: 'PENDING, no OAuth2', status: 'PENDING', e: { state: 'ACTIVE', deniedReason: null, auth: none }, waits: false },
    { name: 'PENDING, endpoint not loaded yet', status: 'PENDING', e: undefined, waits: false },
    {
      name: 'FAILED, token refused: it ended, it waits for nothing',
      status: 'FAILED',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(refusal) },
      waits: false,
    },
    {
      name: 'SUCCESS, token refused since',
      status: 'SUCCESS',
      e: { state: 'ACTIVE', deniedReason: null, auth: oauth2(refusal) },
      waits: false,
    },
    {
      name: 'PENDING, endpoint disabled and token refused: held by the disable',
      status: 'PENDING',
      e: { state: 'DISABLED', deniedReason: null, auth: oauth2(refusal) },
      waits: false,
    },
    {
      name: 'PENDING, endpoint not allowed and token refused',
      status: 'PENDING',
      e: { state: 'ACTIVE', deniedReason: 'NotAllowedBySource', auth: oauth2(refusal) },
      waits: false,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(tokenWait({ status: c.status }, c.e)).toEqual(c.waits ? refusal : null);
    });
  }
});
