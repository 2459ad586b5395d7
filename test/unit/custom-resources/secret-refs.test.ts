import { describe, expect, it } from 'vitest';
import { configMapNamesOf, secretNamesOf } from '../../../src/custom-resources/secret-refs.js';

// The Secrets a WebhookEndpoint reads, wherever its spec names them: a change to any of them
// reconciles it (operator/controller.ts), so a rotation reaches the row within seconds.
describe('secretNamesOf', () => {
  it.each<[string, unknown, string[]]>([
    ['no secret', { source: 's', url: 'http://x/h' }, []],
    ['auth.secretRef', { auth: { type: 'Bearer', secretRef: { name: 'token', key: 't' } } }, ['token']],
    [
      "OAuth2's client secret",
      {
        auth: {
          type: 'OAuth2ClientCredentials',
          oauth2: { tokenUrl: 'https://i/t', clientId: 'c', clientSecretRef: { name: 'oauth', key: 's' } },
        },
      },
      ['oauth'],
    ],
    [
      "OAuth2's private key",
      {
        auth: {
          type: 'OAuth2ClientCredentials',
          oauth2: { clientAuthentication: 'PrivateKeyJwt', privateKeySecretRef: { name: 'key', key: 'k' } },
        },
      },
      ['key'],
    ],
    [
      'signing and its previous key, apart from auth',
      {
        auth: { secretRef: { name: 'a', key: 't' } },
        signing: { secretRef: { name: 'b', key: 'k' }, previousSecretRef: { name: 'c', key: 'p' } },
      },
      ['a', 'b', 'c'],
    ],
    [
      'spec.tls: the client certificate and a CA bundle of kind Secret',
      { tls: { clientCertificateSecretRef: { name: 'cert' }, caBundleRef: { kind: 'Secret', name: 'ca', key: 'ca.crt' } } },
      ['cert', 'ca'],
    ],
    ['a CA bundle from a ConfigMap is not a Secret', { tls: { caBundleRef: { kind: 'ConfigMap', name: 'ca', key: 'ca.crt' } } }, []],
    [
      "a destination's credentials",
      { destination: { type: 'NATS', nats: { servers: ['nats://n:4222'], subject: 's', tokenSecretRef: { name: 'nats', key: 't' } } } },
      ['nats'],
    ],
  ])('%s', (_what, spec, names) => {
    expect([...secretNamesOf(spec)].sort()).toEqual([...names].sort());
  });
});

// The ConfigMaps it reads: a CA bundle of kind ConfigMap (docs/endpoints-tls.md); a change reconciles it too.
describe('configMapNamesOf', () => {
  it.each<[string, unknown, string[]]>([
    ['none', { source: 's', url: 'http://x/h', auth: { secretRef: { name: 'a', key: 't' } } }, []],
    ['a CA bundle of kind ConfigMap', { tls: { caBundleRef: { kind: 'ConfigMap', name: 'ca', key: 'ca.crt' } } }, ['ca']],
    ['a CA bundle of kind Secret is not one', { tls: { caBundleRef: { kind: 'Secret', name: 'ca', key: 'ca.crt' } } }, []],
    ['nor one without a kind (Secret, the default)', { tls: { caBundleRef: { name: 'ca', key: 'ca.crt' } } }, []],
  ])('%s', (_what, spec, names) => {
    expect([...configMapNamesOf(spec)].sort()).toEqual(names);
  });
});
