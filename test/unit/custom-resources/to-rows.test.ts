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

describe('endpointState', () => {
  it.each<[Date | null, string]>([
    [null, 'ACTIVE'],
    [new Date('2026-11-23T10:00:00Z'), 'DISABLED'],
  ])('disabledAt %s -> %s', (disabledAt, state) => {
    expect(endpointState({ disabledAt })).toBe(state);
  });
});
