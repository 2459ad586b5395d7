import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DELIVERY_LIMITS, endpointState } from '../../../src/domain/records.js';
import type { WebhookEndpointResource, WebhookEndpointSpec } from '../../../src/custom-resources/specs.js';
import { endpointRow } from '../../../src/custom-resources/to-rows.js';

const resource = (spec: Partial<WebhookEndpointSpec>): WebhookEndpointResource => ({
  apiVersion: 'webhookfanout.io/v1alpha1',
  kind: 'WebhookEndpoint',
  metadata: { name: 'orders', namespace: 'shop' },
  spec: { source: 'shop', url: 'http://orders.internal/hook', ...spec },
});
const noSecrets = async () => undefined;

// spec.autoDisable -> the row's threshold, the same way for dev mode and the operator.
describe('endpointRow: autoDisable', () => {
  it.each<[string, Partial<WebhookEndpointSpec>, number]>([
    ['absent: the default, never', {}, 0],
    ['a threshold', { autoDisable: { afterConsecutiveFailures: 5 } }, 5],
    ['0: never', { autoDisable: { afterConsecutiveFailures: 0 } }, 0],
  ])('%s', async (_what, spec, expected) => {
    expect((await endpointRow(resource(spec), noSecrets)).autoDisableAfter).toBe(expected);
  });

  it('the default for new resources is never (the specification delivers to every matching endpoint)', () => {
    expect(DELIVERY_LIMITS.autoDisableAfter.default).toBe(0);
  });

  it('an autoDisable block without a threshold is refused with what the CRD says, naming the field', async () => {
    await expect(endpointRow(resource({ autoDisable: {} }), noSecrets)).rejects.toMatchObject({
      kind: 'permanent',
      code: 'invalid_spec',
      message: expect.stringMatching(/^autoDisable\.afterConsecutiveFailures is required/),
    });
  });
});

// spec.signing StandardWebhooksEd25519: the whsk_ keys checked, their whpk_ public keys in the row
describe('endpointRow: StandardWebhooksEd25519 signing', () => {
  const seed = (n: number) => `whsk_${Buffer.alloc(32, n).toString('base64')}`;
  const signing = (previous: boolean): Partial<WebhookEndpointSpec> => ({
    signing: {
      type: 'StandardWebhooksEd25519',
      secretRef: { name: 'k', key: 'current' },
      ...(previous ? { previousSecretRef: { name: 'k', key: 'previous' } } : {}),
    },
  });
  const secrets = (values: Record<string, string>) => async (_ns: string, _name: string, key: string) => values[key];

  it.each([
    ['one key', false, 1],
    ['during a rotation: both, the current first', true, 2],
  ])('%s', async (_what, previous, keys) => {
    const row = await endpointRow(resource(signing(previous)), secrets({ current: seed(1), previous: seed(2) }));
    expect(row).toMatchObject({ signingType: 'STANDARD_WEBHOOKS_ED25519', signingSecret: seed(1) });
    expect(row.previousSigningSecret).toBe(previous ? seed(2) : null);
    expect(row.signingPublicKeys).toHaveLength(keys);
    expect(row.signingPublicKeys?.every((k) => /^whpk_[A-Za-z0-9+/]{43}=$/.test(k))).toBe(true);
    expect(new Set(row.signingPublicKeys).size).toBe(keys);
  });

  it.each([
    ['a whsec_ key', `whsec_${Buffer.alloc(32, 1).toString('base64')}`],
    ['a seed of 31 bytes', `whsk_${Buffer.alloc(31, 1).toString('base64')}`],
    ['no prefix', Buffer.alloc(32, 1).toString('base64')],
  ])('%s is InvalidSecret, naming the field and not the value', async (_what, value) => {
    const err = await endpointRow(resource(signing(false)), secrets({ current: value })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'invalid_secret', message: expect.stringMatching(/^signing\.secretRef: .*whsk_/) });
    expect(String((err as Error).message)).not.toContain(value);
  });

  it('the other signing types have no public keys', async () => {
    const row = await endpointRow(
      resource({ signing: { type: 'HMAC', secretRef: { name: 'k', key: 'current' } } }),
      secrets({ current: 's' }),
    );
    expect(row.signingPublicKeys).toEqual([]);
  });
});

