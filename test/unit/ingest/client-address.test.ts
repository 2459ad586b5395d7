import { describe, expect, it } from 'vitest';
import { createClientAddressResolver, forwardedFor } from '../../../src/ingest/client-address.js';

// The proxies of a typical installation: the Ingress controller's pods (10.0.0.0/8) and a balancer
// in front of it (192.0.2.10); IPv6 pods too.
const resolve = createClientAddressResolver(['10.0.0.0/8', '192.0.2.10', 'fd00::/8']);

describe('createClientAddressResolver: the rightmost untrusted hop, from trusted peers only', () => {
  it.each([
    {
      name: 'no proxy configured: the peer, headers ignored',
      trusted: [],
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': '203.0.113.9' },
      want: { address: '10.1.1.1', from: 'peer' },
    },
    {
      name: 'an untrusted peer forging X-Forwarded-For: its own address',
      peer: '198.51.100.7',
      headers: { 'x-forwarded-for': '203.0.113.9' },
      want: { address: '198.51.100.7', from: 'peer' },
    },
    {
      name: 'an untrusted peer forging Forwarded: its own address',
      peer: '198.51.100.7',
      headers: { forwarded: 'for=203.0.113.9' },
      want: { address: '198.51.100.7', from: 'peer' },
    },
    { name: 'a trusted peer without headers: the peer', peer: '10.1.1.1', headers: {}, want: { address: '10.1.1.1', from: 'peer' } },
    {
      name: 'one proxy: the address it appended',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': '203.0.113.9' },
      want: { address: '203.0.113.9', from: 'x-forwarded-for' },
    },
    {
      name: "a client's forged hops to the left of the proxy's: the proxy's (rightmost untrusted)",
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': '1.2.3.4, 5.6.7.8, 203.0.113.9' },
      want: { address: '203.0.113.9', from: 'x-forwarded-for' },
    },
    {
      name: 'two trusted proxies: walked over both',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': '1.2.3.4, 203.0.113.9, 192.0.2.10' },
      want: { address: '203.0.113.9', from: 'x-forwarded-for' },
    },
    {
      name: 'a forged garbage hop left of the client: not walked over, not a problem',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': 'garbage, 203.0.113.9' },
      want: { address: '203.0.113.9', from: 'x-forwarded-for' },
    },
    {
      name: 'repeated header lines (an array): read as one list',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': ['1.2.3.4', '203.0.113.9'] },
      want: { address: '203.0.113.9', from: 'x-forwarded-for' },
    },
    {
      name: 'a hop with a port',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': '203.0.113.9:4711' },
      want: { address: '203.0.113.9', from: 'x-forwarded-for' },
    },
    {
      name: 'an IPv6 client',
      peer: 'fd00::5',
      headers: { 'x-forwarded-for': '2001:DB8::1' },
      want: { address: '2001:db8::1', from: 'x-forwarded-for' },
    },
    {
      name: 'an IPv4-mapped peer is its IPv4 address',
      peer: '::ffff:10.1.1.1',
      headers: { 'x-forwarded-for': '203.0.113.9' },
      want: { address: '203.0.113.9', from: 'x-forwarded-for' },
    },
    {
      name: 'every hop trusted: the leftmost',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': '10.2.2.2, 10.3.3.3' },
      want: { address: '10.2.2.2', from: 'x-forwarded-for' },
    },
    {
      name: 'Forwarded, one proxy',
      peer: '10.1.1.1',
      headers: { forwarded: 'for=203.0.113.9;proto=https' },
      want: { address: '203.0.113.9', from: 'forwarded' },
    },
    {
      name: 'Forwarded, quoted IPv6 with port, behind a trusted balancer',
      peer: '10.1.1.1',
      headers: { forwarded: 'for=1.2.3.4, for="[2001:db8::1]:4711";proto=https, for=192.0.2.10' },
      want: { address: '2001:db8::1', from: 'forwarded' },
    },
    {
      name: 'malformed: the hop the proxy wrote is not an address',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': 'unknown' },
      want: { address: '10.1.1.1', from: 'malformed' },
    },
    {
      name: 'malformed: an empty header',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': '' },
      want: { address: '10.1.1.1', from: 'malformed' },
    },
    {
      name: 'malformed: Forwarded that does not parse',
      peer: '10.1.1.1',
      headers: { forwarded: 'for="203.0.113.9' },
      want: { address: '10.1.1.1', from: 'malformed' },
    },
    {
      name: 'malformed: an obfuscated Forwarded node',
      peer: '10.1.1.1',
      headers: { forwarded: 'for=_hidden' },
      want: { address: '10.1.1.1', from: 'malformed' },
    },
    {
      name: 'both headers agreeing: that address',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': '203.0.113.9', forwarded: 'for=203.0.113.9' },
      want: { address: '203.0.113.9', from: 'x-forwarded-for' },
    },
    {
      name: 'a client passing Forwarded through a proxy that writes X-Forwarded-For: the peer, never the forged address',
      peer: '10.1.1.1',
      headers: { 'x-forwarded-for': '203.0.113.9', forwarded: 'for=198.51.100.1' },
      want: { address: '10.1.1.1', from: 'conflicting' },
    },
  ])('$name', ({ trusted, peer, headers, want }) => {
    const r = trusted ? createClientAddressResolver(trusted) : resolve;
    expect(r(peer, headers)).toEqual(want);
  });

  it('names a bad entry of INGEST_TRUSTED_PROXIES', () => {
    expect(() => createClientAddressResolver(['10.0.0.0/8', '10.0.0.0/33'])).toThrow(
      /invalid CIDR "10.0.0.0\/33" in INGEST_TRUSTED_PROXIES/,
    );
  });
});

describe('forwardedFor: the for= of each element of an RFC 7239 Forwarded header', () => {
  it.each([
    { value: 'for=192.0.2.60;proto=http;by=203.0.113.43', want: ['192.0.2.60'] },
    { value: 'For="[2001:db8:cafe::17]:4711"', want: ['[2001:db8:cafe::17]:4711'] },
    { value: 'for=192.0.2.43, for=198.51.100.17', want: ['192.0.2.43', '198.51.100.17'] },
    { value: 'proto=https, for=1.2.3.4', want: [undefined, '1.2.3.4'] },
    { value: 'for="a\\"b"', want: ['a"b'] },
    { value: 'for=1.2.3.4 junk', want: null },
    { value: 'for', want: null },
  ])('$value', ({ value, want }) => {
    expect(forwardedFor(value)).toEqual(want);
  });
});
