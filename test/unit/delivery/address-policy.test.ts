import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/domain/errors.js';
import { createAddressPolicy, normalizeIp, parseCidr } from '../../../src/delivery/address-policy.js';

describe('parseCidr', () => {
  it.each([
    ['10.0.0.0/8', { address: '10.0.0.0', prefix: 8, family: 'ipv4' }],
    ['10.1.2.3', { address: '10.1.2.3', prefix: 32, family: 'ipv4' }],
    [' 192.168.0.0/16 ', { address: '192.168.0.0', prefix: 16, family: 'ipv4' }],
    ['0.0.0.0/0', { address: '0.0.0.0', prefix: 0, family: 'ipv4' }],
    ['fd00::/8', { address: 'fd00::', prefix: 8, family: 'ipv6' }],
    ['::1', { address: '::1', prefix: 128, family: 'ipv6' }],
  ])('%j -> %j', (value, expected) => {
    expect(parseCidr(value)).toEqual(expected);
  });

  it.each([
    ['example.com', /not an IPv4 or IPv6 address/],
    ['10.0.0.256/8', /not an IPv4 or IPv6 address/],
    ['10.0.0.0/33', /prefix length must be an integer 0\.\.32/],
    ['fd00::/129', /prefix length must be an integer 0\.\.128/],
    ['10.0.0.0/-1', /prefix length/],
    ['10.0.0.0/', /prefix length/],
    ['10.0.0.0/8.5', /prefix length/],
  ])('%j is a permanent invalid_config naming the entry and list', (value, why) => {
    let thrown: unknown;
    try {
      parseCidr(value, 'OUTBOUND_DENY_CIDRS');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({ kind: 'permanent', code: 'invalid_config' });
    expect((thrown as Error).message).toContain(JSON.stringify(value));
    expect((thrown as Error).message).toContain('OUTBOUND_DENY_CIDRS');
    expect((thrown as Error).message).toMatch(why);
  });
});

describe('createAddressPolicy', () => {
  const byDefault = createAddressPolicy();
  it.each([
    // instance metadata and link-local: refused
    ['169.254.169.254', false],
    ['169.254.0.1', false],
    ['::ffff:169.254.169.254', false],
    ['[::ffff:a9fe:a9fe]', false],
    ['fe80::1', false],
    ['fe80::1%eth0', false],
    ['fd00:ec2::254', false],
    ['100.100.100.200', false],
    ['64:ff9b::a9fe:a9fe', false],
    // in-cluster and loopback: allowed
    ['10.96.0.10', true],
    ['127.0.0.1', true],
    ['192.168.1.1', true],
    ['172.16.5.4', true],
    ['::1', true],
    ['[::1]', true],
    ['fd00:ec2::253', true],
    ['100.100.100.201', true],
    ['8.8.8.8', true],
    // not an address at all: never connect
    ['localhost', false],
    ['', false],
  ])('default policy: %s allowed=%s', (ip, allowed) => {
    expect(byDefault.isAllowed(ip)).toBe(allowed);
  });

  const configured = createAddressPolicy({ deny: ['10.0.0.0/8', '2001:db8::/32'], allow: ['10.1.0.0/16', '169.254.10.0/24'] });
  it.each([
    ['10.2.3.4', false],
    ['::ffff:10.2.3.4', false],
    ['10.1.2.3', true],
    ['169.254.10.5', true],
    ['169.254.169.254', false],
    ['2001:db8::1', false],
    ['2001:db9::1', true],
    ['11.0.0.1', true],
  ])('deny 10/8 and 2001:db8::/32, allow 10.1/16 and 169.254.10/24: %s allowed=%s', (ip, allowed) => {
    expect(configured.isAllowed(ip)).toBe(allowed);
  });

  it('a bad entry fails at construction, naming its list', () => {
    expect(() => createAddressPolicy({ allow: ['nope'] })).toThrow(/allow list/);
    expect(() => createAddressPolicy({ deny: ['1.2.3.4/40'] })).toThrow(/deny list/);
  });
});

describe('normalizeIp', () => {
  it.each([
    ['[::1]', '::1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['[fe80::1%25eth0]', 'fe80::1'],
    ['10.0.0.1', '10.0.0.1'],
  ])('%s -> %s', (ip, expected) => {
    expect(normalizeIp(ip)).toBe(expected);
  });
});
