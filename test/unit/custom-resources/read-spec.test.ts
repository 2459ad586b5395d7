import { describe, expect, it } from 'vitest';
import type { WebhookEndpointResource, WebhookEndpointSpec } from '../../../src/custom-resources/specs.js';
import { WebhookEndpointSpec as EndpointSchema } from '../../../src/custom-resources/specs.js';
import { readEndpointSpec } from '../../../src/custom-resources/read-spec.js';
import { endpointRow } from '../../../src/custom-resources/to-rows.js';
import { specProblem } from '../../../src/custom-resources/validate.js';

// A manifest that worked before the PascalCase and duration conventions (docs/operator.md) keeps
// working: its older spellings are read as the new ones, once, and give the same row.

const base = { source: 'shop', url: 'http://orders.internal/hook' };
const ref = { name: 'orders-webhook', key: 'token' };
const resource = (spec: WebhookEndpointSpec): WebhookEndpointResource => ({
  apiVersion: 'webhookfanout.io/v1alpha1',
  kind: 'WebhookEndpoint',
  metadata: { name: 'orders', namespace: 'shop' },
  spec,
});
const KEY = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
const secrets = async () => KEY;

describe('older spellings are normalised on read', () => {
  it.each<[string, WebhookEndpointSpec, WebhookEndpointSpec]>([
    ['auth.type NONE', { ...base, auth: { type: 'NONE' } }, { ...base, auth: { type: 'None' } }],
    [
      'auth.type BASIC',
      { ...base, auth: { type: 'BASIC', username: 'u', secretRef: ref } },
      { ...base, auth: { type: 'Basic', username: 'u', secretRef: ref } },
    ],
    ['auth.type BEARER', { ...base, auth: { type: 'BEARER', secretRef: ref } }, { ...base, auth: { type: 'Bearer', secretRef: ref } }],
    [
      'auth.type STANDARD_WEBHOOKS',
      { ...base, auth: { type: 'STANDARD_WEBHOOKS', secretRef: ref, previousSecretRef: ref } },
      { ...base, auth: { type: 'StandardWebhooks', secretRef: ref, previousSecretRef: ref } },
    ],
    // before spec.signing, auth.type said the signing: read as spec.signing, the same row
    [
      'auth.type StandardWebhooks (the combined form)',
      { ...base, auth: { type: 'StandardWebhooks', secretRef: ref, previousSecretRef: ref } },
      { ...base, signing: { type: 'StandardWebhooks', secretRef: ref, previousSecretRef: ref } },
    ],
    [
      'auth.type STANDARD_WEBHOOKS (the combined form, older spelling)',
      { ...base, auth: { type: 'STANDARD_WEBHOOKS', secretRef: ref } },
      { ...base, signing: { type: 'StandardWebhooks', secretRef: ref } },
    ],
    [
      'auth.type HMAC (the combined form)',
      { ...base, auth: { type: 'HMAC', secretRef: ref } },
      { ...base, signing: { type: 'HMAC', secretRef: ref } },
    ],
    ['timeoutSeconds', { ...base, timeoutSeconds: 30 }, { ...base, timeout: '30s' }],
    ['timeoutSeconds 120', { ...base, timeoutSeconds: 120 }, { ...base, timeout: '2m' }],
    ['timeoutSeconds 90', { ...base, timeoutSeconds: 90 }, { ...base, timeout: '1m30s' }],
    [
      'both at once',
      { ...base, auth: { type: 'BEARER', secretRef: ref }, timeoutSeconds: 5 },
      { ...base, auth: { type: 'Bearer', secretRef: ref }, timeout: '5s' },
    ],
  ])('%s: valid, read and stored as the new spelling is', async (_what, older, newer) => {
    expect(specProblem(EndpointSchema, older)).toBeUndefined();
    expect(specProblem(EndpointSchema, newer)).toBeUndefined();
    expect(readEndpointSpec(older)).toEqual(readEndpointSpec(newer));
    expect(await endpointRow(resource(older), secrets)).toEqual(await endpointRow(resource(newer), secrets));
  });

  it.each<[string, Partial<WebhookEndpointSpec>, string | undefined, string | undefined, number]>([
    ['neither: the default', {}, 'None', undefined, 10],
    ['HMAC is spelled the same in both, and is a signing', { auth: { type: 'HMAC', secretRef: ref } }, undefined, 'HMAC', 10],
    [
      'Bearer and a signing: both',
      { auth: { type: 'Bearer', secretRef: ref }, signing: { type: 'StandardWebhooks', secretRef: ref } },
      'Bearer',
      'StandardWebhooks',
      10,
    ],
    ['timeout wins over the timeoutSeconds the API server defaults', { timeout: '45s', timeoutSeconds: 10 }, 'None', undefined, 45],
  ])('%s', (_what, spec, authType, signingType, seconds) => {
    const read = readEndpointSpec({ ...base, auth: { type: 'None' }, ...spec });
    expect(read.auth?.type).toBe(authType);
    expect(read.signing?.type).toBe(signingType);
    expect(read.timeoutSeconds).toBe(seconds);
    expect(read).not.toHaveProperty('timeout');
  });

  it.each([
    ['0s', /^timeout must be from 1s to 120s/],
    ['121s', /^timeout must be from 1s to 120s/],
    ['3m', /^timeout must be from 1s to 120s/],
  ])('timeout %s is refused in the CRD’s words', (timeout, message) => {
    expect(() => readEndpointSpec({ ...base, timeout })).toThrow(
      expect.objectContaining({ code: 'invalid_spec', message: expect.stringMatching(message) }),
    );
  });

  it.each(['30', '1.5s', '500ms', '10 s', 'PT10S'])('timeout %s is not a duration the schema accepts', (timeout) => {
    expect(specProblem(EndpointSchema, { ...base, timeout })).toMatch(/^spec\.timeout: /);
  });

  it.each<[string, Partial<WebhookEndpointSpec>, RegExp]>([
    [
      'a signing in auth.type and spec.signing both',
      { auth: { type: 'HMAC', secretRef: ref }, signing: { type: 'StandardWebhooks', secretRef: ref } },
      /^spec\.signing and an auth\.type that signs/,
    ],
    [
      'auth.previousSecretRef with Bearer',
      { auth: { type: 'Bearer', secretRef: ref, previousSecretRef: ref } },
      /auth\.previousSecretRef is only used/,
    ],
  ])('%s is refused in the CRD’s words', (_what, spec, message) => {
    expect(() => readEndpointSpec({ ...base, ...spec })).toThrow(
      expect.objectContaining({ code: 'invalid_spec', message: expect.stringMatching(message) }),
    );
  });

  it('spec.signing with Bearer gives a row with both, each from its own Secret key', async () => {
    const values: Record<string, string> = { token: 'tok', key: KEY };
    const row = await endpointRow(
      resource({
        ...base,
        auth: { type: 'Bearer', secretRef: ref },
        signing: { type: 'StandardWebhooks', secretRef: { name: 'k', key: 'key' } },
      }),
      async (_ns, _name, key) => values[key],
    );
    expect(row).toMatchObject({ authType: 'BEARER', authSecret: 'tok', signingType: 'STANDARD_WEBHOOKS', signingSecret: KEY });
  });

  it('an auth type in neither spelling is refused', () => {
    expect(specProblem(EndpointSchema, { ...base, auth: { type: 'Standard_Webhooks' } })).toMatch(/^spec\.auth\.type: /);
  });
});
