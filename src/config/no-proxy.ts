import { BlockList, isIP } from 'node:net';
import { readCidr, type Cidr } from './cidr.js';

/**
 * DELIVERY_NO_PROXY: the hosts HTTP deliveries reach without the forward proxy. The entries curl
 * and Go's net/http read in NO_PROXY, minus ports: `*` (no host through the proxy), a name
 * (`partner.example` matches it and every subdomain; a leading `.` or `*.` is the same), an
 * address or a CIDR (matching a URL whose host is an address in it: names are not resolved for
 * this, as in curl and Go).
 */
export interface NoProxy {
  /** whether a URL's hostname (URL.hostname: IPv6 in brackets) goes direct */
  bypasses(hostname: string): boolean;
}

const NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/** One entry as the matcher reads it, or why it can not be read. */
type Entry = { kind: 'all' } | { kind: 'cidr'; cidr: Cidr } | { kind: 'name'; name: string };

function readEntry(entry: string): Entry | { problem: string } {
  const e = entry.trim().toLowerCase();
  if (e === '*') return { kind: 'all' };
  const literal = e.startsWith('[') && e.endsWith(']') ? e.slice(1, -1) : e;
  const slash = literal.indexOf('/');
  if (isIP(slash === -1 ? literal : literal.slice(0, slash)) !== 0) {
    const cidr = readCidr(literal);
    return 'problem' in cidr ? { problem: cidr.problem } : { kind: 'cidr', cidr };
  }
  const name = e.replace(/^\*?\./, '');
  if (name.includes(':')) return { problem: 'a port is not supported: name the host or domain only' };
  if (!NAME.test(name) || name.length > 253) return { problem: 'not a host name, domain, address or CIDR' };
  return { kind: 'name', name };
}

/** The problem of each entry that can not be read, as the loader names them. */
export function noProxyProblems(entries: readonly string[]): string[] {
  return entries.flatMap((e) => {
    const read = readEntry(e);
    return 'problem' in read ? [`invalid entry ${JSON.stringify(e)}: ${read.problem}`] : [];
  });
}

/** The matcher of a list whose entries the loader checked (an entry it can not read matches nothing). */
export function createNoProxy(entries: readonly string[]): NoProxy {
  let all = false;
  const names: string[] = [];
  const addresses = new BlockList();
  for (const entry of entries) {
    const read = readEntry(entry);
    if ('problem' in read) continue;
    if (read.kind === 'all') all = true;
    else if (read.kind === 'name') names.push(read.name);
    else addresses.addSubnet(read.cidr.address, read.cidr.prefix, read.cidr.family);
  }
  return {
    bypasses(hostname: string): boolean {
      if (all) return true;
      const host = (hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname).toLowerCase().replace(/\.$/, '');
      const version = isIP(host);
      if (version !== 0) return addresses.check(host, version === 4 ? 'ipv4' : 'ipv6');
      return names.some((n) => host === n || host.endsWith(`.${n}`));
    },
  };
}
