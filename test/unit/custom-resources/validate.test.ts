import { describe, expect, it } from 'vitest';
import { InboundCredentialSpec, WebhookEndpointSpec } from '../../../src/custom-resources/specs.js';
import { credentialSpecProblem, specProblem } from '../../../src/custom-resources/validate.js';
import { CREDENTIAL_RULE_BREAKS, VALID_CREDENTIAL_SPECS } from '../../support/credential-specs.js';

// What dev mode and the operator tell a user about a bad spec: one line naming the field.
describe('specProblem', () => {
  const ok = { source: 'shop', url: 'http://receiver.internal/hook' };
  it.each([
    ['a valid endpoint', WebhookEndpointSpec, ok, undefined],
    ['maxAttempts 0', WebhookEndpointSpec, { ...ok, maxAttempts: 0 }, 'spec.maxAttempts: must be >= 1'],
    ['a fractional timeout', WebhookEndpointSpec, { ...ok, timeoutSeconds: 1.5 }, 'spec.timeoutSeconds: must be integer'],
    [
      "an ftp url: the schema's own message",
      WebhookEndpointSpec,
      { ...ok, url: 'ftp://files.example/x' },
      /^spec\.url: must be an http:\/\/ or https:\/\/ URL without credentials/,
    ],
    ['a password in the url', WebhookEndpointSpec, { ...ok, url: 'http://u:pw@host/x' }, /^spec\.url: .*put them in spec\.auth/],
    ['an unknown auth type', WebhookEndpointSpec, { ...ok, auth: { type: 'DIGEST' } }, /^spec\.auth\.type: /],
    ['an unknown field, named', WebhookEndpointSpec, { ...ok, retries: 3 }, 'spec: must not have additional properties (retries)'],
    // url is optional in the schema since spec.destination: an HTTP endpoint without one is refused by readEndpointSpec (destination-rows.test.ts)
    ['a missing url', WebhookEndpointSpec, { source: 'shop' }, undefined],
    ['autoDisable with a threshold', WebhookEndpointSpec, { ...ok, autoDisable: { afterConsecutiveFailures: 5 } }, undefined],
    [
      'a negative autoDisable threshold',
      WebhookEndpointSpec,
      { ...ok, autoDisable: { afterConsecutiveFailures: -1 } },
      'spec.autoDisable.afterConsecutiveFailures: must be >= 0',
    ],
    [
      'an unknown field of autoDisable',
      WebhookEndpointSpec,
      { ...ok, autoDisable: { after: 5 } },
      /^spec\.autoDisable: must not have additional properties \(after\)/,
    ],
    ['a valid credential', InboundCredentialSpec, { source: 's', username: 'u', passwordSecretRef: { name: 'a', key: 'b' } }, undefined],
  ] as const)('%s', (_what, schema, spec, expected) => {
    const problem = specProblem(schema, spec);
    if (expected === undefined) expect(problem).toBeUndefined();
    else if (typeof expected === 'string') expect(problem).toBe(expected);
    else expect(problem).toMatch(expected);
  });
});

// The rules the InboundCredential CRD states in CEL, as dev mode checks them: the same words
// (test/operator/crds.test.ts has kube-apiserver refuse the same specs with them).
describe('credentialSpecProblem', () => {
  it.each(VALID_CREDENTIAL_SPECS)('valid: %s', (_what, spec) => {
    expect(credentialSpecProblem(spec)).toBeUndefined();
  });
  it.each(CREDENTIAL_RULE_BREAKS)('a rule broken: %s', (_what, spec, message) => {
    expect(credentialSpecProblem(spec)).toMatch(message);
  });
  const ref = { name: 'a', key: 'b' };
  it.each([
    [
      'four secretRefs',
      { source: 's', verification: { type: 'Stripe', secretRefs: [ref, ref, ref, ref] } },
      'spec.verification.secretRefs: must not have more than 3 items',
    ],
    [
      'no secretRefs in the list',
      { source: 's', verification: { type: 'Stripe', secretRefs: [] } },
      'spec.verification.secretRefs: must not have fewer than 1 items',
    ],
    [
      'a tolerance of 0',
      { source: 's', verification: { type: 'Stripe', secretRefs: [ref], toleranceSeconds: 0 } },
      'spec.verification.toleranceSeconds: must be >= 1',
    ],
    ['an unknown type', { source: 's', verification: { type: 'Twilio', secretRefs: [ref] } }, /^spec\.verification\.type: /],
    [
      'an unknown algorithm',
      { source: 's', verification: { type: 'HMAC', secretRefs: [ref], header: 'x', algorithm: 'md5' } },
      /^spec\.verification\.algorithm: /,
    ],
  ] as const)('the schema: %s', (_what, spec, expected) => {
    expect(credentialSpecProblem(spec)).toMatch(expected);
  });
});
