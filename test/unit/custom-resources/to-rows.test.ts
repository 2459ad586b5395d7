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

describe('endpointState', () => {
  it.each<[Date | null, string]>([
    [null, 'ACTIVE'],
    [new Date('2026-11-23T10:00:00Z'), 'DISABLED'],
  ])('disabledAt %s -> %s', (disabledAt, state) => {
    expect(endpointState({ disabledAt })).toBe(state);
  });
});
