import { describe, expect, it } from 'vitest';
import { createNoProxy, noProxyProblems } from '../../../src/config/no-proxy.js';

describe('DELIVERY_NO_PROXY: which hosts go around the forward proxy', () => {
  it.each([
    // entries, URL.hostname, bypasses
    [[], 'partner.example', false],
    [['*'], 'partner.example', true],
    [['*'], '[::1]', true],
    [['partner.example'], 'partner.example', true],
    [['partner.example'], 'api.partner.example', true],
    [['partner.example'], 'PARTNER.example', true],
    [['partner.example'], 'partner.example.', true],
    [['partner.example'], 'notpartner.example', false],
    [['partner.example'], 'partner.example.org', false],
    [['.partner.example'], 'api.partner.example', true],
    [['.partner.example'], 'partner.example', true],
    [['*.partner.example'], 'api.partner.example', true],
    [['svc', 'cluster.local'], 'orders.payments.svc', true],
    [['svc', 'cluster.local'], 'orders.payments.svc.cluster.local', true],
    [['svc', 'cluster.local'], 'orders.example', false],
    [['10.0.0.0/8'], '10.96.0.12', true],
    [['10.0.0.0/8'], '11.0.0.1', false],
    // names are not resolved for this, as in curl and Go: an address entry matches an address URL only
    [['127.0.0.1'], 'localhost', false],
    [['127.0.0.1'], '127.0.0.1', true],
    [['::1'], '[::1]', true],
    [['[::1]'], '[::1]', true],
    [['fd00::/8'], '[fd12::1]', true],
    [['fd00::/8'], '[fe80::1]', false],
    [[' Partner.Example ', 'x'], 'api.partner.example', true],
  ])('%j, %s -> %s', (entries, hostname, bypasses) => {
    expect(noProxyProblems(entries)).toEqual([]);
    expect(createNoProxy(entries).bypasses(hostname)).toBe(bypasses);
  });

  it.each([
    ['partner.example:443', 'a port is not supported: name the host or domain only'],
    ['10.0.0.0/33', 'prefix length must be an integer 0..32'],
    ['http://partner.example', 'a port is not supported: name the host or domain only'],
    ['partner example', 'not a host name, domain, address or CIDR'],
    ['-bad.example', 'not a host name, domain, address or CIDR'],
  ])('%s is named as a problem', (entry, problem) => {
    expect(noProxyProblems([entry, 'fine.example'])).toEqual([`invalid entry ${JSON.stringify(entry)}: ${problem}`]);
  });
});
