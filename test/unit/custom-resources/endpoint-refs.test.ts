import { describe, expect, it } from 'vitest';
import { endpointRefs } from '../../../src/custom-resources/endpoint-refs.js';

describe('endpointRefs: the Secrets and ConfigMaps an endpoint reads (a change to one reconciles it)', () => {
  it.each([
    [{ source: 's', url: 'http://x' }, [], []],
    [{ auth: { type: 'Bearer', secretRef: { name: 'tok', key: 't' } } }, ['tok'], []],
    [
      { signing: { type: 'StandardWebhooks', secretRef: { name: 'k1', key: 'k' }, previousSecretRef: { name: 'k0', key: 'k' } } },
      ['k0', 'k1'],
      [],
    ],
    [
      { tls: { clientCertificateSecretRef: { name: 'cert' }, caBundleRef: { kind: 'Secret', name: 'ca', key: 'ca.crt' } } },
      ['ca', 'cert'],
      [],
    ],
    [{ tls: { caBundleRef: { name: 'ca', key: 'ca.crt' } } }, ['ca'], []],
    [{ tls: { caBundleRef: { kind: 'ConfigMap', name: 'ca', key: 'ca.crt' } } }, [], ['ca']],
    [{ destination: { type: 'NATS', nats: { tokenSecretRef: { name: 'nats', key: 'token' } } } }, ['nats'], []],
    [{ destination: { type: 'RabbitMQ', rabbitMQ: { passwordSecretRef: { name: 'rabbit', key: 'password' } } } }, ['rabbit'], []],
    // a header named like a reference is not one
    [{ customHeaders: { secretRef: 'x' } }, [], []],
  ])('%j', (spec, secrets, configMaps) => {
    const refs = endpointRefs(spec);
    expect([...refs.secrets].sort()).toEqual(secrets);
    expect([...refs.configMaps].sort()).toEqual(configMaps);
  });
});
