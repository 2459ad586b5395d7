import { BlockList, isIP } from 'node:net';
import { readCidr, type Cidr } from '../config/cidr.js';
import { permanent } from '../domain/errors.js';

/**
 * Refused unless explicitly allowed. Private ranges and loopback stay allowed: endpoints usually
 * live inside the cluster. What is refused is what an SSRF is after: instance metadata and
 * link-local services.
 */
export const DEFAULT_DENIED_CIDRS: readonly string[] = [
  '169.254.0.0/16', // IPv4 link-local, incl. 169.254.169.254 (AWS, GCP, Azure, OCI metadata)
  'fe80::/10', // IPv6 link-local
  'fd00:ec2::254/128', // AWS metadata over IPv6
  '100.100.100.200/32', // Alibaba Cloud metadata
  '64:ff9b::a9fe:0/112', // NAT64 form of 169.254.0.0/16 (IPv6-only clusters with DNS64)
];

export interface AddressPolicyOptions {
  /** extra CIDRs (or single addresses) to refuse, on top of DEFAULT_DENIED_CIDRS */
  deny?: readonly string[];
  /** CIDRs that are allowed even when a deny entry (default or configured) covers them */
  allow?: readonly string[];
}

export interface AddressPolicy {
  /** whether a connection to this IP address (v4, v6 or IPv4-mapped v6) may be made */
  isAllowed(ip: string): boolean;
}

/** "10.0.0.0/8", "fd00::/8" or a single address ("10.1.2.3" = /32). Throws a permanent AppError naming the bad entry. */
export function parseCidr(value: string, listName = 'CIDR list'): Cidr {
  const cidr = readCidr(value);
  if ('problem' in cidr) throw permanent('invalid_config', `invalid CIDR ${JSON.stringify(value)} in ${listName}: ${cidr.problem}`);
  return cidr;
}

export function createAddressPolicy(opts: AddressPolicyOptions = {}): AddressPolicy {
  const deny = toBlockList([...DEFAULT_DENIED_CIDRS, ...(opts.deny ?? [])], 'deny list');
  const allow = toBlockList(opts.allow ?? [], 'allow list');
  return {
    isAllowed(ip: string): boolean {
      const address = normalizeIp(ip);
      const version = isIP(address);
      // not an address at all: never connect
      if (version === 0) return false;
      const family = version === 4 ? 'ipv4' : 'ipv6';
      // BlockList also matches IPv4-mapped IPv6 (::ffff:a.b.c.d) against IPv4 rules
      if (allow.check(address, family)) return true;
      return !deny.check(address, family);
    },
  };
}

/** Strips URL brackets and an IPv6 zone id ("fe80::1%eth0"), which BlockList does not accept. */
export function normalizeIp(ip: string): string {
  let address = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const zone = address.indexOf('%');
  if (zone !== -1) address = address.slice(0, zone);
  return address;
}

function toBlockList(cidrs: readonly string[], listName: string): BlockList {
  const list = new BlockList();
  for (const entry of cidrs) {
    const cidr = parseCidr(entry, listName);
    list.addSubnet(cidr.address, cidr.prefix, cidr.family);
  }
  return list;
}
