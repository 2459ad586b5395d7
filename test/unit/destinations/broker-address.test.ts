import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../../src/delivery/address-policy.js';
import { hostOf, refusedBrokerHost } from '../../../src/destinations/broker-address.js';

describe('the host a broker client dials', () => {
  it.each([
    { address: 'kafka-0.kafka:9092', host: 'kafka-0.kafka' },
    { address: '10.0.0.7:9092', host: '10.0.0.7' },
    { address: '[fd00::7]:9092', host: 'fd00::7' },
    { address: 'fd00::7', host: 'fd00::7' },
    { address: 'nats://nats.messaging:4222', host: 'nats.messaging' },
    { address: 'kafka-0', host: 'kafka-0' },
  ])('$address: $host', ({ address, host }) => {
    expect(hostOf(address)).toBe(host);
  });
});

describe("the outbound address policy on a broker's hosts", () => {
  const policy = createAddressPolicy();
  const dns: Record<string, string[]> = { 'kafka.internal': ['10.0.0.7'], 'metadata.evil': ['10.0.0.8', '169.254.169.254'] };

  it.each([
    { name: 'an allowed address: no lookup', hosts: ['127.0.0.1', '10.0.0.7', 'fd00::7'], refused: null, lookups: [] },
    {
      name: 'a cloud-metadata address: refused, no lookup',
      hosts: ['169.254.169.254'],
      refused: /^address 169\.254\.169\.254 is blocked/,
      lookups: [],
    },
    { name: 'a name resolving to allowed addresses: looked up', hosts: ['kafka.internal'], refused: null, lookups: ['kafka.internal'] },
    {
      name: 'a name with one refused address among its addresses: refused',
      hosts: ['10.0.0.7', 'metadata.evil'],
      refused: /^address 169\.254\.169\.254 \(resolved from metadata\.evil\)/,
      lookups: ['metadata.evil'],
    },
    {
      name: 'a name that does not resolve now: left to the client (its connect fails, retried)',
      hosts: ['gone.internal'],
      refused: null,
      lookups: ['gone.internal'],
    },
    {
      name: 'a host named twice is looked up once',
      hosts: ['kafka.internal', 'kafka.internal'],
      refused: null,
      lookups: ['kafka.internal'],
    },
  ])('$name', async ({ hosts, refused, lookups }) => {
    const asked: string[] = [];
    const resolve = async (host: string): Promise<LookupAddress[]> => {
      asked.push(host);
      const addresses = dns[host];
      if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    const failure = await refusedBrokerHost(policy, hosts, resolve);
    if (refused === null) expect(failure).toBeNull();
    else expect(failure).toMatchObject({ code: 'address_blocked', detail: expect.stringMatching(refused) });
    expect(asked).toEqual(lookups);
  });
});
