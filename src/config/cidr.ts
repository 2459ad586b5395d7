import { isIP } from 'node:net';

export interface Cidr {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

/**
 * "10.0.0.0/8", "fd00::/8" or a single address ("10.1.2.3" = /32), or why it is none: the one
 * reading of a CIDR, for the loaders (which name every bad entry at once) and the features that
 * build address lists from them (delivery/address-policy.ts, ingest/client-address.ts).
 */
export function readCidr(value: string): Cidr | { problem: string } {
  const trimmed = value.trim();
  const slash = trimmed.indexOf('/');
  const address = slash === -1 ? trimmed : trimmed.slice(0, slash);
  const version = isIP(address);
  if (version === 0) return { problem: 'not an IPv4 or IPv6 address' };
  const max = version === 4 ? 32 : 128;
  let prefix = max;
  if (slash !== -1) {
    const bits = trimmed.slice(slash + 1);
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return { problem: `prefix length must be an integer 0..${max}` };
    prefix = Number(bits);
  }
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}
