import { describe, expect, it } from 'vitest';
import { InboundCredentialSpec, WebhookEndpointSpec } from '../../../src/resources/schema.js';
import { specProblem } from '../../../src/resources/validate.js';

// What dev mode and the operator tell a user about a bad spec: one line naming the field.
describe('specProblem', () => {
  const ok = { source: 'shop', url: 'http://receiver.internal/hook' };
  it.each([
    ['a valid endpoint', WebhookEndpointSpec, ok, undefined],
    ['maxAttempts 0', WebhookEndpointSpec, { ...ok, maxAttempts: 0 }, 'spec.maxAttempts: must be >= 1'],
    ['a fractional timeout', WebhookEndpointSpec, { ...ok, timeoutSeconds: 1.5 }, 'spec.timeoutSeconds: must be integer'],
    ['an ftp url: the schema\'s own message', WebhookEndpointSpec, { ...ok, url: 'ftp://files.example/x' }, /^spec\.url: must be an http:\/\/ or https:\/\/ URL without credentials/],
    ['a password in the url', WebhookEndpointSpec, { ...ok, url: 'http://u:pw@host/x' }, /^spec\.url: .*put them in spec\.auth/],
    ['an unknown auth type', WebhookEndpointSpec, { ...ok, auth: { type: 'DIGEST' } }, /^spec\.auth\.type: /],
    ['an unknown field, named', WebhookEndpointSpec, { ...ok, retries: 3 }, 'spec: must not have additional properties (retries)'],
    ['a missing url', WebhookEndpointSpec, { source: 'shop' }, /^spec: must have required properties? url/],
    ['autoDisable with a threshold', WebhookEndpointSpec, { ...ok, autoDisable: { afterConsecutiveFailures: 5 } }, undefined],
    ['a negative autoDisable threshold', WebhookEndpointSpec, { ...ok, autoDisable: { afterConsecutiveFailures: -1 } }, 'spec.autoDisable.afterConsecutiveFailures: must be >= 0'],
    ['an unknown field of autoDisable', WebhookEndpointSpec, { ...ok, autoDisable: { after: 5 } }, /^spec\.autoDisable: must not have additional properties \(after\)/],
    ['a credential without passwordSecretRef', InboundCredentialSpec, { source: 's', username: 'u' }, /passwordSecretRef/],
    ['a valid credential', InboundCredentialSpec, { source: 's', username: 'u', passwordSecretRef: { name: 'a', key: 'b' } }, undefined],
  ] as const)('%s', (_what, schema, spec, expected) => {
    const problem = specProblem(schema, spec);
    if (expected === undefined) expect(problem).toBeUndefined();
    else if (typeof expected === 'string') expect(problem).toBe(expected);
    else expect(problem).toMatch(expected);
  });
});