// spec.auth OAuth2ClientCredentials: the client in the row (no secret), its secret or key resolved and checked
describe('endpointRow: OAuth2 client credentials', () => {
  const rsaKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'sec1' }).toString();
  const edKey = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const smallRsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const secp256k1 = generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const oauth2 = (over: Record<string, unknown> = {}): Partial<WebhookEndpointSpec> =>
    ({
      auth: {
        type: 'OAuth2ClientCredentials',
        // an override of undefined removes the field
        oauth2: Object.fromEntries(
          Object.entries({
            tokenUrl: 'https://idp.partner.example/oauth/token',
            clientId: 'webhook-fanout',
            clientSecretRef: { name: 'o', key: 'secret' },
            ...over,
          }).filter(([, v]) => v !== undefined),
        ),
      },
    }) as unknown as Partial<WebhookEndpointSpec>;
  const secrets = (values: Record<string, string>) => async (_ns: string, _name: string, key: string) => values[key];

  it.each<[string, Record<string, unknown>, string, object]>([
    [
      'ClientSecretBasic by default, the secret in auth_secret',
      {},
      's3cret',
      { clientAuthentication: 'ClientSecretBasic', scopes: [], audience: null, keyId: null },
    ],
    [
      'ClientSecretPost with scopes and an audience',
      { clientAuthentication: 'ClientSecretPost', scopes: ['webhooks.write'], audience: 'https://api.partner.example' },
      's3cret',
      { clientAuthentication: 'ClientSecretPost', scopes: ['webhooks.write'], audience: 'https://api.partner.example' },
    ],
    [
      'PrivateKeyJwt with an RSA key and its kid',
      { clientAuthentication: 'PrivateKeyJwt', clientSecretRef: undefined, privateKeySecretRef: { name: 'o', key: 'key' }, keyId: 'k1' },
      rsaKey,
      { clientAuthentication: 'PrivateKeyJwt', keyId: 'k1' },
    ],
    [
      'PrivateKeyJwt with an EC P-256 key (SEC1)',
      { clientAuthentication: 'PrivateKeyJwt', clientSecretRef: undefined, privateKeySecretRef: { name: 'o', key: 'key' } },
      ecKey,
      { clientAuthentication: 'PrivateKeyJwt' },
    ],
    [
      'PrivateKeyJwt with an Ed25519 key',
      { clientAuthentication: 'PrivateKeyJwt', clientSecretRef: undefined, privateKeySecretRef: { name: 'o', key: 'key' } },
      edKey,
      { clientAuthentication: 'PrivateKeyJwt' },
    ],
  ])('%s', async (_what, over, secret, expected) => {
    const row = await endpointRow(resource(oauth2(over)), secrets({ secret: 's3cret', key: secret }));
    expect(row).toMatchObject({ authType: 'OAUTH2_CLIENT_CREDENTIALS', authSecret: secret, authUsername: null });
    expect(row.authOAuth2).toMatchObject({ tokenUrl: 'https://idp.partner.example/oauth/token', clientId: 'webhook-fanout', ...expected });
    expect(JSON.stringify(row.authOAuth2)).not.toContain(secret);
  });

  it.each<[string, Record<string, unknown>, string | undefined, RegExp]>([
    ['PrivateKeyJwt without privateKeySecretRef', { clientAuthentication: 'PrivateKeyJwt' }, undefined, /privateKeySecretRef/],
    [
      'ClientSecretPost without clientSecretRef',
      { clientAuthentication: 'ClientSecretPost', clientSecretRef: undefined },
      undefined,
      /clientSecretRef/,
    ],
    ['keyId without PrivateKeyJwt', { keyId: 'k1' }, undefined, /keyId is only used/],
    [
      'a key that is not PEM',
      { clientAuthentication: 'PrivateKeyJwt', clientSecretRef: undefined, privateKeySecretRef: { name: 'o', key: 'key' } },
      'not a key',
      /privateKeySecretRef: not a PEM private key/,
    ],
    [
      'an RSA key under 2048 bits',
      { clientAuthentication: 'PrivateKeyJwt', clientSecretRef: undefined, privateKeySecretRef: { name: 'o', key: 'key' } },
      smallRsa,
      /at least 2048 bits/,
    ],
    [
      'an EC key on another curve',
      { clientAuthentication: 'PrivateKeyJwt', clientSecretRef: undefined, privateKeySecretRef: { name: 'o', key: 'key' } },
      secp256k1,
      /P-256 or P-384/,
    ],
  ])('%s is refused, naming the field and not the value', async (_what, over, key, message) => {
    const err = await endpointRow(resource(oauth2(over)), secrets({ secret: 's3cret', ...(key ? { key } : {}) })).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'permanent', message: expect.stringMatching(message) });
    if (key) {
      expect((err as { code: string }).code).toBe('invalid_secret');
      expect(String((err as Error).message)).not.toContain(key);
    }
  });

  it('the client secret from a missing Secret key is SecretKeyNotFound, naming the field', async () => {
    await expect(endpointRow(resource(oauth2()), noSecrets)).rejects.toMatchObject({
      code: 'secret_missing',
      message: expect.stringMatching(/^auth\.oauth2\.clientSecretRef: Secret shop\/o has no key "secret"/),
    });
  });

  it('oauth2 with another auth type, or OAuth2ClientCredentials without it, is refused', async () => {
    const basic = {
      auth: { type: 'Bearer', secretRef: { name: 'o', key: 'secret' }, oauth2: { tokenUrl: 'https://idp/t', clientId: 'c' } },
    } as Partial<WebhookEndpointSpec>;
    await expect(endpointRow(resource(basic), secrets({ secret: 's' }))).rejects.toMatchObject({ code: 'invalid_spec' });
    const bare = { auth: { type: 'OAuth2ClientCredentials' } } as Partial<WebhookEndpointSpec>;
    await expect(endpointRow(resource(bare), secrets({ secret: 's' }))).rejects.toMatchObject({ code: 'invalid_spec' });
  });

  it('a rotated client secret is a new row value (the next attempt asks for a token with it)', async () => {
    const before = await endpointRow(resource(oauth2()), secrets({ secret: 'one' }));
    const after = await endpointRow(resource(oauth2()), secrets({ secret: 'two' }));
    expect([before.authSecret, after.authSecret]).toEqual(['one', 'two']);
  });
});

describe('endpointState', () => {
  it.each<[Date | null, string]>([
    [null, 'ACTIVE'],
    [new Date('2026-11-23T10:00:00Z'), 'DISABLED'],
  ])('disabledAt %s -> %s', (disabledAt, state) => {
    expect(endpointState({ disabledAt })).toBe(state);
  });
});
